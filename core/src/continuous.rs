//! Continuous mode: `xpuprof record --every INTERVAL --duration DUR [--keep N]`, and the same on
//! a running process, `xpuprof attach PID --every INTERVAL --duration DUR [--keep N]`.
//!
//! One window of DUR every INTERVAL, each written as a complete output directory of its own
//! under `-o`, named by its UTC start time (`2026-11-28T18-44-03.250Z`), with `windows.json` listing
//! them; beyond `--keep N` the oldest are removed (only directories this session created).
//!
//! The sources run once (started, or attached), dormant between windows (GPU agents detached,
//! CPU sampling off). The pipeline runs once too (session-wide
//! interning); its sinks are swapped per window: each window's sinks are created fresh, first
//! given every definition delivered so far (strings, processes, stacks: what the window's
//! events refer to), and finished when the window closes.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, SyncSender};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use xpuprof_sdk::model::Record;

use crate::attach::AttachOptions;
use crate::config::FileConfig;
use crate::host::sources::Sources;
use crate::host::{Registry, SourceBatch};
use crate::pipeline::sinks::{SinkResults, Sinks};
use crate::pipeline::{Pipeline, PipelineStats};
use crate::runas::RunAs;
use crate::session::{self, RecordOptions, SessionError, SessionOutcome, TICK};
use crate::window::Span;
use crate::{outdir, signals, target};

/// A change of sinks the pipeline thread applies between two batches.
enum Rotation {
    /// A window opened: deliver to these sinks.
    Open(Sinks),
    /// The window closed: finish the sinks and send back what they wrote.
    Close(SyncSender<SinkResults>),
}

/// The pipeline thread of a continuous session.
fn spawn_pipeline(
    rx: Receiver<SourceBatch>,
    rotations: Receiver<Rotation>,
    n_sources: usize,
    demangle: bool,
    counters: Arc<Vec<AtomicU64>>,
) -> std::thread::JoinHandle<PipelineStats> {
    std::thread::Builder::new()
        .name("xpuprof-pipeline".into())
        .spawn(move || {
            let mut p = Pipeline::new(n_sources, true);
            p.set_demangle(demangle);
            let mut out = Output { sinks: None, definitions: Vec::new() };
            let mut last_tick = Instant::now();
            loop {
                let batch = match rx.recv_timeout(TICK) {
                    Ok(b) => Some(b),
                    Err(RecvTimeoutError::Timeout) => None,
                    Err(RecvTimeoutError::Disconnected) => break,
                };
                if let Some(b) = &batch {
                    if let Some(c) = counters.get(b.source) {
                        c.fetch_add(xpuprof_sdk::codec::count_records(&b.bytes), Ordering::Relaxed);
                    }
                }
                // A window that opened before this batch was emitted gets it (its sinks are
                // installed first); one that closed after it was emitted gets it too (pushed
                // before the sinks finish).
                let mut batch = batch;
                while let Ok(r) = rotations.try_recv() {
                    if matches!(r, Rotation::Close(_)) {
                        if let Some(b) = batch.take() {
                            p.push(b.source, &b.bytes, &mut |r, d| out.deliver(r, d));
                            b.recycle();
                        }
                    }
                    out.rotate(r, &mut p, &rx);
                }
                if let Some(b) = batch {
                    p.push(b.source, &b.bytes, &mut |r, d| out.deliver(r, d));
                    b.recycle();
                }
                // As a recording session's pipeline does: at least every TICK the open window's
                // sinks get an empty batch, so they flush what waited too long (the archive's
                // chunks, which a kill -9 would otherwise take with it).
                if last_tick.elapsed() >= TICK {
                    p.tick(&mut |r, d| out.deliver(r, d));
                    if let Some(s) = &mut out.sinks {
                        s.deliver(&mut Vec::new());
                    }
                    last_tick = Instant::now();
                }
            }
            while let Ok(r) = rotations.try_recv() {
                out.rotate(r, &mut p, &rx);
            }
            p.stats()
        })
        .expect("failed to spawn the pipeline thread")
}

/// The current window's sinks, and every definition delivered so far.
struct Output {
    sinks: Option<Sinks>,
    definitions: Vec<Record>,
}

impl Output {
    fn deliver(&mut self, records: &mut Vec<Record>, definitions: bool) {
        if definitions {
            self.definitions.extend(records.iter().filter(|r| r.is_definition()).cloned());
        }
        match &mut self.sinks {
            Some(s) => s.deliver_marked(records, definitions),
            None => records.clear(),
        }
    }

