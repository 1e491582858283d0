//! Processes that start after an `xpuprof attach --tree` (a launcher's workers): the host finds
//! each new descendant that maps a CUDA runtime or driver and calls [`xpuprof_cupti_follow`] in
//! it through the injector.
//!
//! - CUDA is initialised there already (or the agent runs): a late attach, as
//!   `xpuprof_cupti_attach` does: recorded from the attach on.
//! - CUDA is not initialised yet: the process is *armed*: `CUDA_INJECTION64_PATH` (and
//!   `NVTX_INJECTION64_PATH` when unset) name this agent, and `XPUPROF_CUPTI_SOCKET`/`_OPTS` the
//!   session, so the driver starts the agent at `cuInit` as under `xpuprof record`: every launch
//!   is recorded, and NVTX too when its first call comes after. A thread watches: when CUDA is
//!   initialised and the driver did not start the agent within [`DRIVER_GRACE`] (the variables
//!   were set while `cuInit` had already read them), it attaches late instead; when the session
//!   ends (its socket is gone), it puts the variables back as they were. Children the process
//!   starts meanwhile inherit them and start the agent at their own `cuInit`.
//!
//! A process with `CUDA_INJECTION64_PATH` set to something else is never armed (another tool
//! owns it); it gets the late attach once CUDA is initialised.

use std::ffi::CStr;
use std::os::raw::{c_char, c_int};
use std::path::Path;
use std::time::{Duration, Instant};

use crate::{say, sys, AGENT};

/// How long the watcher waits for the driver's injection after CUDA was initialised.
pub const DRIVER_GRACE: Duration = Duration::from_millis(300);
/// How often the watcher looks.
const POLL: Duration = Duration::from_millis(10);

/// The variables an armed process gets, with the values they had before.
struct Armed {
    vars: Vec<(&'static str, Option<String>)>,
}

impl Armed {
    fn restore(self) {
        for (k, old) in self.vars {
            match old {
                // SAFETY: as in `arm`: the variables are written once, by the watcher thread.
                Some(v) => unsafe { set(k, &v) },
                // SAFETY: as above.
                None => unsafe { unset(k) },
            }
        }
    }
}

/// setenv(3).
///
/// # Safety
/// Like every environment write in a running process, it races with another thread's
/// `setenv`; readers (`getenv`) keep a valid array with glibc.
unsafe fn set(key: &str, value: &str) {
    let (Ok(k), Ok(v)) = (std::ffi::CString::new(key), std::ffi::CString::new(value)) else { return };
    // SAFETY: NUL-terminated strings; the caller's contract.
    unsafe { libc::setenv(k.as_ptr(), v.as_ptr(), 1) };
}

/// unsetenv(3).
///
/// # Safety
/// As [`set`].
unsafe fn unset(key: &str) {
    let Ok(k) = std::ffi::CString::new(key) else { return };
    // SAFETY: a NUL-terminated string; the caller's contract.
    unsafe { libc::unsetenv(k.as_ptr()) };
}

/// Called in a process that started after the session attached (see the module docs): starts
/// the agent now or arms the process so that `cuInit` starts it. Returns 0 when it did one of
/// them, -1 otherwise.
///
/// # Safety
/// `socket` and `opts` are NUL-terminated strings (or null), valid for the call.
#[no_mangle]
pub unsafe extern "C" fn xpuprof_cupti_follow(socket: *const c_char, opts: *const c_char) -> c_int {
    if AGENT.get().is_some() || sys::cuda_initialised() == Some(true) {
        // SAFETY: the caller's contract, passed on.
        return unsafe { crate::session::xpuprof_cupti_attach(socket, opts) };
    }
    let read = |p: *const c_char| {
        // SAFETY: the caller's contract.
        (!p.is_null()).then(|| unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned())
    };
    let (Some(socket), opts) = (read(socket), read(opts).unwrap_or_default()) else { return -1 };
    let armed = arm(&socket, &opts);
    let spawned = std::thread::Builder::new().name("xpuprof-cupti-follow".into()).spawn(move || {
        let _ = std::panic::catch_unwind(move || watch(&socket, &opts, armed));
    });
    if spawned.is_ok() {
        0
    } else {
        -1
    }
}

/// Sets the variables that make `cuInit` start this agent for the session; `None` when another
/// injection is set already or this library's path is unknown.
fn arm(socket: &str, opts: &str) -> Option<Armed> {
    let own = xpuprof_agent_kit::modules::own_path()?;
    let injection = std::env::var("CUDA_INJECTION64_PATH").ok();
    if injection.as_deref().is_some_and(|p| p != own) {
        return None;
    }
    let mut vars = vec![
        ("CUDA_INJECTION64_PATH", own.clone()),
        ("XPUPROF_CUPTI_SOCKET", socket.to_owned()),
        ("XPUPROF_CUPTI_OPTS", opts.to_owned()),
    ];
    if std::env::var_os("NVTX_INJECTION64_PATH").is_none() {
        vars.push(("NVTX_INJECTION64_PATH", own));
    }
    let before = vars.iter().map(|(k, _)| (*k, std::env::var(k).ok())).collect();
    for (k, v) in &vars {
        // SAFETY: written once, from this one call, before any thread of ours reads them.
        unsafe { set(k, v) };
    }
    Some(Armed { vars: before })
}

/// Waits for CUDA in an armed (or not armable) process: the driver starts the agent, or CUDA
/// comes up without it (attach late); the variables are put back when the session ends (its
/// socket is gone), so children started later do not inherit them.
fn watch(socket: &str, opts: &str, armed: Option<Armed>) {
    let mut initialised_at: Option<Instant> = None;
    let mut started = false;
    while Path::new(socket).exists() {
        if !started && AGENT.get().is_some() {
            started = true;
        }
        if !started && sys::cuda_initialised() == Some(true) {
            let since = *initialised_at.get_or_insert_with(Instant::now);
            if armed.is_none() || since.elapsed() >= DRIVER_GRACE {
                late(socket, opts);
                started = true;
            }
        }
        std::thread::sleep(if started { POLL * 10 } else { POLL });
    }
    if let Some(a) = armed {
        a.restore();
    }
}

fn late(socket: &str, opts: &str) {
    let (Ok(s), Ok(o)) = (std::ffi::CString::new(socket), std::ffi::CString::new(opts)) else { return };
    // SAFETY: two valid NUL-terminated strings for the call.
    if unsafe { crate::session::xpuprof_cupti_attach(s.as_ptr(), o.as_ptr()) } != 0 {
        say("cannot start the attach thread for a process that initialised CUDA after the attach");
    }
}
