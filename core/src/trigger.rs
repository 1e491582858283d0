//! On-demand windows: `xpuprof trigger` and SIGUSR2.
//!
//! A running session registers itself in a per-user folder (`xpuprof-UID/sessions/PID` under
//! the temporary directory, holding its output directory) and catches SIGUSR2. `xpuprof trigger`
//! finds the session (by pid, by output directory, or the only one running) and sends it
//! SIGUSR2 with the window's length in milliseconds as the signal's value (`sigqueue`); a plain
//! `kill -USR2` opens a window of the session's `--duration` (10 s without one).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// No trigger pending.
const NONE: u64 = u64::MAX;
/// The pending trigger: window length in ms, 0 for "the session's default".
static PENDING: AtomicU64 = AtomicU64::new(NONE);

extern "C" fn on_usr2(_sig: libc::c_int, info: *mut libc::siginfo_t, _ctx: *mut libc::c_void) {
    // SAFETY: the kernel passes a valid siginfo to SA_SIGINFO handlers; reading the value of a
    // queued signal (SI_QUEUE) is what sigqueue(3) documents; other senders leave it zero.
    let ms = unsafe {
        if (*info).si_code == libc::SI_QUEUE {
            (*info).si_value().sival_ptr as usize as u64
        } else {
            0
        }
    };
    PENDING.store(ms, Ordering::SeqCst);
}

/// Catches SIGUSR2 (a window request) from now on.
pub fn install() {
    if let Err(e) = crate::signals::catch(libc::SIGUSR2, on_usr2) {
        tracing::warn!(
            "neither SIGUSR2 nor `xpuprof trigger` can open capture windows in this session (sigaction: {e})"
        );
    }
}

/// A window request received since the last call: `Some(None)` for the session's default
/// length, `Some(Some(len))` for a length the trigger gave.
pub fn take() -> Option<Option<Duration>> {
    match PENDING.swap(NONE, Ordering::SeqCst) {
        NONE => None,
        0 => Some(None),
        ms => Some(Some(Duration::from_millis(ms))),
    }
}

/// The folder running sessions register in.
fn registry_dir() -> PathBuf {
    // SAFETY: getuid has no preconditions.
    let uid = unsafe { libc::getuid() };
    std::env::temp_dir().join(format!("xpuprof-{uid}")).join("sessions")
}

/// This session's entry in the registry; removed when dropped.
#[derive(Debug)]
pub struct Registration {
    path: PathBuf,
}

/// Catches SIGUSR2 and registers this process as a session writing to `output_dir`, so
/// `xpuprof trigger` finds it.
/// Failing to register is not fatal (a warning: SIGUSR2 by pid still works).
pub fn register(output_dir: &Path) -> Option<Registration> {
    install();
    let dir = registry_dir();
    let out = std::fs::canonicalize(output_dir).unwrap_or_else(|_| output_dir.to_owned());
    let path = dir.join(std::process::id().to_string());
    let r =
        std::fs::create_dir_all(&dir).and_then(|()| std::fs::write(&path, out.to_string_lossy().as_bytes()));
    match r {
        Ok(()) => Some(Registration { path }),
        Err(e) => {
            tracing::warn!("failed to register the session in {} for `xpuprof trigger`: {e}", dir.display());
            None
        }
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

fn alive(pid: i32) -> bool {
    // SAFETY: signal 0 only checks that the process exists and may be signalled.
    unsafe { libc::kill(pid, 0) == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM) }
}

/// The running sessions: (pid, output directory).
fn sessions() -> Vec<(i32, PathBuf)> {
    let Ok(entries) = std::fs::read_dir(registry_dir()) else { return Vec::new() };
    let mut out = Vec::new();
    for e in entries.filter_map(Result::ok) {
        let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<i32>().ok()) else { continue };
        if !alive(pid) {
            let _ = std::fs::remove_file(e.path());
            continue;
        }
        let dir = std::fs::read_to_string(e.path()).unwrap_or_default();
        out.push((pid, PathBuf::from(dir)));
    }
    out.sort();
    out
}

/// Finds the session `target` names: a pid, an output directory, or (`None`) the only one.
pub fn find(target: Option<&str>) -> Result<i32, String> {
    let running = sessions();
    let Some(t) = target else {
        return match running.as_slice() {
            [(pid, _)] => Ok(*pid),
            [] => Err("no xpuprof session is running (of this user); start one with --start-paused".into()),
            many => Err(format!(
                "{} xpuprof sessions are running ({}); name one by pid or output directory",
                many.len(),
                many.iter().map(|(p, d)| format!("{p}: {}", d.display())).collect::<Vec<_>>().join(", ")
            )),
        };
    };
    if let Ok(pid) = t.parse::<i32>() {
        return if alive(pid) { Ok(pid) } else { Err(format!("no process {pid} is running")) };
    }
    let want =
        std::fs::canonicalize(t).map_err(|e| format!("failed to find the output directory {t}: {e}"))?;
    running
        .into_iter()
        .find(|(_, d)| *d == want)
        .map(|(p, _)| p)
        .ok_or_else(|| format!("no running xpuprof session writes to {}", want.display()))
}

/// Asks session `pid` to open a window of `len` (its default when `None`).
pub fn send(pid: i32, len: Option<Duration>) -> Result<(), String> {
    let ms = len.map_or(0, |d| d.as_millis().clamp(1, u128::from(u32::MAX)) as usize);
    let value = libc::sigval { sival_ptr: ms as *mut libc::c_void };
    // SAFETY: sigqueue takes a pid, a signal number and a value; no memory is shared.
    let r = unsafe { libc::sigqueue(pid, libc::SIGUSR2, value) };
    if r == 0 {
        Ok(())
    } else {
        let e = std::io::Error::last_os_error();
        let hint =
            if e.raw_os_error() == Some(libc::EPERM) { " (run as the session's user, or root)" } else { "" };
        Err(format!("failed to signal the xpuprof session {pid}: {e}{hint}"))
    }
}