    fn rotate(&mut self, r: Rotation, p: &mut Pipeline, rx: &Receiver<SourceBatch>) {
        match r {
            Rotation::Open(mut sinks) => {
                let mut defs = self.definitions.clone();
                sinks.deliver_marked(&mut defs, true);
                self.sinks = Some(sinks);
            }
            Rotation::Close(done) => {
                // Everything the sources flushed when the window closed is queued already.
                while let Ok(b) = rx.try_recv() {
                    p.push(b.source, &b.bytes, &mut |r, d| self.deliver(r, d));
                    b.recycle();
                }
                p.flush(&mut |r, d| self.deliver(r, d));
                let results = self.sinks.take().map(Sinks::finish).unwrap_or_default();
                let _ = done.send(results);
            }
        }
    }
}

/// Civil UTC date and time of `t` to the millisecond, for directory names
/// (`2026-11-28T18-44-03.250Z`: windows a second apart still get names of their own).
fn utc_name(t: SystemTime) -> String {
    let since = t.duration_since(SystemTime::UNIX_EPOCH).unwrap_or_default();
    let (secs, ms) = (since.as_secs() as i64, since.subsec_millis());
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Days to civil date (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}T{:02}-{:02}-{:02}.{ms:03}Z", rem / 3600, rem / 60 % 60, rem % 60)
}

/// One finished window in the index.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
struct IndexEntry {
    dir: String,
    start_ns: u64,
    end_ns: u64,
    files: Vec<String>,
}

/// The windows written so far (`windows.json`), pruned to the newest `keep`.
struct Index {
    base: PathBuf,
    keep: Option<usize>,
    entries: Vec<IndexEntry>,
}

impl Index {
    fn add(&mut self, entry: IndexEntry) {
        self.entries.push(entry);
        if let Some(keep) = self.keep {
            while self.entries.len() > keep.max(1) {
                let old = self.entries.remove(0);
                if let Err(e) = std::fs::remove_dir_all(self.base.join(&old.dir)) {
                    tracing::warn!("failed to remove the old window {}: {e}", old.dir);
                }
            }
        }
        let path = self.base.join("windows.json");
        let text = serde_json::to_string_pretty(&self.entries).unwrap_or_default();
        if let Err(e) = std::fs::write(&path, text + "\n") {
            tracing::warn!("failed to write the window index {}: {e}", path.display());
        }
    }
}

/// What one window needs to create and finish its outputs.
struct Windows<'r> {
    reg: &'r Registry,
    sinks: &'r [String],
    config: Option<&'r FileConfig>,
    table: toml::Table,
    rotations: SyncSender<Rotation>,
    index: Index,
    open: Option<(Span, outdir::OutputDir, String)>,
    failures: Vec<String>,
    files: Vec<String>,
}

impl Windows<'_> {
    fn open(&mut self, sources: &mut Sources) -> Result<(), SessionError> {
        let name = utc_name(SystemTime::now());
        let dir = self.index.base.join(&name);
        let out = outdir::prepare(&dir)?;
        let mut table = self.table.clone();
        table.insert("output_dir".into(), toml::Value::String(dir.display().to_string()));
        let sinks = session::create_sinks(self.reg, self.sinks, self.config, &table, &mut self.failures)?;
        out.sinks_created()?;
        let _ = self.rotations.send(Rotation::Open(sinks));
        let start = xpuprof_sdk::clock::now_ns();
        for (n, why) in sources.set_capture(true, &mut self.failures) {
            tracing::warn!("source `{n}` records the whole run, not only the capture windows ({why})");
        }
        let span = Span { start, end: 0, opener: crate::window::Opener::Every };
        self.open = Some((span, out, name));
        Ok(())
    }

    fn close(&mut self, sources: &mut Sources) {
        let Some((mut span, out, name)) = self.open.take() else { return };
        sources.set_capture(false, &mut self.failures);
        span.end = xpuprof_sdk::clock::now_ns();
        sources.emit_host_records(&[Record::Window(span.record())]);
        let (tx, rx) = mpsc::sync_channel(1);
        let _ = self.rotations.send(Rotation::Close(tx));
        let results = rx.recv().unwrap_or_default();
        self.failures.extend(results.failures);
        let files = session::finish_outputs(&out, &results.files, &mut self.failures);
        crate::say!("xpuprof: window {name}: wrote {} file(s)", files.len());
        self.files.extend(files.iter().cloned());
        self.index.add(IndexEntry { dir: name, start_ns: span.start, end_ns: span.end, files });
        // Only files still there (`--keep` removed the oldest windows).
        self.files.retain(|f| Path::new(f).exists());
    }
}

