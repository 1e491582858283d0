//! Flushing at the end: `atexit`, and SIGINT/SIGTERM (the handler only wakes a watcher thread,
//! which flushes and then lets the signal take its course).

use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::Once;
use std::time::Duration;

use crate::channel::Chunk;
use crate::{wire, Agent};

static INSTALL: Once = Once::new();
static FINISH: Once = Once::new();
static PIPE_W: AtomicI32 = AtomicI32::new(-1);
static mut OLD: [Option<libc::sigaction>; 2] = [None, None];
const SIGNALS: [libc::c_int; 2] = [libc::SIGINT, libc::SIGTERM];

/// Installs the exit hooks (once).
pub fn install(_a: &'static Agent) {
    INSTALL.call_once(|| {
        // SAFETY: `at_exit` is an `extern "C" fn()` that never unwinds.
        unsafe { libc::atexit(at_exit) };
        install_signals();
    });
}

extern "C" fn at_exit() {
    if let Some(a) = crate::agent() {
        finish(a);
    }
}

/// Flushes CUPTI and the launch buffers, sends the totals and waits for the sender (once).
pub fn finish(a: &Agent) {
    FINISH.call_once(|| {
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let _ = a.lib.flush_all(crate::sys::ffi::CUpti_ActivityFlag::CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
            crate::drain_launches(a);
            let mut m = Vec::new();
            if let Ok(n) = a.lib.dropped(std::ptr::null_mut(), 0) {
                if n > 0 {
                    let at = wire::begin_message(&mut m, wire::MSG_DROPPED);
                    m.extend_from_slice(&(n as u64).to_le_bytes());
                    m.extend_from_slice(&xpuprof_sdk::clock::now_ns().to_le_bytes());
                    wire::end_message(&mut m, at);
                }
            }
            let (launches, stacks) = a.launches.totals();
            let at = wire::begin_message(&mut m, wire::MSG_BYE);
            m.extend_from_slice(&launches.to_le_bytes());
            m.extend_from_slice(&stacks.to_le_bytes());
            wire::end_message(&mut m, at);
            a.channel.push(Chunk::Bytes(m));
            a.channel.close();
            a.channel.wait_idle(Duration::from_secs(10));
            if let Ok(mut s) = a.sender.lock() {
                if let Some(h) = s.take() {
                    let _ = h.join();
                }
            }
            if a.config.verbose {
                crate::say(&format!(
                    "{launches} launch sites, {stacks} distinct stacks, {} bytes sent, {} records dropped by CUPTI",
                    a.channel.written.load(Ordering::Relaxed),
                    a.dropped.load(Ordering::Relaxed)
                ));
            }
        }));
    });
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
    let _ = std::thread::Builder::new().name("xpuprof-cupti-sig".into()).spawn(move || {
        let mut b = 0u8;
        // SAFETY: reading one byte into a local from our own pipe.
        let n = unsafe { libc::read(rfd, (&mut b as *mut u8).cast(), 1) };
        if n != 1 {
            return;
        }
        let sig = b as libc::c_int;
        if let Some(a) = crate::agent() {
            finish(a);
        }
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
