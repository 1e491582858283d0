//! The `cupti` source: prepares the target's environment (agent injection, socket), accepts one
//! connection per CUDA process of the session, and decodes the streams on one thread.

use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use xpuprof_sdk::hash::IdMap;

use xpuprof_sdk::prelude::*;

use crate::config::{Config, LaunchStacks};
use crate::decode::{Decoder, Stats};

/// Agent library file name.
pub const AGENT_FILE: &str = "libxpuprof_cupti_agent.so";

/// What reader threads tell the decoder thread.
enum Event {
    Data(u64, Vec<u8>),
    End(u64),
    Shutdown,
}

/// The plugin instance.
pub struct Cupti {
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

impl std::fmt::Debug for Cupti {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cupti").field("config", &self.config).field("dir", &self.dir).finish()
    }
}

/// The directory holding this plugin's shared library (where the agent is built next to it).
fn own_dir() -> Option<PathBuf> {
    let mut info: libc::Dl_info = unsafe_zeroed_dl_info();
    let addr = own_dir as *const ();
    // SAFETY: dladdr only reads `addr` and fills `info`, a valid out-pointer.
    if unsafe { libc::dladdr(addr.cast(), &mut info) } == 0 || info.dli_fname.is_null() {
        return None;
    }
    // SAFETY: dladdr returned a valid NUL-terminated path.
    let path = unsafe { std::ffi::CStr::from_ptr(info.dli_fname) }.to_string_lossy().into_owned();
    Path::new(&path).parent().map(Path::to_path_buf)
}

fn unsafe_zeroed_dl_info() -> libc::Dl_info {
    libc::Dl_info {
        dli_fname: std::ptr::null(),
        dli_fbase: std::ptr::null_mut(),
        dli_sname: std::ptr::null(),
        dli_saddr: std::ptr::null_mut(),
    }
}

/// Finds the agent: the `agent` key, `XPUPROF_CUPTI_AGENT`, next to this plugin, next to the
/// running binary.
pub fn find_agent(configured: Option<&str>) -> PluginResult<PathBuf> {
    let mut tried = Vec::new();
    // A path the user named is used or refused, never skipped for another one.
    let named = match (configured, std::env::var_os("XPUPROF_CUPTI_AGENT")) {
        (Some(c), _) => Some((PathBuf::from(c), "[source.cupti] agent")),
        (None, Some(p)) => Some((PathBuf::from(p), "XPUPROF_CUPTI_AGENT")),
        (None, None) => None,
    };
    if let Some((path, origin)) = named {
        if !path.is_file() {
            return Err(PluginError::new(format!(
                "failed to find the CUPTI agent {} named by {origin}: no such file",
                path.display()
            )));
        }
        xpuprof_sdk::trust::check_trusted_file(&path, &format!("the agent library {}", path.display()))
            .map_err(|e| PluginError::new(format!("{e} (named by {origin})")))?;
        return Ok(std::fs::canonicalize(&path).unwrap_or(path));
    }
    let mut candidates = Vec::new();
    if let Some(d) = own_dir() {
        candidates.push(d.join(AGENT_FILE));
    }
    if let Some(d) = std::env::current_exe().ok().and_then(|e| e.parent().map(Path::to_path_buf)) {
        candidates.push(d.join(AGENT_FILE));
    }
    for c in candidates {
        if c.is_file() {
            xpuprof_sdk::trust::check_trusted_file(&c, &format!("the agent library {}", c.display()))
                .map_err(PluginError::new)?;
            return Ok(std::fs::canonicalize(&c).unwrap_or(c));
        }
        tried.push(c.display().to_string());
    }
    Err(PluginError::new(format!(
        "failed to find the CUPTI agent {AGENT_FILE} (looked at: {}); build it with `cargo build -p xpuprof-cupti-agent` \
         or set [source.cupti] agent = \"/path/to/{AGENT_FILE}\"",
        tried.join(", ")
    )))
}

