//! # xpuprof-agent-kit-c: the agent kit behind `xpuprof/agent.h`
//!
//! C and C++ in-target agents of third-party accelerators link `libxpuprof_agent.so` (or the
//! static `libxpuprof_agent.a`) and get, unchanged, what xpuprof's own agents run on
//! (`xpuprof-agent-kit`): launch sites with exact stacks recorded on application threads without
//! contention, the correlation trampoline the eBPF source probes, and the versioned wire stream
//! to the host with its losses counted. The header documents each function; this crate only
//! adapts the kit to C calls. One agent per process.

use std::ffi::{c_char, CStr};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use xpuprof_agent_kit::channel::{Channel, Chunk, Outputs};
use xpuprof_agent_kit::{exit, launches, modules, stack, timestamps, trampoline, wire};

/// `xpuprof_agent_options`, as the header lays it out.
#[repr(C)]
#[derive(Debug)]
pub struct Options {
    /// `sizeof(xpuprof_agent_options)` of the caller.
    pub size: u32,
    /// The vendor runtime's version.
    pub runtime_version: u32,
    /// Who speaks.
    pub name: *const c_char,
    /// Variable holding the host's socket path.
    pub socket_env: *const c_char,
    /// Variable naming a dump directory, or NULL.
    pub dump_env: *const c_char,
    /// NULL-terminated runtime library names, or NULL.
    pub runtime_libraries: *const *const c_char,
    /// Correlation backend.
    pub backend: u32,
    /// Most frames per stack (0: 128; above [`MAX_DEPTH`], [`MAX_DEPTH`]).
    pub max_depth: u32,
}

/// The running agent (`xpuprof_agent`).
#[derive(Debug)]
pub struct Agent {
    channel: std::sync::Arc<Channel>,
    registry: launches::Registry,
    known: modules::Known,
    clock: timestamps::Clock,
    own_code: Vec<(u64, u64)>,
    backend: u32,
    max_depth: usize,
    sender: Mutex<Option<std::thread::JoinHandle<()>>>,
}

/// `XPUPROF_AGENT_MAX_DEPTH`: the most frames a launch stack keeps (`max_depth` above it is
/// taken as it), the wire's bound.
pub const MAX_DEPTH: u32 = wire::MAX_STACK_FRAMES as u32;

/// The frames per stack that `max_depth` asks for: 0 is 128, more than [`MAX_DEPTH`] is
/// [`MAX_DEPTH`].
pub fn depth(max_depth: u32) -> usize {
    match max_depth {
        0 => 128,
        d => d.min(MAX_DEPTH) as usize,
    }
}

static AGENT: OnceLock<Agent> = OnceLock::new();
static FINISHED: std::sync::Once = std::sync::Once::new();

/// The text at `p`, if any.
///
/// # Safety
/// `p` is NULL or a NUL-terminated string.
unsafe fn text(p: *const c_char) -> Option<String> {
    // SAFETY: the caller's contract.
    (!p.is_null()).then(|| unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned())
}

impl Agent {
    fn sites(&self) -> launches::Sites<'_> {
        launches::Sites {
            record_entries: true,
            stacks: true,
            max_depth: self.max_depth,
            own_code: &self.own_code,
            known: &self.known,
        }
    }

    /// Queues the launch sites recorded since the last drain (and the module map when a stack
    /// left it).
    fn drain(&self) {
        let mut out = Vec::new();
        self.registry.drain(&mut out, &self.clock);
        if self.known.take_stale() {
            let mut m = self.known.refresh();
            m.extend_from_slice(&out);
            out = m;
        }
        if !out.is_empty() {
            self.channel.push(Chunk::Bytes(out));
        }
    }

    fn finish(&self) {
        FINISHED.call_once(|| {
            self.drain();
            let mut m = Vec::new();
            self.channel.put_lost(&mut m);
            let (launches, stacks) = self.registry.totals();
            wire::put_message(&mut m, wire::MSG_BYE, &[&launches.to_le_bytes(), &stacks.to_le_bytes()]);
            self.channel.push(Chunk::Bytes(m));
            self.channel.close();
            self.channel.wait_idle(Duration::from_secs(10));
            if let Some(h) = self.sender.lock().ok().and_then(|mut s| s.take()) {
                let _ = h.join();
            }
        });
    }
}

/// The mapped files named by `names`: a path, or a file name (`libacme.so` also matches
/// `libacme.so.1.2`).
fn library_paths(names: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for m in modules::own().into_iter().filter(|m| m.is_file()) {
        let file = std::path::Path::new(&m.path).file_name().map(|f| f.to_string_lossy().into_owned());
        let file = file.unwrap_or_default();
        let named = names.iter().any(|n| m.path == *n || file == *n || file.starts_with(&format!("{n}.")));
        if named && !out.contains(&m.path) {
            out.push(m.path);
        }
    }
    out
}

