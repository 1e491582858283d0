//! Flushing at the end: `atexit`, and SIGINT/SIGTERM (the handler only writes one byte to a
//! pipe; a watcher thread then runs the agent's flush and lets the signal take its course: the
//! program's own handler is chained, the default action re-raised).

use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::{Once, OnceLock};

static INSTALL: Once = Once::new();
static FINISH: OnceLock<fn()> = OnceLock::new();
static PIPE_W: AtomicI32 = AtomicI32::new(-1);
static mut OLD: [Option<libc::sigaction>; 2] = [None, None];
const SIGNALS: [libc::c_int; 2] = [libc::SIGINT, libc::SIGTERM];

/// Runs `finish` at `exit` and on SIGINT/SIGTERM (installed once per process; later calls are
/// ignored). `finish` must be idempotent: it may run at a signal and again at exit.
pub fn install(finish: fn()) {
    INSTALL.call_once(|| {
        let _ = FINISH.set(finish);
        // SAFETY: `at_exit` is an `extern "C" fn()` that never unwinds.
        unsafe { libc::atexit(at_exit) };
        install_signals();
    });
}

fn run_finish() {
    if let Some(f) = FINISH.get() {
        let _ = std::panic::catch_unwind(f);
    }
}

extern "C" fn at_exit() {
    run_finish();
}

extern "C" fn on_signal(sig: libc::c_int) {
    let fd = PIPE_W.load(Ordering::Relaxed);
    if fd >= 0 {
        let b = sig as u8;
        // SAFETY: write(2) is async-signal-safe; `b` is a valid one-byte buffer.
        unsafe { libc::write(fd, (&b as *const u8).cast(), 1) };
    }
    // Chain to the program's own handler, if it had one.
    let i = SIGNALS.iter().position(|&s| s == sig).unwrap_or(0);
    // SAFETY: OLD is written once before the handlers are installed and only read afterwards.
    let old = unsafe { (*std::ptr::addr_of!(OLD))[i] };
    if let Some(old) = old {
        let h = old.sa_sigaction;
        if h != libc::SIG_DFL && h != libc::SIG_IGN {
            // SAFETY: `h` is the handler the program installed for this signal (non-SA_SIGINFO
            // handlers take just the signal number; SA_SIGINFO ones ignore the missing args).
            let f: extern "C" fn(libc::c_int) = unsafe { std::mem::transmute(h) };
            f(sig);
        }
    }
}

fn install_signals() {
    let mut fds = [0; 2];
    // SAFETY: `fds` is a valid two-element array.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return;
    }
    PIPE_W.store(fds[1], Ordering::Relaxed);
    let rfd = fds[0];
    for (i, &sig) in SIGNALS.iter().enumerate() {
        // SAFETY: zeroed sigaction is a valid "query" argument; the out-pointer is a local.
        let mut old: libc::sigaction = unsafe { std::mem::zeroed() };
        // SAFETY: querying the current action.
        if unsafe { libc::sigaction(sig, std::ptr::null(), &mut old) } != 0
            || old.sa_sigaction == libc::SIG_IGN
        {
            continue;
        }
        // SAFETY: single-threaded with respect to OLD: written here before our handler exists.
        unsafe { (*std::ptr::addr_of_mut!(OLD))[i] = Some(old) };
        // SAFETY: a zeroed sigaction with our handler and an empty mask is valid.
        let mut act: libc::sigaction = unsafe { std::mem::zeroed() };
        act.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as usize;
        act.sa_flags = libc::SA_RESTART;
        // SAFETY: installing a valid handler.
        unsafe { libc::sigaction(sig, &act, std::ptr::null_mut()) };
    }
    let _ = std::thread::Builder::new().name("xpuprof-agent-sig".into()).spawn(move || {
        let mut b = 0u8;
        // SAFETY: reading one byte into a local from our own pipe.
        let n = unsafe { libc::read(rfd, (&mut b as *mut u8).cast(), 1) };
        if n != 1 {
            return;
        }
        let sig = b as libc::c_int;
        run_finish();
        let i = SIGNALS.iter().position(|&s| s == sig).unwrap_or(0);
        // SAFETY: read-only access after installation.
        let old = unsafe { (*std::ptr::addr_of!(OLD))[i] };
        if old.is_some_and(|o| o.sa_sigaction == libc::SIG_DFL) {
            // SAFETY: restoring the default action and re-raising ends the process as the
            // signal would have without us.
            unsafe {
                libc::signal(sig, libc::SIG_DFL);
                libc::raise(sig);
            }
        }
    });
}