/// Runs a continuous session (`opts.capture.every` set).
pub fn record(opts: &RecordOptions) -> Result<SessionOutcome, SessionError> {
    signals::install();
    let started = Instant::now();
    let every = opts.capture.every.unwrap_or(Duration::from_secs(60));
    let length = opts.capture.duration.unwrap_or(every).min(every);
    let reg = Registry::discover(&opts.search);
    let source_plugins =
        session::checked_capture_plugins(&reg, &opts.sources, &opts.sinks, opts.config.as_ref())?;
    let program = target::resolve(&opts.command[0])?;
    let run_as = RunAs::from_sudo(opts.keep_root).map_err(SessionError::Internal)?;
    let base = opts.output_dir.clone();
    create_base(&base)?;
    let start = xpuprof_sdk::clock::now_ns();
    let mut table =
        session::session_table(&base, &opts.command, &opts.sources, &opts.sinks, start, opts.verbosity);
    table.insert("start_paused".into(), toml::Value::Boolean(true));
    let mut failures = Vec::new();
    let (tx, rx) = mpsc::sync_channel::<SourceBatch>(session::SOURCE_QUEUE);
    let plugins = source_plugins.into_iter().map(|(p, t)| (p.clone(), session::create_args(t, &table)));
    let timeout = FileConfig::plugin_timeout(opts.config.as_ref());
    let mut sources = Sources::create(plugins.collect(), &tx, timeout, &mut failures);
    drop(tx);
    let mut env = sources.prepare(&mut failures);
    if let Some(r) = &run_as {
        env.extend(r.env());
    }
    let counters: Arc<Vec<AtomicU64>> = Arc::new((0..sources.len()).map(|_| AtomicU64::new(0)).collect());
    let (rot_tx, rot_rx) = mpsc::sync_channel(4);
    let demangle = FileConfig::demangle(opts.config.as_ref());
    let worker = spawn_pipeline(rx, rot_rx, sources.len(), demangle, Arc::clone(&counters));
    let index = Index { base: base.clone(), keep: opts.capture.keep, entries: Vec::new() };
    let mut w = Windows {
        reg: &reg,
        sinks: &opts.sinks,
        config: opts.config.as_ref(),
        table,
        rotations: rot_tx,
        index,
        open: None,
        failures,
        files: Vec::new(),
    };

    target::become_subreaper();
    let held = target::spawn_held(&program, &opts.command, &env, run_as.as_ref())?;
    signals::set_target(held.pid);
    sources.start(held.pid, &mut w.failures);
    let pid = match held.release() {
        Ok(pid) => pid,
        Err(e) => {
            sources.stop(&mut w.failures);
            drop(w);
            let _ = worker.join();
            return Err(e.into());
        }
    };
    let clock = Clock { every, length, delay: opts.capture.delay.unwrap_or_default() };
    let (target_exit, error) = run_windows(&mut w, &mut sources, &clock, || reap(pid));
    let mut failures = std::mem::take(&mut w.failures);
    sources.stop(&mut failures);
    let files = std::mem::take(&mut w.files);
    drop(w);
    let stats =
        worker.join().map_err(|_| SessionError::Internal("the event pipeline thread panicked".into()))?;
    if let Some(e) = error {
        failures.push(format!("failed to open a capture window: {e}"));
    }
    Ok(SessionOutcome {
        target_exit,
        files,
        sources: opts.sources.clone(),
        stats,
        plugin_failures: failures,
        late_records: sources.late_records(),
        elapsed: started.elapsed(),
        own_cpu: (session::own_cpu_time(), session::own_cpu_time()),
    })
}

/// When windows open and how long they last.
struct Clock {
    every: Duration,
    length: Duration,
    delay: Duration,
}