/// Starts the agent from `o`.
///
/// # Safety
/// `o` points to a valid `xpuprof_agent_options` whose strings are NUL-terminated.
unsafe fn start(o: &Options) -> Result<&'static Agent, String> {
    if (o.size as usize) < std::mem::size_of::<Options>() {
        return Err(format!(
            "options of {} bytes, expected {}: set `size`",
            o.size,
            std::mem::size_of::<Options>()
        ));
    }
    // SAFETY: the caller's contract for every string of `o`.
    let (name, socket_env, dump_env) = unsafe { (text(o.name), text(o.socket_env), text(o.dump_env)) };
    let name: &'static str = Box::leak(name.unwrap_or_else(|| "agent".into()).into_boxed_str());
    let socket = socket_env.and_then(|v| std::env::var(v).ok());
    let dump = dump_env.and_then(|v| std::env::var(v).ok());
    if socket.is_none() && dump.is_none() {
        return Err("neither the socket variable nor the dump variable is set: run under xpuprof".into());
    }
    let outputs = Outputs::connect(socket.as_deref(), dump.as_deref(), "agent")?;
    let mut libs: Vec<String> = Vec::new();
    let mut p = o.runtime_libraries;
    // SAFETY: a NULL-terminated array of strings (the header's contract); at most 64 read.
    unsafe {
        while !p.is_null() && !(*p).is_null() && libs.len() < 64 {
            libs.extend(text(*p));
            p = p.add(1);
        }
    }
    libs.push("libxpuprof_agent.so".into());
    let paths = library_paths(&libs);
    let lib_refs: Vec<&str> = paths.iter().map(String::as_str).collect();
    let agent = Agent {
        channel: std::sync::Arc::new(Channel::new(name, 1 << 20)),
        registry: launches::Registry::default(),
        known: modules::Known::default(),
        clock: timestamps::Clock::new(true),
        own_code: modules::ranges_of(&lib_refs),
        backend: o.backend,
        max_depth: depth(o.max_depth),
        sender: Mutex::new(None),
    };
    let mut first = Vec::new();
    wire::Hello::new(o.runtime_version, wire::FLAG_AGENT_STACKS).encode(&mut first);
    first.extend_from_slice(&agent.known.refresh());
    agent.channel.push(Chunk::Bytes(first));
    AGENT.set(agent).map_err(|_| "an agent is already running in this process".to_owned())?;
    let a = AGENT.get().ok_or("the agent did not start")?;
    let ch = a.channel.clone();
    let sender = std::thread::Builder::new()
        .name("xpuprof-agent".into())
        .spawn(move || ch.run(outputs, || a.drain()))
        .map_err(|e| format!("failed to start the sender thread: {e}"))?;
    *a.sender.lock().map_err(|_| "poisoned")? = Some(sender);
    exit::install(|| {
        if let Some(a) = AGENT.get() {
            a.finish();
        }
    });
    Ok(a)
}

/// See `xpuprof/agent.h`.
///
/// # Safety
/// `options` is NULL or valid; `error` is NULL or has `error_cap` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn xpuprof_agent_start(
    options: *const Options,
    error: *mut c_char,
    error_cap: usize,
) -> *const Agent {
    let r = if options.is_null() {
        Err("no options".to_owned())
    } else {
        // SAFETY: non-null, valid by the caller's contract.
        std::panic::catch_unwind(|| unsafe { start(&*options) })
            .unwrap_or_else(|_| Err("the agent panicked".into()))
    };
    match r {
        Ok(a) => a,
        Err(msg) => {
            if !error.is_null() && error_cap > 0 {
                let n = msg.len().min(error_cap - 1);
                // SAFETY: `error` has `error_cap` writable bytes; `n + 1 <= error_cap`.
                unsafe {
                    std::ptr::copy_nonoverlapping(msg.as_ptr(), error.cast::<u8>(), n);
                    *error.add(n) = 0;
                }
            }
            std::ptr::null()
        }
    }
}

/// See `xpuprof/agent.h`.
///
/// # Safety
/// `agent` is NULL or what `xpuprof_agent_start` returned.
#[no_mangle]
pub unsafe extern "C" fn xpuprof_agent_enter(
    agent: *const Agent,
    domain: u8,
    api: u32,
    correlation: u32,
) -> i32 {
    let regs = stack::registers();
    // SAFETY: NULL or the static agent.
    let Some(a) = (unsafe { agent.as_ref() }) else { return 0 };
    match a.registry.enter(&a.sites(), domain, api, correlation, regs) {
        Some(start) => {
            trampoline::call(&start, a.backend, u64::from(correlation));
            1
        }
        None => 0,
    }
}

/// See `xpuprof/agent.h`.
///
/// # Safety
/// `agent` is NULL or what `xpuprof_agent_start` returned.
#[no_mangle]
pub unsafe extern "C" fn xpuprof_agent_exit(agent: *const Agent, result: u32) {
    // SAFETY: NULL or the static agent.
    if let Some(a) = unsafe { agent.as_ref() } {
        a.registry.exit(result);
    }
}

