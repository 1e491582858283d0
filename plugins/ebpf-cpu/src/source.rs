//! The `Source` implementation: checks, the recording thread's lifecycle.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::thread::JoinHandle;

use xpuprof_sdk::{
    CreateContext, Emitter, Logger, MachineCheck, PluginError, PluginInfo, PluginResult, Source,
};

use crate::collector::{self, Job};
use crate::config::Config;
use crate::sys;

/// The `ebpf` source plugin.
#[derive(Debug)]
pub struct EbpfSource {
    cfg: Config,
    command: Vec<String>,
    log: Logger,
    emitter: Option<Emitter>,
    running: Option<Running>,
}

#[derive(Debug)]
struct Running {
    stop: Arc<AtomicBool>,
    thread: JoinHandle<Option<Emitter>>,
}

impl EbpfSource {
    /// Takes what a detached emitter collected (tests; see `Emitter::detached`).
    pub fn take_buffer(&mut self) -> Vec<u8> {
        self.emitter.as_mut().map(Emitter::take_buffer).unwrap_or_default()
    }

    fn spawn(&mut self, pid: u32, emitter: Emitter) -> PluginResult<()> {
        let stop = Arc::new(AtomicBool::new(false));
        let job = Job {
            cfg: self.cfg.clone(),
            pid,
            command: self.command.clone(),
            emitter,
            log: self.log,
            stop: stop.clone(),
        };
        let (tx, rx) = mpsc::sync_channel(1);
        let thread = std::thread::Builder::new()
            .name("xpuprof-ebpf".into())
            .spawn(move || collector::run(job, tx))
            .map_err(|e| PluginError::new(format!("failed to start the eBPF recording thread: {e}")))?;
        match rx.recv() {
            Ok(Ok(())) => {
                self.running = Some(Running { stop, thread });
                Ok(())
            }
            Ok(Err(msg)) => {
                self.emitter = thread.join().ok().flatten();
                Err(PluginError::new(msg))
            }
            Err(_) => {
                let _ = thread.join();
                Err(PluginError::new("failed to start the eBPF source: its recording thread panicked"))
            }
        }
    }
}

impl Source for EbpfSource {
    fn info() -> PluginInfo {
        crate::info()
    }

    fn machine_checks() -> Vec<MachineCheck> {
        crate::machine::checks()
    }

    /// CPU stacks are wanted in every profile: run whenever the machine allows it.
    fn default_source() -> bool {
        true
    }

    fn create(ctx: CreateContext) -> PluginResult<Self> {
        Ok(Self {
            cfg: Config::from_plugin_config(&ctx.config, &ctx.session.sources)?,
            command: ctx.session.command.clone(),
            log: ctx.log,
            emitter: Some(ctx.emitter),
            running: None,
        })
    }

    fn start(&mut self, pid: u32) -> PluginResult<()> {
        sys::check_privileges()?;
        sys::check_btf()?;
        let emitter = self.emitter.take().unwrap_or_else(Emitter::detached);
        self.spawn(pid, emitter)
    }

    fn stop(&mut self) -> PluginResult<()> {
        let Some(run) = self.running.take() else { return Ok(()) };
        run.stop.store(true, Ordering::Release);
        match run.thread.join() {
            Ok(emitter) => {
                self.emitter = emitter;
                Ok(())
            }
            Err(_) => Err(PluginError::new("failed to stop the eBPF source: its recording thread panicked")),
        }
    }
}

impl Drop for EbpfSource {
    fn drop(&mut self) {
        let _ = self.stop();
    }
}
