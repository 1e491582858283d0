//! Frozen copy of the `scripted` test source as it was at xpuprof-sdk 0.1.0, built against the
//! frozen SDK 0.1.0 (`tests/abi/sdk-0.1`); only its name differs, `frozen-scripted`.
//!
//! `scripted`: a test-double source plugin (no hardware) that emits a fixed, deterministic
//! session through the real plugin ABI, so the host, the correlator and every sink can be
//! tested end to end on machines without a GPU.
//!
//! The script (see [`script`]): one process with two threads, one test GPU with two streams,
//! launch sites with stacks, a kernel launch, a graph launch that runs three kernels under one
//! correlation id (one-to-many), a kernel whose launch stack arrives after it, copies both
//! ways, a memset, allocations (one never freed), a kernel with a correlation id nothing
//! matches, on- and off-CPU samples, a marker, a range, a counter and a loss. `repeat = N`
//! replays the launch part N times with shifted timestamps (for benchmarks).

mod script;

use xpuprof_sdk::prelude::*;

/// The scripted source.
#[derive(Debug)]
pub struct Scripted {
    emitter: Emitter,
    repeat: u64,
}

impl Source for Scripted {
    fn info() -> PluginInfo {
        PluginInfo {
            name: "frozen-scripted",
            version: env!("CARGO_PKG_VERSION"),
            description: "test double: emits a fixed, deterministic GPU session (no hardware needed)",
            config_keys: vec![ConfigKey::new(
                "repeat",
                ConfigType::Integer,
                "1",
                "how many times to replay the launch part of the script",
            )],
            capabilities: vec![],
        }
    }

    fn create(ctx: CreateContext) -> PluginResult<Self> {
        let repeat = ctx.config.integer("repeat", 1)?;
        if repeat < 1 {
            return Err(PluginError::new(format!("`repeat` must be at least 1, got {repeat}")));
        }
        Ok(Self { emitter: ctx.emitter, repeat: repeat as u64 })
    }

    fn start(&mut self, _pid: u32) -> PluginResult<()> {
        script::emit(&mut self.emitter, self.repeat);
        self.emitter.flush();
        Ok(())
    }

    fn stop(&mut self) -> PluginResult<()> {
        self.emitter.flush();
        Ok(())
    }
}

xpuprof_sdk::export_plugin!(source: Scripted);
