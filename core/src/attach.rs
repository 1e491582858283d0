//! `xpuprof attach PID`: a session on a process xpuprof did not start.
//!
//! The sources' `attach(pid, tree)` replaces `prepare` + `start`; the session ends when its
//! window closes (`--duration`), on Ctrl+C, or when the process exits. Then every source stops
//! and detaches, leaving the process running as it found it; xpuprof never signals it, never
//! waits for it as a parent, and its exit code stays its own.

use std::fs::File;
use std::os::fd::AsRawFd;
use std::path::PathBuf;
use std::sync::atomic::AtomicU64;
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use xpuprof_sdk::model::Record;

use crate::config::{ConfigError, FileConfig};
use crate::host::sources::Sources;
use crate::host::{Registry, SearchPath, SourceBatch};
use crate::session::{self, SessionError, SessionOutcome};
use crate::window::{CaptureOptions, Controller, MarkerWindows, Opener, Span};
use crate::{outdir, signals, trigger};

/// Everything `xpuprof attach` needs, resolved from flags and the config file.
#[derive(Debug, Clone)]
pub struct AttachOptions {
    /// The running process.
    pub pid: u32,
    /// Its existing and future descendants too.
    pub tree: bool,
    /// Source plugin names.
    pub sources: Vec<String>,
    /// Sink plugin names.
    pub sinks: Vec<String>,
    /// Output directory.
    pub output_dir: PathBuf,
    /// The config file, if any.
    pub config: Option<FileConfig>,
    /// Where plugins are looked for.
    pub search: SearchPath,
    /// 0 = warnings, 1 = info, 2 = debug.
    pub verbosity: u8,
    /// The window (`--delay`, `--duration`); without a duration it lasts until Ctrl+C or the
    /// process's exit.
    pub capture: CaptureOptions,
}

/// Opens and closes what is due: a trigger (SIGUSR2, `xpuprof trigger`) first, then the timed
/// windows. Called by the waiting loops of `record` and `attach`.
pub fn window_tick(windows: &mut Controller, sources: &mut Sources, failures: &mut Vec<String>) {
    if let Some(len) = trigger::take() {
        windows.trigger(len, sources, failures);
    }
    windows.tick(sources, failures);
}

/// The window controller of a session whose sources started (or attached) just now; with
/// `--capture-range` it follows the windows the sources open at the program's markers.
pub fn start_windows(opts: &CaptureOptions, sources: &Sources, opened: Opener) -> Controller {
    let mut c = Controller::new(opts, Instant::now(), opened);
    if opts.range.is_some() {
        let markers = MarkerWindows::leak();
        sources.watch_windows(markers);
        c.follow_markers(markers);
    }
    c
}

/// Ends the session's windows: logs them and, when the session asked for windows
/// (`windowed`), hands one window record per window to the sinks (before the sources stop).
pub fn end_windows(spans: Vec<Span>, windowed: bool, sources: &Sources) {
    for (i, s) in spans.iter().enumerate() {
        let secs = s.end.saturating_sub(s.start) as f64 / 1e9;
        tracing::info!("capture window {} ({}): {secs:.3}s", i + 1, s.opener.as_str());
    }
    if windowed {
        let records: Vec<Record> = spans.iter().map(|s| Record::Window(s.record())).collect();
        sources.emit_host_records(&records);
    }
}

fn refuse(message: String) -> SessionError {
    SessionError::Config(ConfigError { location: None, message })
}

/// Whether `pid` has exited (gone, or a zombie its parent has not reaped yet).
fn exited(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat.rsplit_once(')').is_some_and(|(_, rest)| rest.trim_start().starts_with(['Z', 'X'])),
        Err(_) => true,
    }
}

/// The lock that keeps two xpuprof sessions from attaching to one process: an exclusive
/// `flock` on `xpuprof-attach-PID-START.lock` in the temporary directory (START: the process's
/// start time, so a reused pid is another lock), removed again when the lock is dropped.
///
/// The name is predictable and the directory shared, so the file is opened without following
/// a link, written only through its descriptor, and a file another user created (a root
/// session's) is locked read-only rather than refused.
#[derive(Debug)]
pub struct TargetLock {
    /// Held open: the lock lasts as long as the descriptor.
    _file: File,
    path: PathBuf,
}

