//! The host side of an in-target agent, shared by every agent-based source (CUPTI, Level Zero,
//! ROCm): a Unix socket in a private folder, one connection per process of the session
//! (children included: they inherit the environment), one reader thread per connection, and
//! one decoder thread that owns the source's [`StreamDecoder`] and its [`Emitter`].
//!
//! A source plugin keeps only what is its own: the agent's name and how it is injected
//! ([`AgentLocator`], [`preload`]), the environment variables its agent reads, the decoder and
//! its report, as an [`AgentBackend`]; [`AgentSource`] is then its whole `Source`.
//! A decoder of the kit's stream holds an [`AgentDecoder`] and implements [`KitDecoder`], which
//! makes it a [`StreamDecoder`].
//!
//! ```no_run
//! # use xpuprof_sdk::prelude::*;
//! # use xpuprof_toolbox::agent_host::{AgentHost, StreamDecoder};
//! # struct MyDecoder;
//! # impl StreamDecoder for MyDecoder {
//! #     type Stats = u64;
//! #     fn feed(&mut self, _: u64, b: &[u8], _: &mut Emitter) -> usize { b.len() }
//! #     fn end(&mut self, _: u64, _: &mut Emitter) {}
//! #     fn finish(self, _: &mut Emitter) -> u64 { 0 }
//! # }
//! # fn demo(env: &mut TargetEnv, emitter: Emitter) -> Result<(), xpuprof_toolbox::agent_host::AgentHostError> {
//! let mut host = AgentHost::<MyDecoder>::new("my-gpu", "MyGPU", Logger::stderr());
//! let socket = host.listen()?; // in `prepare`
//! env.set("MY_AGENT_SOCKET", socket.display().to_string());
//! host.start(MyDecoder, emitter)?; // in `start`
//! let _stats = host.stop()?; // in `stop`: every connection ended and was decoded
//! # Ok(()) }
//! ```

mod compile;
mod control;
mod decoder;
mod kit_conn;
mod kit_decoder;
mod locate;
mod source;
mod stacks;
mod threads;

use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Sender};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use xpuprof_sdk::{Emitter, Logger, PluginError};

pub use compile::{CompileFrames, COMPILE_MARKER};
pub use decoder::{parent_of, AgentConn, AgentCounts, AgentDecoder, Conn, Step};
pub use kit_decoder::KitDecoder;
pub use locate::{loadable, own_dir, preload, AgentLocator};
pub use source::{agent_opts, AgentBackend, AgentDescriptor, AgentSource};
pub use stacks::AgentStacks;
use threads::Event;

/// How long `stop` waits for connections still open after the target exited (a daemon child).
pub const LINGER: Duration = Duration::from_secs(15);

/// What a source does with its agents' byte streams. It runs on the decoder thread only.
pub trait StreamDecoder: Send + 'static {
    /// The counters [`AgentHost::stop`] returns.
    type Stats: Send + 'static;

    /// Decodes the complete messages at the front of `buf`, which connection `conn` sent;
    /// returns the bytes consumed (an incomplete message at the end is offered again, with
    /// what follows it, on the next call).
    fn feed(&mut self, conn: u64, buf: &[u8], out: &mut Emitter) -> usize;

    /// Connection `conn` ended (its process exited or closed the socket).
    fn end(&mut self, conn: u64, out: &mut Emitter);

    /// Every connection ended: emits what is left and returns the counters.
    fn finish(self, out: &mut Emitter) -> Self::Stats;
}

/// What can go wrong in the agent host.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AgentHostError {
    /// The private folder or the socket could not be made.
    #[error("failed to {what} {path}: {source}")]
    Io {
        /// What was being done.
        what: &'static str,
        /// The path it was done on.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// A thread could not be started.
    #[error("failed to start the {label} {role} thread: {source}")]
    Thread {
        /// The source's label.
        label: &'static str,
        /// Which thread.
        role: &'static str,
        /// The cause.
        source: std::io::Error,
    },
    /// The calls came in the wrong order.
    #[error("{label}: {what}")]
    Order {
        /// The source's label.
        label: &'static str,
        /// What was wrong.
        what: &'static str,
    },
    /// The decoder thread panicked (its records since the last flush are lost).
    #[error("the {label} decoder thread panicked")]
    DecoderPanicked {
        /// The source's label.
        label: &'static str,
    },
    /// No agent library where it was looked for, or one that may not be loaded.
    #[error("{0}")]
    Agent(String),
}

impl From<AgentHostError> for PluginError {
    fn from(e: AgentHostError) -> Self {
        PluginError::new(e.to_string())
    }
}

/// The listener, reader and decoder threads of one agent-based source.
pub struct AgentHost<D: StreamDecoder> {
    label: &'static str,
    processes: &'static str,
    log: Logger,
    dir: Option<PathBuf>,
    socket: Option<PathBuf>,
    listener: Option<UnixListener>,
    stop: Arc<AtomicBool>,
    accept: Option<JoinHandle<Vec<JoinHandle<()>>>>,
    decoder: Option<JoinHandle<D::Stats>>,
    tx: Option<Sender<Event>>,
    control: Arc<control::Control>,
}

impl<D: StreamDecoder> std::fmt::Debug for AgentHost<D> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentHost").field("label", &self.label).field("socket", &self.socket).finish()
    }
}

