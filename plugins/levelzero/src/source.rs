//! The `levelzero` source: prepares the target's environment (the agent preloaded, the
//! loader's tracing layer on, a socket), accepts one connection per Level Zero process of the
//! session (children included: they inherit the environment) and decodes them on one thread.

use std::collections::HashMap;
use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use xpuprof_sdk::prelude::*;

use crate::config::Config;
use crate::decode::{Decoder, Stats};

/// Agent library file name.
pub const AGENT_FILE: &str = "libxpuprof_levelzero_agent.so";

/// What reader threads tell the decoder thread.
enum Event {
    Data(u64, Vec<u8>),
    End(u64),
    Shutdown,
}

/// The plugin instance.
pub struct LevelZero {
    config: Config,
    emitter: Option<Emitter>,
    log: Logger,
    dir: Option<PathBuf>,
    listener: Option<UnixListener>,
    stop: Arc<AtomicBool>,
    accept: Option<JoinHandle<Vec<JoinHandle<()>>>>,
    decoder: Option<JoinHandle<Stats>>,
    tx: Option<Sender<Event>>,
}

impl std::fmt::Debug for LevelZero {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LevelZero").field("config", &self.config).field("dir", &self.dir).finish()
    }
}

/// The directory holding this plugin's shared library (the agent is built next to it).
fn own_dir() -> Option<PathBuf> {
    let mut info = libc::Dl_info {
        dli_fname: std::ptr::null(),
        dli_fbase: std::ptr::null_mut(),
        dli_sname: std::ptr::null(),
        dli_saddr: std::ptr::null_mut(),
    };
    // SAFETY: dladdr only reads the address and fills `info`, a valid out-pointer.
    if unsafe { libc::dladdr(own_dir as *const libc::c_void, &mut info) } == 0 || info.dli_fname.is_null() {
        return None;
    }
    // SAFETY: dladdr returned a valid NUL-terminated path.
    let path = unsafe { std::ffi::CStr::from_ptr(info.dli_fname) }.to_string_lossy().into_owned();
    Path::new(&path).parent().map(Path::to_path_buf)
}

/// Finds the agent: the `agent` key, `XPUPROF_LEVELZERO_AGENT`, next to this plugin, next to
/// the running binary.
pub fn find_agent(configured: Option<&str>) -> PluginResult<PathBuf> {
    let mut candidates = Vec::new();
    candidates.extend(configured.map(PathBuf::from));
    if let Some(p) = std::env::var_os("XPUPROF_LEVELZERO_AGENT") {
        candidates.push(PathBuf::from(p));
    }
    candidates.extend(own_dir().map(|d| d.join(AGENT_FILE)));
    candidates.extend(std::env::current_exe().ok().and_then(|e| e.parent().map(|d| d.join(AGENT_FILE))));
    if let Some(c) = candidates.iter().find(|c| c.is_file()) {
        // As root, an agent another user could have written would run inside the target.
        xpuprof_sdk::trust::check_trusted_file(c, &format!("the agent library {}", c.display()))
            .map_err(PluginError::new)?;
        return Ok(std::fs::canonicalize(c).unwrap_or_else(|_| c.clone()));
    }
    let tried: Vec<String> = candidates.iter().map(|c| c.display().to_string()).collect();
    Err(PluginError::new(format!(
        "failed to find the Level Zero agent {AGENT_FILE} (looked at: {}); build it with \
         `cargo build -p xpuprof-levelzero-agent` or set [source.levelzero] agent = \"/path/to/{AGENT_FILE}\"",
        tried.join(", ")
    )))
}

impl LevelZero {
    /// Creates the instance.
    pub fn new(ctx: CreateContext) -> PluginResult<Self> {
        Ok(Self {
            config: Config::from_plugin(&ctx.config)?,
            emitter: Some(ctx.emitter),
            log: ctx.log,
            dir: None,
            listener: None,
            stop: Arc::new(AtomicBool::new(false)),
            accept: None,
            decoder: None,
            tx: None,
        })
    }

