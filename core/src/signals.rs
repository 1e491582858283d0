//! Ctrl+C and termination signals: the target gets them, xpuprof keeps going long enough to
//! write everything recorded so far.

use std::sync::atomic::{AtomicI32, AtomicU32, Ordering};

static TARGET: AtomicI32 = AtomicI32::new(0);
static RECEIVED: AtomicU32 = AtomicU32::new(0);
static LAST: AtomicI32 = AtomicI32::new(0);

extern "C" fn on_signal(sig: libc::c_int, info: *mut libc::siginfo_t, _ctx: *mut libc::c_void) {
    RECEIVED.fetch_add(1, Ordering::SeqCst);
    LAST.store(sig, Ordering::SeqCst);
    // SAFETY: the kernel passes a valid siginfo to SA_SIGINFO handlers.
    let code = unsafe { (*info).si_code };
    let pid = TARGET.load(Ordering::SeqCst);
    // Signals typed at the terminal (si_code > 0, from the kernel) already reached the whole
    // foreground process group, the target included; forward only those sent to us alone.
    if pid > 0 && code <= 0 {
        // SAFETY: kill is async-signal-safe.
        unsafe { libc::kill(pid, sig) };
    }
}

/// Installs the handlers for SIGINT, SIGTERM, SIGHUP and SIGQUIT.
pub fn install() {
    for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT] {
        // SAFETY: a zeroed sigaction is a valid starting point; the handler only touches
        // atomics and calls kill, both async-signal-safe.
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = on_signal as *const () as usize;
            sa.sa_flags = libc::SA_SIGINFO | libc::SA_RESTART;
            libc::sigemptyset(&mut sa.sa_mask);
            libc::sigaction(sig, &sa, std::ptr::null_mut());
        }
    }
}

/// Sets the process that signals are forwarded to.
pub fn set_target(pid: u32) {
    TARGET.store(pid as i32, Ordering::SeqCst);
}

/// Number of termination signals received so far.
pub fn received() -> u32 {
    RECEIVED.load(Ordering::SeqCst)
}

/// The last signal received, 0 if none.
pub fn last() -> i32 {
    LAST.load(Ordering::SeqCst)
}