impl<D: StreamDecoder> AgentHost<D> {
    /// A host for the source `label` (thread and folder names: `cupti`, `levelzero`) whose agents
    /// run in `processes` processes (messages: "CUDA", "Level Zero").
    pub fn new(label: &'static str, processes: &'static str, log: Logger) -> Self {
        Self {
            label,
            processes,
            log,
            dir: None,
            socket: None,
            listener: None,
            stop: Arc::new(AtomicBool::new(false)),
            accept: None,
            decoder: None,
            tx: None,
            control: Arc::default(),
        }
    }

    /// Makes a private folder with the socket the agents connect to (call it in `prepare`, before
    /// the target exists) and returns the socket's path for the target's environment.
    pub fn listen(&mut self) -> Result<PathBuf, AgentHostError> {
        let dir = std::env::temp_dir().join(format!(
            "xpuprof-{}-{}-{}",
            self.label,
            std::process::id(),
            xpuprof_sdk::clock::now_ns() % 1_000_000_007
        ));
        fn io<'a>(what: &'static str, path: &'a Path) -> impl FnOnce(std::io::Error) -> AgentHostError + 'a {
            move |source| AgentHostError::Io { what, path: path.to_path_buf(), source }
        }
        std::fs::create_dir_all(&dir).map_err(io("create the folder", &dir))?;
        self.dir = Some(dir.clone());
        let sock = dir.join("agent.sock");
        let listener = UnixListener::bind(&sock).map_err(io("listen on", &sock))?;
        // The target may run as another user (sudo): let it connect. The folder's name is not
        // guessable and it only lives for the session.
        let _ = std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o711));
        let _ = std::fs::set_permissions(&sock, std::fs::Permissions::from_mode(0o666));
        listener.set_nonblocking(true).map_err(io("set non-blocking", &sock))?;
        self.listener = Some(listener);
        self.socket = Some(sock.clone());
        Ok(sock)
    }

    /// The socket's path, once [`AgentHost::listen`] made it.
    pub fn socket(&self) -> Option<&Path> {
        self.socket.as_deref()
    }

    /// Starts accepting agents and decoding their streams into `out` (call it in `start`).
    pub fn start(&mut self, decoder: D, out: Emitter) -> Result<(), AgentHostError> {
        let label = self.label;
        let listener = self
            .listener
            .take()
            .ok_or(AgentHostError::Order { label, what: "start called before prepare" })?;
        if self.decoder.is_some() {
            return Err(AgentHostError::Order { label, what: "started twice" });
        }
        let (tx, rx) = mpsc::channel();
        let (log, processes) = (self.log, self.processes);
        let thread = |role: &'static str| move |source| AgentHostError::Thread { label, role, source };
        self.decoder = Some(
            std::thread::Builder::new()
                .name(format!("{label}-decode"))
                .spawn(move || threads::decode_loop(rx, decoder, out, log, processes))
                .map_err(thread("decoder"))?,
        );
        let (stop, tx2, control) = (self.stop.clone(), tx.clone(), self.control.clone());
        self.accept = Some(
            std::thread::Builder::new()
                .name(format!("{label}-accept"))
                .spawn(move || threads::accept_loop(label, listener, stop, tx2, control))
                .map_err(thread("accept"))?,
        );
        self.tx = Some(tx);
        Ok(())
    }

    /// Opens (`on`) or closes a capture window in every connected agent, and in agents that
    /// connect later; returns how many agents it reached.
    pub fn set_capture(&self, on: bool) -> usize {
        self.control.send(xpuprof_wire::control::Command::Capture(on))
    }

    /// Ends the session in every connected agent: each flushes, says goodbye and closes its
    /// connection, staying loaded and dormant in its process (call it before [`AgentHost::stop`]
    /// when the processes outlive the session: attach).
    pub fn detach_agents(&self) -> usize {
        self.control.send(xpuprof_wire::control::Command::Detach)
    }

    /// Connections accepted so far.
    pub fn accepted(&self) -> u64 {
        self.control.count()
    }

    /// Waits until `n` connections were accepted in all, at most `timeout`; true when they were.
    pub fn wait_for_connections(&self, n: u64, timeout: Duration) -> bool {
        self.control.wait_for(n, timeout)
    }

    /// Waits for every connection to end (a connection still open after [`LINGER`] is reported
    /// and left), decodes the rest, removes the folder and returns the decoder's counters
    /// (`None` when the source was never started).
    pub fn stop(&mut self) -> Result<Option<D::Stats>, AgentHostError> {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(a) = self.accept.take() {
            let deadline = Instant::now() + LINGER;
            for r in a.join().unwrap_or_default() {
                while !r.is_finished() && Instant::now() < deadline {
                    std::thread::sleep(Duration::from_millis(10));
                }
                if r.is_finished() {
                    let _ = r.join();
                } else {
                    self.log.warn(&format!(
                        "a {} process of the session is still connected after the target exited; its remaining records are not recorded",
                        self.processes
                    ));
                }
            }
        }
        if let Some(tx) = self.tx.take() {
            let _ = tx.send(Event::Shutdown);
        }
        let stats = match self.decoder.take() {
            Some(d) => Some(d.join().map_err(|_| AgentHostError::DecoderPanicked { label: self.label })?),
            None => None,
        };
        self.remove_dir();
        Ok(stats)
    }

    fn remove_dir(&mut self) {
        if let Some(d) = self.dir.take() {
            let _ = std::fs::remove_dir_all(d);
        }
    }
}

impl<D: StreamDecoder> Drop for AgentHost<D> {
    fn drop(&mut self) {
        // Threads of a source dropped without `stop` end at their next poll.
        self.stop.store(true, Ordering::SeqCst);
        self.remove_dir();
    }
}

#[cfg(test)]
mod tests;
