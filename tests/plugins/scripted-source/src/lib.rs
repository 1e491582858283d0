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

xpuprof_sdk::plugin_config! {
    /// The `[source.scripted]` table.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct ScriptedConfig {
        /// how many times to replay the launch part of the script
        pub repeat: u64 = 1, min(1);
    }
}

/// The scripted source.
#[derive(Debug)]
pub struct Scripted {
    emitter: Emitter,
    repeat: u64,
}

impl Source for Scripted {
    fn info() -> PluginInfo {
        PluginInfo {
            name: "scripted",
            version: env!("CARGO_PKG_VERSION"),
            description: "test double: emits a fixed, deterministic GPU session (no hardware needed)",
            config_keys: ScriptedConfig::schema().into_keys(),
            capabilities: vec![],
        }
    }

    fn create(ctx: CreateContext) -> PluginResult<Self> {
        let repeat = ctx.config.typed::<ScriptedConfig>()?.repeat;
        Ok(Self { emitter: ctx.emitter, repeat })
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