impl Drop for TargetLock {
    fn drop(&mut self) {
        // Removed while still locked: a session that opens the name afterwards creates a new
        // file; one that opened this one before sees it unlinked after its lock and retries.
        let _ = std::fs::remove_file(&self.path);
    }
}

/// The start time of `pid` (clock ticks since boot, field 22 of its stat), 0 when unreadable.
fn start_time(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    // Fields from the state (3rd) on; the start time is the 22nd.
    rest.split_whitespace().nth(19).and_then(|t| t.parse().ok()).unwrap_or(0)
}

fn lock_target(pid: u32) -> Result<TargetLock, SessionError> {
    use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
    let path = std::env::temp_dir().join(format!("xpuprof-attach-{pid}-{}.lock", start_time(pid)));
    let failed = |e: std::io::Error| {
        SessionError::Internal(format!("failed to create the attach lock {}: {e}", path.display()))
    };
    for _ in 0..8 {
        let mut open = std::fs::OpenOptions::new();
        open.read(true).custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC);
        let (file, writable) = match open.clone().write(true).create(true).mode(0o644).open(&path) {
            Ok(f) => (f, true),
            // Another user's lock file (a root session's): lockable read-only.
            Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => {
                (open.open(&path).map_err(failed)?, false)
            }
            Err(e) => return Err(failed(e)),
        };
        // SAFETY: flock on a descriptor we own.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
            let holder = std::fs::read_to_string(&path).unwrap_or_default();
            return Err(refuse(format!(
                "process {pid} is already being profiled by another xpuprof session (pid {}); wait for \
                 it to end or stop it",
                holder.trim()
            )));
        }
        // The holder that dropped its lock removed the name: this file is no lock any more.
        let same =
            |m: std::fs::Metadata| file.metadata().is_ok_and(|f| (f.dev(), f.ino()) == (m.dev(), m.ino()));
        if !std::fs::symlink_metadata(&path).is_ok_and(same) {
            continue;
        }
        if writable {
            use std::os::unix::fs::FileExt;
            let _ = file.set_len(0);
            let _ = file.write_all_at(std::process::id().to_string().as_bytes(), 0);
        }
        return Ok(TargetLock { _file: file, path });
    }
    Err(failed(std::io::Error::other("its file kept being replaced")))
}

/// Marks `pid`, a target this session started, as profiled, so `xpuprof attach` refuses it
/// while the session runs; `None` when that cannot be done (nothing depends on it).
pub fn hold_target(pid: u32) -> Option<TargetLock> {
    lock_target(pid).ok()
}

/// Checks that `pid` can be attached to (it runs, it is not xpuprof itself, no other session
/// holds it) and takes the lock that keeps other sessions off it while the returned file lives.
pub fn check_target(pid: u32) -> Result<TargetLock, SessionError> {
    if pid == 0 || exited(pid) {
        return Err(refuse(format!("failed to attach to process {pid}: no such process")));
    }
    if pid == std::process::id() {
        return Err(refuse("failed to attach: that is this xpuprof's own process".into()));
    }
    lock_target(pid)
}

/// The error of a session no source could attach to `pid`.
pub fn no_source_attached(pid: u32, failures: &[String]) -> SessionError {
    SessionError::Internal(format!(
        "failed to attach to process {pid}: no source could attach ({}); the process was left as it was",
        failures.join("; ")
    ))
}

/// Whether an attach session on `pid` is over: a termination signal came (said once), or the
/// process exited.
pub fn session_over(pid: u32) -> bool {
    if signals::received() > 0 {
        crate::say!("xpuprof: interrupted: detaching from process {pid}");
        return true;
    }
    if exited(pid) {
        crate::say!("xpuprof: process {pid} exited");
        return true;
    }
    false
}