/// See `xpuprof/agent.h`.
///
/// # Safety
/// `agent` is NULL or what `xpuprof_agent_start` returned; `payload` has `len` readable bytes.
#[no_mangle]
pub unsafe extern "C" fn xpuprof_agent_send(
    agent: *const Agent,
    ty: u8,
    payload: *const u8,
    len: usize,
) -> i32 {
    // SAFETY: NULL or the static agent.
    let Some(a) = (unsafe { agent.as_ref() }) else { return -1 };
    if !sendable(ty) {
        return -1;
    }
    let body = if payload.is_null() || len == 0 {
        &[][..]
    } else {
        // SAFETY: the caller's contract.
        unsafe { std::slice::from_raw_parts(payload, len) }
    };
    let mut m = Vec::with_capacity(len + 8);
    wire::put_message(&mut m, ty, &[body]);
    if a.channel.push(Chunk::Bytes(m)) {
        0
    } else {
        -1
    }
}

/// The message types an agent may send itself (`XPUPROF_MSG_*` in the header): the common ones
/// whose payload the stream defines and the agent's own range; the kit writes the others (hello,
/// modules, launches, losses, bye) and a copy from the agent would corrupt the stream's meaning.
pub fn sendable(ty: u8) -> bool {
    matches!(
        ty,
        wire::MSG_RECORDS
            | wire::MSG_DROPPED
            | wire::MSG_CLOCK
            | wire::MSG_STRINGS
            | wire::MSG_API_NAMES
            | wire::MSG_ERROR
    ) || ty >= wire::MSG_BACKEND_FIRST
}

/// See `xpuprof/agent.h`.
///
/// # Safety
/// `out` has `max` writable `uint64_t`s.
#[no_mangle]
pub unsafe extern "C" fn xpuprof_agent_walk(out: *mut u64, max: usize) -> usize {
    let regs = stack::registers();
    if out.is_null() || max == 0 {
        return 0;
    }
    // SAFETY: the caller's contract.
    let out = unsafe { std::slice::from_raw_parts_mut(out, max) };
    // The walk's first frame is this function's own address: leave it out.
    let mut all = vec![0u64; max + 1];
    let (w, _) = stack::walk(regs, stack::thread_bounds(), &[], &mut all);
    let n = w.len.saturating_sub(1);
    out[..n].copy_from_slice(&all[1..w.len]);
    n
}

/// See `xpuprof/agent.h`.
///
/// # Safety
/// `agent` is NULL or what `xpuprof_agent_start` returned.
#[no_mangle]
pub unsafe extern "C" fn xpuprof_agent_finish(agent: *const Agent) {
    // SAFETY: NULL or the static agent.
    if let Some(a) = unsafe { agent.as_ref() } {
        a.finish();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn max_depth_is_bounded_and_the_header_says_the_same_bound() {
        assert_eq!((depth(0), depth(300), depth(u32::MAX)), (128, 300, wire::MAX_STACK_FRAMES));
        let header = include_str!("../../include/xpuprof/agent.h");
        let line = format!("#define XPUPROF_AGENT_MAX_DEPTH {MAX_DEPTH}");
        assert!(header.lines().any(|l| l.trim() == line), "agent.h lacks `{line}`");
    }

    /// The header's numbers are the wire's: its protocol, the common messages an agent may send
    /// and the agent's own range.
    #[test]
    fn the_header_names_the_wire_protocol_and_the_sendable_message_numbers() {
        let header = include_str!("../../include/xpuprof/agent.h");
        let defined = |name: &str| -> u32 {
            let line = header
                .lines()
                .find(|l| l.starts_with(&format!("#define {name} ")))
                .unwrap_or_else(|| panic!("agent.h lacks {name}"));
            line.split_whitespace().nth(2).and_then(|v| v.parse().ok()).expect("a number")
        };
        assert_eq!(defined("XPUPROF_AGENT_PROTOCOL"), wire::PROTOCOL);
        let sendable_numbers = [
            ("XPUPROF_MSG_RECORDS", wire::MSG_RECORDS),
            ("XPUPROF_MSG_DROPPED", wire::MSG_DROPPED),
            ("XPUPROF_MSG_CLOCK", wire::MSG_CLOCK),
            ("XPUPROF_MSG_STRINGS", wire::MSG_STRINGS),
            ("XPUPROF_MSG_API_NAMES", wire::MSG_API_NAMES),
            ("XPUPROF_MSG_ERROR", wire::MSG_ERROR),
            ("XPUPROF_MSG_OWN_FIRST", wire::MSG_BACKEND_FIRST),
            ("XPUPROF_MSG_OWN_LAST", 255),
        ];
        for (name, ty) in sendable_numbers {
            assert_eq!(defined(name), u32::from(ty), "{name}");
            assert!(sendable(ty), "{name}");
        }
        for ty in [
            wire::MSG_HELLO,
            wire::MSG_MODULES,
            wire::MSG_LAUNCHES,
            wire::MSG_BYE,
            wire::MSG_LOST_BYTES,
            64,
            127,
        ] {
            assert!(!sendable(ty), "type {ty} is the kit's");
        }
    }
}
