//! `xpuprof attach --tree`: processes that become CUDA processes after the attach (a launcher's
//! workers, started later or still importing their framework at the attach) get the agent too.
//!
//! A thread looks at the tree every [`POLL`]. A descendant not handled yet is taken once it maps
//! a CUDA runtime (`libcudart`: a framework imported, CUDA not necessarily initialised) or the
//! driver (`libcuda`): the injector calls the agent's `xpuprof_cupti_follow` in it, which attaches
//! late when CUDA is initialised there and otherwise arms the process, so the driver starts the
//! agent at its `cuInit` and every launch is recorded (see the agent's `follow` module). A process
//! that maps the agent already is left alone: a fork of a recorded process (a data-loader worker)
//! or a child that inherited an armed environment.
//!
//! What is covered: a child seen before its `cuInit` (typical of Python workers, whose imports
//! take seconds) is recorded from its first launch; one that initialises CUDA within a poll of
//! its start (a native program that links the runtime statically and calls it at once) from the
//! late attach on, about [`POLL`] plus the injection after its `cuInit`.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use xpuprof_inject::{inject, Arg, InjectError, Request};
use xpuprof_sdk::Logger;

/// How often the tree is looked at.
pub const POLL: Duration = Duration::from_millis(100);
/// How often a process whose threads were all busy in the loader (or woke up) is tried again.
pub const RETRIES: u32 = 50;
/// The agent's function for processes found after the attach.
pub const FOLLOW_SYMBOL: &str = "xpuprof_cupti_follow";

/// What the follower needs to load and start the agent.
#[derive(Debug, Clone)]
pub struct Target {
    /// The attached process, root of the tree.
    pub root: u32,
    /// The agent library.
    pub agent: PathBuf,
    /// The session's socket.
    pub socket: PathBuf,
    /// The agent's options.
    pub opts: String,
}

/// The running follower; stopped by [`Follower::stop`] or on drop.
#[derive(Debug)]
pub struct Follower {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Follower {
    /// Starts following the tree of `target.root`; `handled` are the processes the attach
    /// itself took (or chose to skip).
    pub fn start(target: Target, handled: Vec<u32>, log: Logger) -> std::io::Result<Self> {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let thread = std::thread::Builder::new()
            .name("xpuprof-cupti-follow".into())
            .spawn(move || run(&target, handled.into_iter().collect(), &flag, &log))?;
        Ok(Self { stop, thread: Some(thread) })
    }

    /// Stops following (waits for an injection under way).
    pub fn stop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Follower {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Whether `pid` maps a CUDA runtime or the driver.
fn uses_cuda(pid: u32) -> bool {
    xpuprof_inject::maps_file(pid, |path| {
        let name = path.rsplit('/').next().unwrap_or(path);
        name.starts_with("libcuda.so") || name.starts_with("libcudart")
    })
    .unwrap_or(false)
}

fn run(t: &Target, mut handled: HashSet<u32>, stop: &AtomicBool, log: &Logger) {
    let req = Request::new(&t.agent)
        .call(FOLLOW_SYMBOL, vec![Arg::Text(t.socket.display().to_string()), Arg::Text(t.opts.clone())]);
    let mut tries: HashMap<u32, u32> = HashMap::new();
    while !stop.load(Ordering::SeqCst) && t.socket.exists() {
        for p in crate::attach::with_descendants(t.root) {
            if stop.load(Ordering::SeqCst) || handled.contains(&p) {
                continue;
            }
            if xpuprof_inject::is_loaded(p, &t.agent).unwrap_or(false) {
                handled.insert(p);
                continue;
            }
            if !uses_cuda(p) {
                continue;
            }
            match inject(p, &req) {
                // Every thread was inside the dynamic loader (a framework's import loads many
                // libraries) or woke up: nothing was touched; try again at the next look.
                Err(InjectError::NoThread { .. }) if *tries.entry(p).or_default() < RETRIES => {
                    *tries.entry(p).or_default() += 1;
                    continue;
                }
                result => {
                    handled.insert(p);
                    report(p, result, log);
                }
            }
        }
        std::thread::sleep(POLL);
    }
}

/// Says what became of process `p`'s injection.
fn report(p: u32, result: Result<xpuprof_inject::Injected, InjectError>, log: &Logger) {
    match result {
        Ok(done) if done.returned == Some(0) => {
            log.info(&format!("cupti: loaded the agent into process {p}, started after the attach"))
        }
        Ok(done) => log.warn(&format!(
            "cupti: the agent in process {p} (started after the attach) could not start (returned {:?}); \
             that process is not recorded",
            done.returned.map(|v| v as i64)
        )),
        Err(e) => log.warn(&format!(
            "cupti: failed to load the agent into process {p}, started after the attach: {e}"
        )),
    }
}
