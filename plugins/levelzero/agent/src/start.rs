//! Start-up: the agent is preloaded into every process of the session (`LD_PRELOAD`, set by
//! the host plugin with `ZE_ENABLE_TRACING_LAYER=1`). It starts tracing when the Level Zero
//! loader is in the process: at load when the application links it, or right after the
//! `dlopen` that brings it in (SYCL's Unified Runtime `dlopen`s `libze_loader.so.1` and
//! `dlsym`s its entry points, so interposing `zeInit` alone would miss it). Processes that
//! never load Level Zero are left alone.

use std::os::raw::{c_char, c_int, c_void};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use level_zero_sys::*;
use xpuprof_agent_kit::channel::Outputs;
use xpuprof_agent_kit::modules;
use xpuprof_agent_kit::opts::PythonMode;
use xpuprof_agent_kit::{exit, wire, AgentCore};
use xpuprof_levelzero_wire::{Msg, VERSION};

use crate::agent::{Agent, AGENT, INSIDE};
use crate::config::Config;
use crate::{callbacks, devices, sys};

/// The agent's name in messages.
const NAME: &str = "levelzero agent";

/// The socket of the host plugin.
pub const SOCKET_ENV: &str = "XPUPROF_LEVELZERO_SOCKET";

static STARTED: AtomicBool = AtomicBool::new(false);

/// Runs at load (`.init_array`): starts at once when the application links the loader.
pub extern "C" fn on_load() {
    if std::env::var_os(SOCKET_ENV).is_some() && sys::loader_mapped() {
        start();
    }
}

/// `dlopen`, as the application calls it: the real one, then the start of tracing if this call
/// brought the Level Zero loader in.
///
/// # Safety
/// Same contract as libc's `dlopen`.
#[no_mangle]
pub unsafe extern "C" fn dlopen(file: *const c_char, mode: c_int) -> *mut c_void {
    let Some(real) = sys::real_dlopen() else { return std::ptr::null_mut() };
    // SAFETY: forwarded with the caller's arguments.
    let h = unsafe { real(file, mode) };
    if !h.is_null()
        && !STARTED.load(Ordering::Relaxed)
        && std::env::var_os(SOCKET_ENV).is_some()
        && sys::loader_mapped()
    {
        start();
    }
    h
}

/// Starts tracing once; on failure says why on stderr (and to the host) and leaves the
/// program alone.
pub fn start() {
    if STARTED.swap(true, Ordering::SeqCst) {
        return;
    }
    INSIDE.with(|c| c.set(true));
    if let Err(e) = try_start() {
        xpuprof_agent_kit::say(NAME, &format!("{e}; this process is not traced"));
    }
    INSIDE.with(|c| c.set(false));
}

fn try_start() -> Result<(), String> {
    let mut config = Config::new(crate::config::MAX_DEPTH);
    let opts = config.common.read_env("LEVELZERO");
    let c = &config.common;
    let outputs = Outputs::connect(c.socket.as_deref(), c.dump_dir.as_deref(), "ze")?;
    // No record buffers: Level Zero has none, the agent sends its own messages.
    let mut core = AgentCore::new(NAME, 1 << 16, Vec::new());
    core.start_sender("xpuprof-ze-send", outputs, || {
        if let Some(a) = AGENT.get() {
            a.core.drain_launches();
        }
    })?;
    // An error is said to the host (and on stderr by the caller); the program runs untraced.
    let fail = |e: String| {
        core.refuse(&e, Duration::from_secs(2));
        e
    };
    config.parse_opts(&opts).map_err(|e| fail(format!("bad XPUPROF_LEVELZERO_OPTS: {e}")))?;
    let ze = sys::load().map_err(fail)?;
    enable_tracing_layer();
    // SAFETY: zeInit may be called any number of times; the tracer needs it to have run.
    sys::check("zeInit", unsafe { ze.zeInit(0) })
        .map_err(|e| fail(format!("{e} (no Level Zero driver?)")))?;
    let desc = zel_tracer_desc_t {
        stype: _zel_structure_type_t::ZEL_STRUCTURE_TYPE_TRACER_DESC,
        pNext: std::ptr::null(),
        pUserData: std::ptr::null_mut(),
    };
    let mut tracer: zel_tracer_handle_t = std::ptr::null_mut();
    // SAFETY: `desc` and `tracer` are locals; zeInit has run.
    sys::check("zelTracerCreate", unsafe { ze.zelTracerCreate(&desc, &mut tracer) }).map_err(|e| {
        fail(format!("{e}: is ZE_ENABLE_TRACING_LAYER=1 set and libze_tracing_layer.so.1 installed?"))
    })?;
    // SAFETY: `tracer` was just created.
    unsafe { callbacks::register_all(&ze, tracer) }.map_err(|e| fail(e.to_string()))?;
    // zeInit loaded the tracing layer: its code and the agent's are left off launch stacks.
    core.own_code = own_code();
    let flags = wire::FLAG_AGENT_STACKS | wire::FLAG_API_FROM_CALLBACKS;
    core.hello(&wire::Hello::new(sys::loader_version(&ze), flags), &[]);
    core.launches.python.set_enabled(config.opts.python != PythonMode::Off);
    let mut out = vec![Msg::Version(VERSION)];
    let devices = devices::discover(&ze, &mut out);
    devices::clock_pairs(&ze, &devices, &mut out);
    let agent = Agent { ze, core, config, state: Default::default(), devices, exiting: Default::default() };
    let agent = AGENT.get_or_init(|| agent);
    agent.send(&out);
    // SAFETY: the tracer was created above; enabling starts the callbacks.
    sys::check("zelTracerSetEnabled", unsafe { agent.ze.zelTracerSetEnabled(tracer, 1) })
        .map_err(|e| e.to_string())?;
    exit::install(at_exit);
    std::thread::Builder::new()
        .name("xpuprof-ze".into())
        .spawn(reader)
        .map_err(|e| format!("failed to start the reader thread: {e}"))?;
    Ok(())
}

/// Newer loaders can turn the tracing layer on at run time; 1.8 only reads the environment.
fn enable_tracing_layer() {
    // SAFETY: looks a symbol up by name in the loaded objects.
    let f = unsafe { libc::dlsym(libc::RTLD_DEFAULT, c"zelEnableTracingLayer".as_ptr()) };
    if !f.is_null() {
        // SAFETY: `zelEnableTracingLayer(void) -> ze_result_t` in loaders that export it.
        let f: unsafe extern "C" fn() -> ze_result_t = unsafe { std::mem::transmute(f) };
        // SAFETY: no arguments.
        let _ = unsafe { f() };
    }
}

/// The executable ranges of this agent and of the loader's tracing layer.
fn own_code() -> Vec<(u64, u64)> {
    let own = modules::own_path();
    modules::own()
        .iter()
        .filter(|m| Some(&m.path) == own.as_ref() || m.path.contains("libze_tracing_layer"))
        .map(|m| (m.start, m.end))
        .collect()
}

/// The reader thread: immediate work as it completes, clock pairs every 100 ms.
fn reader() {
    INSIDE.with(|c| c.set(true));
    let Some(a) = AGENT.get() else { return };
    for i in 0u64.. {
        std::thread::sleep(Duration::from_millis(5));
        a.tick(i % 20 == 0);
    }
}

/// At exit and on SIGINT/SIGTERM (the kit calls it; it may run twice).
fn at_exit() {
    INSIDE.with(|c| c.set(true));
    if let Some(a) = AGENT.get() {
        a.finish();
    }
}