/// Warns about what will keep CUDA processes from being traced.
fn check_machine(log: &Logger) {
    let driver = ["libcuda.so.1", "libcuda.so"].iter().any(|n| {
        let c = std::ffi::CString::new(*n).expect("no NUL");
        // SAFETY: dlopen with a valid C string; the handle is closed right away.
        let h = unsafe { libc::dlopen(c.as_ptr(), libc::RTLD_LAZY | libc::RTLD_LOCAL) };
        if !h.is_null() {
            // SAFETY: `h` is a handle dlopen just returned.
            unsafe { libc::dlclose(h) };
        }
        !h.is_null()
    });
    if !driver {
        log.warn("no NVIDIA driver found (libcuda.so.1 cannot be loaded): CUDA programs cannot run here, so the cupti source will record nothing");
    } else if !Path::new("/dev/nvidiactl").exists() && !Path::new("/dev/nvidia0").exists() {
        log.warn("no NVIDIA GPU device node (/dev/nvidia0): CUDA programs will fail to initialise, so the cupti source will record nothing");
    }
    if let Ok(v) = std::env::var("CUDA_INJECTION64_PATH") {
        log.warn(&format!(
            "CUDA_INJECTION64_PATH was already set to {v}; the target gets the xpuprof agent instead"
        ));
    }
}

