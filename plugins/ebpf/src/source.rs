//! The `Source` implementation: checks, the recording thread's lifecycle, capture windows.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::thread::JoinHandle;
use std::time::Duration;

use xpuprof_sdk::{
    CreateContext, Emitter, Logger, MachineCheck, PluginError, PluginInfo, PluginResult, Source,
};

use crate::capture::Control;
use crate::collector::{self, Job};
use crate::config::Config;
use crate::{proctree, sys};

/// How long the host's thread waits for the recording thread to open or close a window (it
/// answers within one ring-buffer poll, 10 ms, plus the time to attach the samplers).
const WINDOW_REPLY: Duration = Duration::from_secs(20);

/// The `ebpf` source plugin.
#[derive(Debug)]
pub struct EbpfSource {
    cfg: Config,
    command: Vec<String>,
    log: Logger,
    emitter: Option<Emitter>,
    running: Option<Running>,
    /// Whether a capture window is open (before `start`: whether one opens with it).
    capture: bool,
}

#[derive(Debug)]
struct Running {
    stop: Arc<AtomicBool>,
    control: mpsc::SyncSender<Control>,
    thread: JoinHandle<Option<Emitter>>,
}

/// What to record: a target xpuprof started, or a running process it attaches to.
struct Target {
    pid: u32,
    adopted: Vec<(u32, u32)>,
    follow_forks: bool,
    command: Vec<String>,
}

impl EbpfSource {
    /// Takes what a detached emitter collected (tests; see `Emitter::detached`).
    pub fn take_buffer(&mut self) -> Vec<u8> {
        self.emitter.as_mut().map(Emitter::take_buffer).unwrap_or_default()
    }

    fn spawn(&mut self, target: Target, emitter: Emitter) -> PluginResult<()> {
        let stop = Arc::new(AtomicBool::new(false));
        let (control, control_rx) = mpsc::sync_channel(4);
        let job = Job {
            cfg: self.cfg.clone(),
            pid: target.pid,
            adopted: target.adopted,
            follow_forks: target.follow_forks,
            capture: self.capture,
            control: control_rx,
            command: target.command,
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
                self.running = Some(Running { stop, control, thread });
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
            capture: !ctx.session.start_paused,
        })
    }

    fn start(&mut self, pid: u32) -> PluginResult<()> {
        sys::check_privileges()?;
        sys::check_btf()?;
        let emitter = self.emitter.take().unwrap_or_else(Emitter::detached);
        let target = Target { pid, adopted: Vec::new(), follow_forks: true, command: self.command.clone() };
        self.spawn(target, emitter)
    }

    fn attach(&mut self, pid: u32, tree: bool) -> PluginResult<()> {
        sys::check_privileges()?;
        sys::check_btf()?;
        let Some(ppid) = proctree::parent_of(pid) else {
            return Err(PluginError::new(format!("failed to attach to process {pid}: no such process")));
        };
        let mut adopted = vec![(pid, ppid)];
        if tree {
            let all = proctree::tree(pid);
            adopted.extend(all.into_iter().skip(1).filter_map(|p| Some((p, proctree::parent_of(p)?))));
        }
        let command = vec![proctree::command_of(pid)];
        let emitter = self.emitter.take().unwrap_or_else(Emitter::detached);
        self.spawn(Target { pid, adopted, follow_forks: tree, command }, emitter)
    }

    fn set_capture(&mut self, on: bool) -> PluginResult<()> {
        let Some(run) = &self.running else {
            self.capture = on;
            return Ok(());
        };
        let (reply, answer) = mpsc::sync_channel(1);
        let what = if on { "open" } else { "close" };
        run.control.send(Control { on, reply }).map_err(|_| {
            PluginError::new(format!("failed to {what} the capture window: the recording ended"))
        })?;
        match answer.recv_timeout(WINDOW_REPLY) {
            Ok(Ok(())) => {
                self.capture = on;
                Ok(())
            }
            Ok(Err(e)) => Err(PluginError::new(format!("failed to {what} the capture window: {e}"))),
            Err(_) => Err(PluginError::new(format!(
                "failed to {what} the capture window: the recording thread did not answer within {}s",
                WINDOW_REPLY.as_secs()
            ))),
        }
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
