//! `scripted`: a test-double source plugin (no hardware) that emits a fixed, deterministic
//! session through the real plugin ABI, so the host, the correlator and every sink can be
//! tested end to end on machines without a GPU.
//!
//! The script (see [`script`]): one process with two threads, one test GPU with two streams,
//! launch sites with stacks, a kernel launch, a graph launch that runs three kernels under one
//! correlation id (one-to-many), a kernel whose launch stack arrives after it, copies both
//! ways, a memset, allocations (one never freed), a kernel with a correlation id nothing
//! matches, on- and off-CPU samples, a marker, a range, a counter and a loss. `repeat = N`
//! replays the launch part N times with shifted timestamps (for benchmarks); `devices = D` runs
//! it on D simulated devices at once (each round: 6 launches per device); `rate = R` paces the
//! rounds at R launches per second per device on a thread of the source (see [`paced`]), as a
//! node's agents would deliver them, dropping and counting what an agent's full buffer would.
//! With `define_target`, `collectives = N` also has the target run N all-reduces as its rank of a
//! job (rank 1 late at every tenth, see `collectives.rs`), for the merge's and the summary's
//! tests of collectives across ranks.

mod collectives;
mod paced;
mod script;

use xpuprof_sdk::prelude::*;

xpuprof_sdk::plugin_config! {
    /// The `[source.scripted]` table.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct ScriptedConfig {
        /// how many times to replay the launch part of the script
        pub repeat: u64 = 1, min(1);
        /// how many simulated devices run each round (each its own device id and streams)
        pub devices: u32 = 1, min(1), max(64);
        /// kernel launches per second per device (0: as fast as the host takes them)
        pub rate: u64 = 0;
        /// ms after start at which a marker capture window opens, as a GPU agent reports one
        /// (with window_close_ms; 0: none)
        pub window_open_ms: u64 = 0;
        /// ms after start at which that marker window closes (0: no marker window)
        pub window_close_ms: u64 = 0;
        /// also define the target process by its real pid, as a source that follows the target
        /// does, so the host reads its rank from its environment
        pub define_target: bool = false;
        /// all-reduces the target runs as its rank of a job (its rank is RANK of this
        /// environment; see collectives.rs), on a scripted GPU of its own (0: none)
        pub collectives: u32 = 0;
        /// the rank that arrives late at every tenth all-reduce
        pub slow_rank: u32 = 1;
        /// stamp the collectives as a host whose session clock reads this many ns less
        pub clock_behind_ns: u64 = 0;
    }
}

/// The scripted source.
#[derive(Debug)]
pub struct Scripted {
    emitter: Option<Emitter>,
    config: ScriptedConfig,
    paced: Option<paced::Paced>,
    marker: Option<std::thread::JoinHandle<()>>,
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
        let config = ctx.config.typed::<ScriptedConfig>()?;
        let marker = None;
        Ok(Self { emitter: Some(ctx.emitter), config, paced: None, marker })
    }

    fn start(&mut self, pid: u32) -> PluginResult<()> {
        let c = &self.config;
        if c.window_close_ms > c.window_open_ms {
            if let Some(e) = &self.emitter {
                self.marker = Some(marker_window(e.clone(), pid, c.window_open_ms, c.window_close_ms));
            }
        }
        if c.define_target {
            if let Some(e) = self.emitter.as_mut() {
                define_target(e, pid);
                if c.collectives > 0 {
                    let rank = std::env::var("RANK").ok().and_then(|r| r.parse().ok()).unwrap_or(0);
                    let (slow_rank, count, behind_ns) = (c.slow_rank, c.collectives, c.clock_behind_ns);
                    collectives::Job { pid, rank, slow_rank, count, behind_ns }.emit(e);
                }
            }
        }
        if c.rate > 0 {
            if let Some(e) = self.emitter.take() {
                self.paced = Some(paced::Paced::start(e, c.repeat, c.devices, c.rate)?);
            }
        } else if let Some(e) = self.emitter.as_mut() {
            script::emit(e, c.repeat, c.devices);
            e.flush();
        }
        Ok(())
    }

    fn stop(&mut self) -> PluginResult<()> {
        if let Some(m) = self.marker.take() {
            let _ = m.join();
        }
        if let Some(p) = self.paced.take() {
            p.stop();
        }
        if let Some(e) = self.emitter.as_mut() {
            e.flush();
        }
        Ok(())
    }
}

/// Opens a marker capture window `open_ms` after now and closes it at `close_ms`, reported as a
/// marker-driven source does: the window record with `end` 0 when it opens, complete when it
/// closes, each flushed at once.
fn marker_window(mut e: Emitter, pid: u32, open_ms: u64, close_ms: u64) -> std::thread::JoinHandle<()> {
    let t0 = std::time::Instant::now();
    std::thread::spawn(move || {
        let at = |ms: u64| {
            std::thread::sleep(
                (t0 + std::time::Duration::from_millis(ms))
                    .saturating_duration_since(std::time::Instant::now()),
            )
        };
        at(open_ms);
        let open =
            CaptureWindow::default().start(xpuprof_sdk::clock::now_ns()).opener(WindowOpener::Nvtx).pid(pid);
        e.emit(&Record::Window(open));
        e.flush();
        at(close_ms);
        e.emit(&Record::Window(open.end(xpuprof_sdk::clock::now_ns())));
        e.flush();
    })
}

xpuprof_sdk::export_plugin!(source: Scripted);

/// Defines the target process (its real pid, a command of its own) with one range and one CPU
/// sample on its main thread, so it has a track and a profile, and flushes at once, while the
/// target is surely alive.
fn define_target(e: &mut Emitter, pid: u32) {
    let (command, step) = (StrId(1_000_000), StrId(1_000_001));
    e.emit(&Record::Str(StrDef::new(command, "scripted-target")));
    e.emit(&Record::Str(StrDef::new(step, "target step")));
    e.emit(&Record::Process(ProcessDef::default().pid(pid).command(command)));
    let range = Annotation::default().pid(pid).tid(pid).start(1_000_000_000).end(1_000_500_000);
    e.emit(&Record::Range(range.name(step)));
    let sample = CpuSample::default().pid(pid).tid(pid).time(1_000_100_000).weight(1_000_000);
    e.emit(&Record::CpuSample(sample));
    e.flush();
}