impl Cupti {
    /// Creates the instance.
    pub fn new(ctx: CreateContext) -> PluginResult<Self> {
        let config = Config::from_plugin(&ctx.config)?;
        if matches!(config.launch_stacks, LaunchStacks::Ebpf | LaunchStacks::Both)
            && !ctx.session.sources.iter().any(|s| s == "ebpf")
        {
            ctx.log.warn(&format!(
                "launch_stacks = \"{}\" takes launch stacks from the eBPF source, which is not in this session: {}\n\
                 hint: run with --source ebpf,cupti (root), or set launch_stacks = \"agent\"",
                config.launch_stacks.as_str(),
                if config.launch_stacks == LaunchStacks::Ebpf { "kernels get no launch stacks" } else { "only the agent's stacks are recorded" }
            ));
        }
        Ok(Self {
            config,
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

    /// Sets the agent injection and the socket in the target's environment.
    pub fn prepare_env(&mut self, env: &mut TargetEnv) -> PluginResult<()> {
        let agent = find_agent(self.config.agent.as_deref())?;
        check_machine(&self.log);
        let dir = std::env::temp_dir().join(format!(
            "xpuprof-cupti-{}-{}",
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
        let agent = agent.display().to_string();
        env.set("CUDA_INJECTION64_PATH", agent.clone());
        if self.config.nvtx() {
            env.set("NVTX_INJECTION64_PATH", agent);
        }
        env.set("XPUPROF_CUPTI_SOCKET", sock.display().to_string());
        env.set("XPUPROF_CUPTI_OPTS", self.config.agent_opts());
        self.listener = Some(listener);
        self.dir = Some(dir);
        Ok(())
    }

    /// Starts accepting agents and decoding.
    pub fn start_threads(&mut self) -> PluginResult<()> {
        let listener =
            self.listener.take().ok_or_else(|| PluginError::new("cupti: start called before prepare"))?;
        let (tx, rx) = mpsc::channel();
        let emitter = self.emitter.take().ok_or_else(|| PluginError::new("cupti: started twice"))?;
        let log = self.log;
        self.decoder = Some(
            std::thread::Builder::new()
                .name("cupti-decode".into())
                .spawn(move || decode_loop(rx, emitter, log))
                .map_err(|e| PluginError::new(format!("failed to start the cupti decoder thread: {e}")))?,
        );
        let stop = self.stop.clone();
        let tx2 = tx.clone();
        self.accept = Some(
            std::thread::Builder::new()
                .name("cupti-accept".into())
                .spawn(move || accept_loop(listener, stop, tx2))
                .map_err(|e| PluginError::new(format!("failed to start the cupti accept thread: {e}")))?,
        );
        self.tx = Some(tx);
        Ok(())
    }

    /// Waits for every agent connection to end, decodes the rest and reports.
    pub fn stop_threads(&mut self) -> PluginResult<()> {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(a) = self.accept.take() {
            let readers = a.join().unwrap_or_default();
            // Processes have exited, so their sockets are closed; a lingering daemon child is
            // given a bounded time.
            let deadline = Instant::now() + Duration::from_secs(15);
            for r in readers {
                while !r.is_finished() && Instant::now() < deadline {
                    std::thread::sleep(Duration::from_millis(10));
                }
                if r.is_finished() {
                    let _ = r.join();
                } else {
                    self.log.warn("a CUDA process of the session is still connected after the target exited; its remaining records are not recorded");
                }
            }
        }
        if let Some(tx) = self.tx.take() {
            let _ = tx.send(Event::Shutdown);
        }
        let stats = match self.decoder.take() {
            Some(d) => d.join().map_err(|_| PluginError::new("the cupti decoder thread panicked"))?,
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
                "no CUDA process was seen: nothing was recorded from the GPU. The program did not initialise CUDA \
                 (no CUDA calls, no GPU, or no NVIDIA driver), or it was started in a way that drops the environment \
                 (CUDA_INJECTION64_PATH)",
            );
            return;
        }
        self.log.info(&format!(
            "cupti: {} process(es), {} device operations ({} kernels), {} launch sites, {} API calls",
            s.processes, s.device_ops, s.kernels, s.launch_sites, s.api_calls
        ));
        if s.dropped > 0 {
            self.log.warn(&format!(
                "CUPTI dropped {} records (buffers full); raise [source.cupti] buffer_kib",
                s.dropped
            ));
        }
        if s.unknown_versions > 0 {
            self.log
                .warn(&format!("{} CUPTI records of an unknown version were skipped", s.unknown_versions));
        }
    }
}

fn accept_loop(listener: UnixListener, stop: Arc<AtomicBool>, tx: Sender<Event>) -> Vec<JoinHandle<()>> {
    let mut readers = Vec::new();
    let mut next = 1u64;
    loop {
        match listener.accept() {
            Ok((s, _)) => {
                let id = next;
                next += 1;
                let tx = tx.clone();
                if let Ok(h) = std::thread::Builder::new()
                    .name(format!("cupti-conn-{id}"))
                    .spawn(move || read_loop(id, s, tx))
                {
                    readers.push(h);
                }
                continue;
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(_) => {}
        }
        if stop.load(Ordering::SeqCst) {
            return readers;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn read_loop(id: u64, mut s: UnixStream, tx: Sender<Event>) {
    let _ = s.set_nonblocking(false);
    let mut buf = vec![0u8; 1 << 20];
    loop {
        match s.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                if tx.send(Event::Data(id, buf[..n].to_vec())).is_err() {
                    return;
                }
            }
        }
    }
    let _ = tx.send(Event::End(id));
}

fn decode_loop(rx: Receiver<Event>, mut out: Emitter, log: Logger) -> Stats {
    let mut d = Decoder::new(log);
    let mut pending: IdMap<u64, Vec<u8>> = IdMap::default();
    loop {
        match rx.recv_timeout(Duration::from_millis(100)) {
            Ok(Event::Data(id, bytes)) => {
                let buf = pending.entry(id).or_default();
                buf.extend_from_slice(&bytes);
                let used = d.feed(id, buf, &mut out);
                buf.drain(..used);
                // Under a steady stream the idle flush below never runs: records still reach
                // the host within FLUSH_INTERVAL.
                out.flush_if_due();
            }
            Ok(Event::End(id)) => {
                if pending.remove(&id).is_some_and(|b| !b.is_empty()) {
                    log.warn("a CUDA process's stream ended in the middle of a message");
                }
                d.finish(id, &mut out);
                out.flush();
            }
            Ok(Event::Shutdown) | Err(RecvTimeoutError::Disconnected) => break,
            Err(RecvTimeoutError::Timeout) => out.flush(),
        }
    }
    d.finish_all(&mut out);
    out.flush();
    d.stats.clone()
}