    /// Preloads the agent, turns the tracing layer on and opens the socket.
    pub fn prepare_env(&mut self, env: &mut TargetEnv) -> PluginResult<()> {
        let agent = find_agent(self.config.agent.as_deref())?;
        for (missing, why) in crate::machine::missing() {
            self.log.warn(&format!("{missing}: {why}"));
        }
        let dir = std::env::temp_dir().join(format!(
            "xpuprof-levelzero-{}-{}",
            std::process::id(),
            xpuprof_sdk::clock::now_ns() % 1_000_000_007
        ));
        std::fs::create_dir_all(&dir)
            .map_err(|e| PluginError::new(format!("failed to create {}: {e}", dir.display())))?;
        let sock = dir.join("agent.sock");
        let listener = UnixListener::bind(&sock)
            .map_err(|e| PluginError::new(format!("failed to listen on {}: {e}", sock.display())))?;
        // The target may run as another user (sudo): let it connect; the folder's name is not
        // guessable and only lives for the session.
        let _ = std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o711));
        let _ = std::fs::set_permissions(&sock, std::fs::Permissions::from_mode(0o666));
        listener.set_nonblocking(true)?;
        let mut preload = agent.display().to_string();
        if let Ok(existing) = std::env::var("LD_PRELOAD") {
            if !existing.is_empty() {
                preload = format!("{preload}:{existing}");
            }
        }
        env.set("LD_PRELOAD", preload);
        env.set("ZE_ENABLE_TRACING_LAYER", "1");
        env.set("XPUPROF_LEVELZERO_SOCKET", sock.display().to_string());
        self.listener = Some(listener);
        self.dir = Some(dir);
        Ok(())
    }

    /// Starts accepting agents and decoding.
    pub fn start_threads(&mut self) -> PluginResult<()> {
        let listener =
            self.listener.take().ok_or_else(|| PluginError::new("levelzero: start called before prepare"))?;
        let emitter = self.emitter.take().ok_or_else(|| PluginError::new("levelzero: started twice"))?;
        let (tx, rx) = mpsc::channel();
        let log = self.log;
        let spawn_err =
            |e: std::io::Error| PluginError::new(format!("failed to start a levelzero thread: {e}"));
        self.decoder = Some(
            std::thread::Builder::new()
                .name("levelzero-decode".into())
                .spawn(move || decode_loop(rx, emitter, log))
                .map_err(spawn_err)?,
        );
        let (stop, tx2) = (self.stop.clone(), tx.clone());
        self.accept = Some(
            std::thread::Builder::new()
                .name("levelzero-accept".into())
                .spawn(move || accept_loop(listener, stop, tx2))
                .map_err(spawn_err)?,
        );
        self.tx = Some(tx);
        Ok(())
    }

    /// Waits for every agent connection to end, decodes the rest and reports.
    pub fn stop_threads(&mut self) -> PluginResult<()> {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(a) = self.accept.take() {
            let deadline = Instant::now() + Duration::from_secs(15);
            for r in a.join().unwrap_or_default() {
                while !r.is_finished() && Instant::now() < deadline {
                    std::thread::sleep(Duration::from_millis(10));
                }
                if r.is_finished() {
                    let _ = r.join();
                } else {
                    self.log.warn("a Level Zero process of the session is still connected after the target exited; its remaining work is not recorded");
                }
            }
        }
        if let Some(tx) = self.tx.take() {
            let _ = tx.send(Event::Shutdown);
        }
        let stats = match self.decoder.take() {
            Some(d) => d.join().map_err(|_| PluginError::new("the levelzero decoder thread panicked"))?,
            None => Stats::default(),
        };
        self.report(&stats);
        if let Some(d) = self.dir.take() {
            let _ = std::fs::remove_dir_all(d);
        }
        Ok(())
    }

    fn report(&self, s: &Stats) {
        if s.processes == 0 {
            self.log.warn(
                "no Level Zero process connected: the program did not load the Level Zero loader (libze_loader.so.1), \
                 or it was started in a way that drops the environment (LD_PRELOAD)",
            );
            return;
        }
        self.log.info(&format!(
            "levelzero: {} process(es), {} device operations ({} kernels), {} launch sites, {} API calls",
            s.processes, s.device_ops, s.kernels, s.launch_sites, s.api_calls
        ));
        if s.lost > 0 {
            self.log.warn(&format!(
                "levelzero: {} device operations lost (see the losses in the outputs: lists re-executed before their \
                 timestamps could be read, or work unfinished at exit)",
                s.lost
            ));
        }
        if s.unconvertible > 0 {
            self.log.warn(&format!(
                "levelzero: {} device operations had no device clock to convert their time",
                s.unconvertible
            ));
        }
    }
}

fn accept_loop(listener: UnixListener, stop: Arc<AtomicBool>, tx: Sender<Event>) -> Vec<JoinHandle<()>> {
    let mut readers = Vec::new();
    for id in 1u64.. {
        match listener.accept() {
            Ok((s, _)) => {
                let tx = tx.clone();
                let spawned = std::thread::Builder::new()
                    .name(format!("levelzero-conn-{id}"))
                    .spawn(move || read_loop(id, s, tx));
                readers.extend(spawned.ok());
                continue;
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(_) => {}
        }
        if stop.load(Ordering::SeqCst) {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    readers
}

fn read_loop(id: u64, mut s: UnixStream, tx: Sender<Event>) {
    let _ = s.set_nonblocking(false);
    let mut buf = vec![0u8; 1 << 20];
    while let Ok(n @ 1..) = s.read(&mut buf) {
        if tx.send(Event::Data(id, buf[..n].to_vec())).is_err() {
            return;
        }
    }
    let _ = tx.send(Event::End(id));
}

fn decode_loop(rx: Receiver<Event>, mut out: Emitter, log: Logger) -> Stats {
    let mut d = Decoder::new(log);
    let mut pending: HashMap<u64, Vec<u8>> = HashMap::new();
    loop {
        match rx.recv_timeout(Duration::from_millis(100)) {
            Ok(Event::Data(id, bytes)) => {
                let buf = pending.entry(id).or_default();
                buf.extend_from_slice(&bytes);
                let used = d.feed(id, buf, &mut out);
                buf.drain(..used);
                out.flush_if_due();
            }
            Ok(Event::End(id)) => {
                if pending.remove(&id).is_some_and(|b| !b.is_empty()) {
                    log.warn("a Level Zero process's stream ended in the middle of a message");
                }
                d.finish(id);
                out.flush();
            }
            Ok(Event::Shutdown) | Err(RecvTimeoutError::Disconnected) => break,
            Err(RecvTimeoutError::Timeout) => out.flush(),
        }
    }
    out.flush();
    d.stats.clone()
}