/// Opens a window every `clock.every` (the first after `clock.delay`) and closes it after
/// `clock.length`, until `ended` gives the session's exit code; closes the open window then.
/// Returns that code and the error that stopped windows from opening, if one did.
fn run_windows(
    w: &mut Windows<'_>,
    sources: &mut Sources,
    clock: &Clock,
    mut ended: impl FnMut() -> Option<i32>,
) -> (i32, Option<SessionError>) {
    let mut next_open = Instant::now() + clock.delay;
    let mut close_at = None;
    let mut error = None;
    let code = loop {
        if let Some(code) = ended() {
            break code;
        }
        let now = Instant::now();
        if close_at.is_some_and(|t| now >= t) {
            close_at = None;
            w.close(sources);
        } else if close_at.is_none() && now >= next_open && error.is_none() {
            next_open += clock.every;
            match w.open(sources) {
                Ok(()) => close_at = Some(now + clock.length),
                Err(e) => error = Some(e),
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    w.close(sources);
    (code, error)
}

/// Runs a continuous session on a running process (`xpuprof attach PID --every ...`): the
/// sources attach dormant, a window opens every INTERVAL; the session ends on Ctrl+C or when
/// the process exits, and detaches, leaving the process running as it found it.
pub fn attach(opts: &AttachOptions) -> Result<SessionOutcome, SessionError> {
    signals::install();
    let started = Instant::now();
    let pid = opts.pid;
    let _lock = crate::attach::check_target(pid)?;
    let every = opts.capture.every.unwrap_or(Duration::from_secs(60));
    let length = opts.capture.duration.unwrap_or(every).min(every);
    let reg = Registry::discover(&opts.search);
    let source_plugins =
        session::checked_capture_plugins(&reg, &opts.sources, &opts.sinks, opts.config.as_ref())?;
    let base = opts.output_dir.clone();
    create_base(&base)?;
    let command = xpuprof_toolbox::procfs::command_line(pid);
    let start = xpuprof_sdk::clock::now_ns();
    let mut table =
        session::session_table(&base, &command, &opts.sources, &opts.sinks, start, opts.verbosity);
    table.insert("start_paused".into(), toml::Value::Boolean(true));
    let mut failures = Vec::new();
    let (tx, rx) = mpsc::sync_channel::<SourceBatch>(session::SOURCE_QUEUE);
    let plugins = source_plugins.into_iter().map(|(p, t)| (p.clone(), session::create_args(t, &table)));
    let timeout = FileConfig::plugin_timeout(opts.config.as_ref());
    let mut sources = Sources::create(plugins.collect(), &tx, timeout, &mut failures);
    drop(tx);
    let counters: Arc<Vec<AtomicU64>> = Arc::new((0..sources.len()).map(|_| AtomicU64::new(0)).collect());
    let (rot_tx, rot_rx) = mpsc::sync_channel(4);
    let demangle = FileConfig::demangle(opts.config.as_ref());
    let worker = spawn_pipeline(rx, rot_rx, sources.len(), demangle, Arc::clone(&counters));
    sources.attach(pid, opts.tree, &mut failures);
    if sources.live() == 0 {
        sources.stop(&mut failures);
        let _ = worker.join();
        return Err(crate::attach::no_source_attached(pid, &failures));
    }
    let index = Index { base: base.clone(), keep: opts.capture.keep, entries: Vec::new() };
    let mut w = Windows {
        reg: &reg,
        sinks: &opts.sinks,
        config: opts.config.as_ref(),
        table,
        rotations: rot_tx,
        index,
        open: None,
        failures,
        files: Vec::new(),
    };
    crate::say!(
        "xpuprof: attached to process {pid}{}: a {length:?} window every {every:?}, dormant between them",
        if opts.tree { " and its descendants" } else { "" }
    );
    let clock = Clock { every, length, delay: opts.capture.delay.unwrap_or_default() };
    let (_, error) =
        run_windows(&mut w, &mut sources, &clock, || crate::attach::session_over(pid).then_some(0));
    let mut failures = std::mem::take(&mut w.failures);
    sources.stop(&mut failures);
    let files = std::mem::take(&mut w.files);
    drop(w);
    let stats =
        worker.join().map_err(|_| SessionError::Internal("the event pipeline thread panicked".into()))?;
    if let Some(e) = error {
        failures.push(format!("failed to open a capture window: {e}"));
    }
    Ok(SessionOutcome {
        target_exit: 0,
        files,
        sources: opts.sources.clone(),
        stats,
        plugin_failures: failures,
        late_records: sources.late_records(),
        elapsed: started.elapsed(),
        own_cpu: (session::own_cpu_time(), session::own_cpu_time()),
    })
}

fn create_base(base: &Path) -> Result<(), SessionError> {
    std::fs::create_dir_all(base).map_err(|e| {
        SessionError::Internal(format!("failed to create the output directory {}: {e}", base.display()))
    })
}

/// The target's exit code once it and every descendant it left are gone (a second Ctrl+C stops
/// waiting for the descendants); `None` while any runs.
fn reap(pid: u32) -> Option<i32> {
    static EXIT: AtomicU64 = AtomicU64::new(u64::MAX);
    loop {
        let mut status = 0;
        // SAFETY: reaping any of our children (the target and orphans we are subreaper of).
        let r = unsafe { libc::waitpid(-1, &mut status, libc::WNOHANG) };
        if r == pid as i32 {
            EXIT.store(target::exit_code_of(status) as u32 as u64, Ordering::SeqCst);
            continue;
        }
        if r > 0 {
            continue;
        }
        let exit = EXIT.load(Ordering::SeqCst);
        let done = r < 0 || (exit != u64::MAX && signals::hurry_since().is_some());
        return done.then_some(if exit == u64::MAX { 125 } else { exit as u32 as i32 });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn window_directories_are_named_by_their_utc_start() {
        let t = SystemTime::UNIX_EPOCH + Duration::from_millis(1_795_891_443_250);
        assert_eq!(utc_name(t), "2026-11-28T18-44-03.250Z");
        assert_eq!(utc_name(SystemTime::UNIX_EPOCH), "1970-01-01T00-00-00.000Z");
    }
}
