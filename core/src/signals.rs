//! Ctrl+C and termination signals: the target gets them, xpuprof keeps going long enough to
//! write everything recorded so far. A second one means "hurry": xpuprof stops waiting for the
//! target and gives every plugin call still running only [`HURRY_GRACE`] more.

use std::sync::atomic::{AtomicI32, AtomicU32, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// How long a plugin call may still run once a second signal asked xpuprof to hurry.
pub const HURRY_GRACE: Duration = Duration::from_secs(1);

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

/// The signals xpuprof catches and forwards to the target.
pub const FORWARDED: [libc::c_int; 4] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT];

/// A signal handler that reads the sender's `siginfo_t`.
pub(crate) type Handler = extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void);

/// Catches `sig` with `handler` from now on (`SA_SIGINFO`, system calls restarted). `handler`
/// must do only what is async-signal-safe.
pub(crate) fn catch(sig: libc::c_int, handler: Handler) -> std::io::Result<()> {
    // SAFETY: a zeroed sigaction is a valid starting point; the handlers given here only touch
    // atomics and call kill, both async-signal-safe.
    let rc = unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = handler as *const () as usize;
        sa.sa_flags = libc::SA_SIGINFO | libc::SA_RESTART;
        libc::sigemptyset(&mut sa.sa_mask);
        libc::sigaction(sig, &sa, std::ptr::null_mut())
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// Installs the handlers for the [`FORWARDED`] signals.
pub fn install() {
    for sig in FORWARDED {
        if let Err(e) = catch(sig, on_signal) {
            tracing::warn!("signal {sig} will not be forwarded to the target (sigaction: {e})");
        }
    }
}

/// Sets the process that signals are forwarded to; a signal that arrived before there was a
/// target is forwarded to it now.
pub fn set_target(pid: u32) {
    TARGET.store(pid as i32, Ordering::SeqCst);
    let sig = last();
    if sig != 0 {
        // SAFETY: kill has no memory preconditions; `pid` is our own child.
        unsafe { libc::kill(pid as i32, sig) };
    }
}

/// Number of termination signals received so far.
pub fn received() -> u32 {
    RECEIVED.load(Ordering::SeqCst)
}

/// The last signal received, 0 if none.
pub fn last() -> i32 {
    LAST.load(Ordering::SeqCst)
}

/// When xpuprof first saw a second termination signal (Ctrl+C twice, SIGTERM twice), if it
/// has: from then on it writes what it has and exits within a few seconds.
pub fn hurry_since() -> Option<Instant> {
    static SINCE: OnceLock<Instant> = OnceLock::new();
    if let Some(t) = SINCE.get() {
        return Some(*t);
    }
    (received() >= 2).then(|| *SINCE.get_or_init(Instant::now))
}

/// The moment a plugin call that started at `since` is overdue: `timeout` after it started, or
/// [`HURRY_GRACE`] after a second signal, whichever comes first.
pub fn call_deadline(since: Instant, timeout: Duration) -> Instant {
    let normal = since + timeout;
    match hurry_since() {
        Some(h) => normal.min(since.max(h) + HURRY_GRACE),
        None => normal,
    }
}