/// Runs an attach session.
pub fn attach(opts: &AttachOptions) -> Result<SessionOutcome, SessionError> {
    signals::install();
    let started = Instant::now();
    let pid = opts.pid;
    let _lock = check_target(pid)?;
    let reg = Registry::discover(&opts.search);
    let source_plugins =
        session::checked_capture_plugins(&reg, &opts.sources, &opts.sinks, opts.config.as_ref())?;
    let out = outdir::prepare(&opts.output_dir)?;
    session::report_removed(&out);
    let command = xpuprof_toolbox::procfs::command_line(pid);
    let start = xpuprof_sdk::clock::now_ns();
    let mut table =
        session::session_table(&opts.output_dir, &command, &opts.sources, &opts.sinks, start, opts.verbosity);
    opts.capture.fill_session(&mut table);
    let mut failures = Vec::new();
    let sinks = session::create_sinks(&reg, &opts.sinks, opts.config.as_ref(), &table, &mut failures)?;
    out.sinks_created()?;

    let (tx, rx) = mpsc::sync_channel::<SourceBatch>(session::SOURCE_QUEUE);
    let plugins = source_plugins.into_iter().map(|(p, t)| (p.clone(), session::create_args(t, &table)));
    let timeout = FileConfig::plugin_timeout(opts.config.as_ref());
    let mut sources = Sources::create(plugins.collect(), &tx, timeout, &mut failures);
    drop(tx);
    let counters: Arc<Vec<AtomicU64>> = Arc::new((0..sources.len()).map(|_| AtomicU64::new(0)).collect());
    let demangle = FileConfig::demangle(opts.config.as_ref());
    let worker = session::spawn_pipeline(rx, sinks, sources.len(), demangle, counters);
    sources.attach(pid, opts.tree, &mut failures);
    if sources.live() == 0 {
        sources.stop(&mut failures);
        let _ = worker.join();
        return Err(no_source_attached(pid, &failures));
    }
    let mut windows = start_windows(&opts.capture, &sources, Opener::Attach);
    let _registered = trigger::register(&opts.output_dir);
    crate::say!("xpuprof: attached to process {pid}{}", if opts.tree { " and its descendants" } else { "" });
    let cpu_during = wait_while_attached(pid, &mut windows, &mut sources, &mut failures);
    end_windows(windows.finish(), true, &sources);
    sources.stop(&mut failures);
    let (stats, sinks) =
        worker.join().map_err(|_| SessionError::Internal("the event pipeline thread panicked".into()))?;
    let late_records = sources.late_records();
    failures.extend(sinks.failures);
    let files = session::finish_outputs(&out, &sinks.files, &mut failures);
    Ok(SessionOutcome {
        target_exit: 0,
        files,
        sources: opts.sources.clone(),
        stats,
        plugin_failures: failures,
        late_records,
        elapsed: started.elapsed(),
        own_cpu: (cpu_during, session::own_cpu_time()),
    })
}

/// Runs the windows until the last one closed, a termination signal came, or the process
/// exited; returns xpuprof's CPU time by then.
fn wait_while_attached(
    pid: u32,
    windows: &mut Controller,
    sources: &mut Sources,
    failures: &mut Vec<String>,
) -> Duration {
    loop {
        window_tick(windows, sources, failures);
        if session_over(pid) || windows.finished(false) {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    session::own_cpu_time()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_target_lock_refuses_a_second_session_follows_no_link_and_is_removed_after() {
        let mut child = std::process::Command::new("sleep").arg("30").spawn().expect("failed to start sleep");
        let pid = child.id();
        let path = std::env::temp_dir().join(format!("xpuprof-attach-{pid}-{}.lock", start_time(pid)));
        let first = lock_target(pid).expect("the first lock");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), std::process::id().to_string());
        let second = lock_target(pid).expect_err("a second lock on the same process");
        assert!(second.to_string().contains("already being profiled"), "{second}");
        drop(first);
        assert!(!path.exists(), "the lock file stays after the session");
        // A link planted at the name is not followed (nothing written through it).
        let victim = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(victim.path(), "keep").unwrap();
        std::os::unix::fs::symlink(victim.path(), &path).unwrap();
        let e = lock_target(pid).expect_err("a lock through a link");
        assert!(e.to_string().contains("failed to create the attach lock"), "{e}");
        assert_eq!(std::fs::read_to_string(victim.path()).unwrap(), "keep");
        let _ = std::fs::remove_file(&path);
        let _ = child.kill();
        let _ = child.wait();
    }
}
