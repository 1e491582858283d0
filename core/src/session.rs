//! A recording session: load plugins, prepare the target's environment, spawn it held, start
//! the sources, run, stop the sources, finish the sinks, summarise.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::Arc;
use std::time::{Duration, Instant};

use xpuprof_sdk::model::Record;
use xpuprof_sdk::PluginKind;

use crate::config::{self, ConfigError, FileConfig};
use crate::host::sources::{report_failure, Sources};
use crate::host::{CallError, HostContext, Instance, PluginThread, Registry, SearchPath, SourceBatch};
use crate::outdir::{self, OutputDir, OutputDirError};
use crate::pipeline::sinks::{SinkResults, Sinks, SINK_QUEUE};
use crate::pipeline::{Pipeline, PipelineStats};
use crate::runas::RunAs;
use crate::target::{self, SpawnError};
use crate::{signals, summary};

/// Everything a recording needs, already resolved from flags and the config file.
#[derive(Debug, Clone)]
pub struct RecordOptions {
    /// The command and its arguments.
    pub command: Vec<String>,
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
    /// Show a status line on stderr (when it is a terminal).
    pub status_line: bool,
    /// Under sudo, run the target as root instead of the invoking user.
    pub keep_root: bool,
    /// When the sources record (capture windows); the default records the whole run.
    pub capture: crate::window::CaptureOptions,
}

/// Why a session could not run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SessionError {
    /// Bad configuration or plugin selection (exit code 2).
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The command could not be started (exit code 126/127/125).
    #[error(transparent)]
    Spawn(#[from] SpawnError),
    /// An output cannot be written, found before the target started (exit code 125).
    #[error(transparent)]
    Output(#[from] OutputDirError),
    /// xpuprof itself failed (exit code 125).
    #[error("{0}")]
    Internal(String),
}

impl SessionError {
    /// The exit code for this error.
    pub fn exit_code(&self) -> i32 {
        match self {
            Self::Config(_) => 2,
            Self::Spawn(e) => e.exit_code(),
            Self::Output(_) | Self::Internal(_) => 125,
        }
    }
}

/// What a finished session reports.
#[derive(Debug, Clone, Default)]
pub struct SessionOutcome {
    /// The target's exit code (128+N for signal N).
    pub target_exit: i32,
    /// Files written by the sinks.
    pub files: Vec<String>,
    /// Source names, in session order.
    pub sources: Vec<String>,
    /// Pipeline counters.
    pub stats: PipelineStats,
    /// Plugins that failed, with the message.
    pub plugin_failures: Vec<String>,
    /// Wall-clock duration.
    pub elapsed: Duration,
    /// xpuprof's own CPU time (all its threads, user + system) while the target ran, and in all.
    pub own_cpu: (Duration, Duration),
    /// Records sources emitted after they were stopped (dropped), by plugin name.
    pub late_records: Vec<(String, u64)>,
}

impl SessionOutcome {
    /// xpuprof's exit code: the target's, or 125 when it succeeded but a plugin failed.
    pub fn exit_code(&self) -> i32 {
        if self.target_exit == 0 && !self.plugin_failures.is_empty() {
            125
        } else {
            self.target_exit
        }
    }
}

/// Resolves plugin names against the registry, with helpful errors.
pub fn select<'r>(
    reg: &'r Registry,
    kind: PluginKind,
    names: &[String],
) -> Result<Vec<&'r crate::host::LoadedPlugin>, ConfigError> {
    if names.is_empty() {
        return Err(ConfigError {
            location: None,
            message: format!("no {} plugin given; name at least one with --{}", kind.as_str(), kind.as_str()),
        });
    }
    let mut out: Vec<&crate::host::LoadedPlugin> = Vec::new();
    for name in names {
        if names.iter().filter(|n| *n == name).count() > 1 {
            return Err(ConfigError {
                location: None,
                message: format!(
                    "{} `{name}` is named twice; each plugin runs once per session (its weights would count twice)",
                    kind.as_str()
                ),
            });
        }
        if let Some(p) = reg.find(kind, name) {
            out.push(p);
            continue;
        }
        let message = match reg.failure_for(name) {
            Some(f) => format!(
                "{} `{name}` was found at {} but cannot be loaded: {}",
                kind.as_str(),
                f.path.display(),
                f.reason
            ),
            None => {
                let avail = reg.names(kind);
                format!(
                    "unknown {} `{name}`; available: {} (run `xpuprof plugins` to see every plugin found and why \
                     some cannot load)",
                    kind.as_str(),
                    if avail.is_empty() { "none".to_owned() } else { avail.join(", ") }
                )
            }
        };
        return Err(ConfigError { location: None, message });
    }
    Ok(out)
}

/// Checks every `[source.NAME]` / `[sink.NAME]` table of the file, also of plugins this
/// session does not run: a mistake in the file is reported now, not in some later run.
pub fn check_file_tables(reg: &Registry, file: &FileConfig) -> Result<(), ConfigError> {
    for kind in [PluginKind::Source, PluginKind::Sink] {
        file.check_known(kind, &reg.names(kind))?;
        for name in file.plugin_tables(kind) {
            if let Some(p) = reg.find(kind, &name) {
                config::plugin_table(Some(file), kind, &name, &p.meta.config)?;
            }
        }
    }
    Ok(())
}

/// Checks, before anything is created or run, the config file's plugin tables and the chosen
/// sources and sinks with their tables; returns the sources with their tables.
pub(crate) fn checked_capture_plugins<'r>(
    reg: &'r Registry,
    sources: &[String],
    sinks: &[String],
    file: Option<&FileConfig>,
) -> Result<Vec<(&'r crate::host::LoadedPlugin, toml::Table)>, ConfigError> {
    if let Some(file) = file {
        check_file_tables(reg, file)?;
    }
    let source_plugins = checked_plugins(reg, PluginKind::Source, sources, file)?;
    checked_plugins(reg, PluginKind::Sink, sinks, file)?;
    Ok(source_plugins)
}

/// Selects plugins of `kind` and checks each one's config table; returns them with their tables.
pub fn checked_plugins<'r>(
    reg: &'r Registry,
    kind: PluginKind,
    names: &[String],
    file: Option<&FileConfig>,
) -> Result<Vec<(&'r crate::host::LoadedPlugin, toml::Table)>, ConfigError> {
    select(reg, kind, names)?
        .into_iter()
        .map(|p| {
            let mut table = config::plugin_table(file, kind, &p.meta.name, &p.meta.config)?;
            if p.meta.host_fills_defaults {
                config::fill_defaults(&mut table, &p.meta.config);
            }
            Ok((p, table))
        })
        .collect()
}

/// Builds the `create` arguments of a plugin: its table and the session facts.
pub fn create_args(table: toml::Table, session: &toml::Table) -> String {
    let mut doc = toml::Table::new();
    doc.insert("plugin".into(), toml::Value::Table(table));
    doc.insert("session".into(), toml::Value::Table(session.clone()));
    toml::to_string(&doc).unwrap_or_default()
}

/// The `[session]` table handed to every plugin.
pub fn session_table(
    out: &std::path::Path,
    command: &[String],
    sources: &[String],
    sinks: &[String],
    start: u64,
    verbosity: u8,
) -> toml::Table {
    let list = |v: &[String]| toml::Value::Array(v.iter().map(|s| toml::Value::String(s.clone())).collect());
    let mut t = toml::Table::new();
    t.insert("output_dir".into(), toml::Value::String(out.display().to_string()));
    t.insert("command".into(), list(command));
    t.insert("sources".into(), list(sources));
    t.insert("sinks".into(), list(sinks));
    t.insert("start_time".into(), toml::Value::Integer(start as i64));
    t.insert("verbosity".into(), toml::Value::Integer(i64::from(verbosity)));
    t
}

/// Creates sink instances, each on its own thread. Sinks open their files when created, so a
/// sink whose `create` fails means an output that cannot be written: that stops the session
/// before anything runs (exit code 125) instead of after. A sink stuck in `create` is abandoned
/// and reported, and the session goes on with the others.
pub fn create_sinks(
    reg: &Registry,
    names: &[String],
    file: Option<&FileConfig>,
    session: &toml::Table,
    failures: &mut Vec<String>,
) -> Result<Sinks, SessionError> {
    let timeout = FileConfig::plugin_timeout(file);
    let mut sinks = Vec::new();
    // The sinks name correlation backends as the sources declared them.
    let mut session = session.clone();
    session.insert("backends".into(), reg.session_backends());
    for (p, table) in checked_plugins(reg, PluginKind::Sink, names, file)? {
        let (plugin, args) = (p.clone(), create_args(table, &session));
        let host = HostContext::new(&p.meta.name, 0, None);
        let create = move || Instance::create_with(&plugin, &args, host);
        match PluginThread::spawn(host, timeout, SINK_QUEUE, create) {
            Ok(t) => sinks.push(t),
            // A sink that cannot open its output: stop now. A stuck one is abandoned and the
            // session goes on with the others (a hung plugin must not take the run down).
            Err(e @ CallError::Failed { .. }) => {
                return Err(SessionError::Internal(format!("{e}; nothing was run")))
            }
            Err(e) => report_failure(failures, &e),
        }
    }
    Ok(Sinks::new(sinks))
}

/// Runs a recording session.
pub fn record(opts: &RecordOptions) -> Result<SessionOutcome, SessionError> {
    // First thing: a Ctrl+C while plugins load must not kill xpuprof with nothing written; it
    // reaches the target as soon as there is one.
    signals::install();
    let started = Instant::now();
    let reg = Registry::discover(&opts.search);
    for f in &reg.failures {
        tracing::debug!("plugin file {} not usable: {}", f.path.display(), f.reason);
    }
    // Everything that can be checked is checked before anything is created or run.
    let source_plugins = checked_capture_plugins(&reg, &opts.sources, &opts.sinks, opts.config.as_ref())?;
    let program = target::resolve(&opts.command[0])?;
    let run_as = RunAs::from_sudo(opts.keep_root).map_err(SessionError::Internal)?;
    let out = outdir::prepare(&opts.output_dir)?;
    report_removed(&out);
    let start = xpuprof_sdk::clock::now_ns();
    let mut session =
        session_table(&opts.output_dir, &opts.command, &opts.sources, &opts.sinks, start, opts.verbosity);
    opts.capture.fill_session(&mut session);
    let mut failures = Vec::new();
    let sinks = create_sinks(&reg, &opts.sinks, opts.config.as_ref(), &session, &mut failures)?;
    out.sinks_created()?;

    let (tx, rx) = mpsc::sync_channel::<SourceBatch>(SOURCE_QUEUE);
    let plugins = source_plugins.into_iter().map(|(p, t)| (p.clone(), create_args(t, &session)));
    let timeout = FileConfig::plugin_timeout(opts.config.as_ref());
    let mut sources = Sources::create(plugins.collect(), &tx, timeout, &mut failures);
    drop(tx);
    let mut env = sources.prepare(&mut failures);
    if let Some(r) = &run_as {
        env.extend(r.env());
    }
    let counters: Arc<Vec<AtomicU64>> = Arc::new((0..sources.len()).map(|_| AtomicU64::new(0)).collect());
    let demangle = FileConfig::demangle(opts.config.as_ref());
    let worker = spawn_pipeline(rx, sinks, sources.len(), demangle, Arc::clone(&counters));

    target::become_subreaper();
    let held = target::spawn_held(&program, &opts.command, &env, run_as.as_ref())?;
    signals::set_target(held.pid);
    sources.start(held.pid, &mut failures);
    let pid = match held.release() {
        Ok(pid) => pid,
        Err(e) => {
            sources.stop(&mut failures);
            let _ = worker.join();
            return Err(e.into());
        }
    };
    let names: Vec<String> = opts.sources.clone();
    let mut windows = crate::attach::start_windows(&opts.capture, &sources, crate::window::Opener::Start);
    let _registered = crate::trigger::register(&opts.output_dir);
    let _held = crate::attach::hold_target(pid);
    let mut tick = || crate::attach::window_tick(&mut windows, &mut sources, &mut failures);
    let (target_exit, cpu_during) =
        wait_for_target(pid, opts.status_line, started, &names, &counters, &mut tick);
    crate::attach::end_windows(windows.finish(), opts.capture.windowed(), &sources);
    sources.stop(&mut failures);
    let (stats, sinks) =
        worker.join().map_err(|_| SessionError::Internal("the event pipeline thread panicked".into()))?;
    // Read last: records a source's leftover threads emit while the sinks finish count too.
    let late_records = sources.late_records();
    failures.extend(sinks.failures);
    let files = finish_outputs(&out, &sinks.files, &mut failures);
    Ok(SessionOutcome {
        target_exit,
        files,
        sources: names,
        stats,
        plugin_failures: failures,
        late_records,
        elapsed: started.elapsed(),
        own_cpu: (cpu_during, own_cpu_time()),
    })
}

pub(crate) fn report_removed(out: &OutputDir) {
    if !out.removed.is_empty() {
        let names: Vec<String> = out.removed.iter().map(|p| p.display().to_string()).collect();
        tracing::info!(
            "removed {} file(s) an earlier run wrote in {}: {}",
            names.len(),
            out.path().display(),
            names.join(", ")
        );
    }
}

/// Records this run's files, warns about files in the output directory it did not write, and
/// returns the sinks' files that are in place: an output removed while the session ran (or its
/// directory) is a failure (exit code 125), never a "wrote" line.
pub(crate) fn finish_outputs(out: &OutputDir, files: &[String], failures: &mut Vec<String>) -> Vec<String> {
    let end = out.finish(files);
    if !end.foreign.is_empty() {
        let names: Vec<String> = end.foreign.iter().map(|p| p.display().to_string()).collect();
        tracing::warn!(
            "{} also holds files this run did not write (from an older xpuprof, or not xpuprof's): {}",
            out.path().display(),
            names.join(", ")
        );
    }
    failures.extend(end.lost);
    end.present
}

pub(crate) type WorkerResult = (PipelineStats, SinkResults);

/// Source batches (each at most 64 KiB, the SDK emitter's flush size) waiting for the pipeline:
/// 16 MiB, a fifth of a second of the pipeline's work. A full queue blocks the emitting source
/// thread (never an application thread: agents buffer and count their drops).
pub(crate) const SOURCE_QUEUE: usize = 256;

/// How often the pipeline releases what waited and lets the sinks flush, under load too.
pub(crate) const TICK: Duration = Duration::from_millis(200);

/// Runs the pipeline on its own thread (each sink has its own too) until every source is gone.
pub(crate) fn spawn_pipeline(
    rx: Receiver<SourceBatch>,
    mut sinks: Sinks,
    n_sources: usize,
    demangle: bool,
    counters: Arc<Vec<AtomicU64>>,
) -> std::thread::JoinHandle<WorkerResult> {
    std::thread::Builder::new()
        .name("xpuprof-pipeline".into())
        .spawn(move || {
            let mut pipeline = Pipeline::new(n_sources, true);
            pipeline.set_demangle(demangle);
            let mut last_tick = Instant::now();
            loop {
                let mut deliver =
                    |batch: &mut Vec<Record>, definitions| sinks.deliver_marked(batch, definitions);
                match rx.recv_timeout(TICK) {
                    Ok(b) => {
                        // Counted on arrival for the status line: the first batches can take
                        // the pipeline a while (symbol tables are read on first use).
                        if let Some(c) = counters.get(b.source) {
                            c.fetch_add(xpuprof_sdk::codec::count_records(&b.bytes), Ordering::Relaxed);
                        }
                        pipeline.push(b.source, &b.bytes, &mut deliver);
                        b.recycle();
                    }
                    Err(RecvTimeoutError::Timeout) => {}
                    Err(RecvTimeoutError::Disconnected) => break,
                }
                // At least every TICK, even while batches keep arriving: output does not wait
                // for a full buffer, and every sink gets an empty batch (no records, the same
                // for all) so it can flush what has waited too long (the archive's chunks).
                if last_tick.elapsed() >= TICK {
                    pipeline.tick(&mut deliver);
                    sinks.deliver(&mut Vec::new());
                    last_tick = Instant::now();
                }
            }
            pipeline
                .finish(&mut |batch: &mut Vec<Record>, definitions| sinks.deliver_marked(batch, definitions));
            (pipeline.stats(), sinks.finish())
        })
        .expect("failed to spawn the pipeline thread")
}

/// This process's CPU time so far, all threads, user + system.
pub(crate) fn own_cpu_time() -> Duration {
    // SAFETY: getrusage writes into the zeroed struct it is given.
    let ru = unsafe {
        let mut ru: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut ru);
        ru
    };
    let us = |t: libc::timeval| t.tv_sec as u64 * 1_000_000 + t.tv_usec as u64;
    Duration::from_micros(us(ru.ru_utime) + us(ru.ru_stime))
}

/// Waits for the target and then for any descendants it left behind; returns the target's
/// exit code and xpuprof's own CPU time when the target exited.
fn wait_for_target(
    pid: u32,
    status_line: bool,
    started: Instant,
    names: &[String],
    counters: &[AtomicU64],
    tick: &mut dyn FnMut(),
) -> (i32, Duration) {
    let tty = status_line && std::io::stderr().is_terminal();
    let mut target_exit = None;
    let mut last_status = Instant::now();
    let mut signals_at_exit = 0;
    let mut cpu_at_exit = Duration::ZERO;
    let mut exited_at = Instant::now();
    let mut warned = false;
    let mut killed_at: Option<Instant> = None;
    loop {
        let mut status = 0;
        // SAFETY: reaping any of our children (the target and orphans we are subreaper of).
        let r = unsafe { libc::waitpid(-1, &mut status, libc::WNOHANG) };
        if r == pid as i32 {
            target_exit = Some(target::exit_code_of(status));
            cpu_at_exit = own_cpu_time();
            signals_at_exit = signals::received();
            exited_at = Instant::now();
            continue;
        }
        if r > 0 {
            continue;
        }
        if r < 0 {
            break; // ECHILD: nobody left.
        }
        if signals::hurry_since().is_some() {
            // A second Ctrl+C/SIGTERM: stop waiting, write what was recorded, exit.
            match (target_exit, killed_at) {
                (Some(_), _) => break,
                (None, None) => {
                    crate::say!(
                        "xpuprof: interrupted twice: killing the target (pid {pid}) and writing what was recorded"
                    );
                    // SAFETY: signalling our own child.
                    unsafe { libc::kill(pid as i32, libc::SIGKILL) };
                    killed_at = Some(Instant::now());
                }
                (None, Some(t)) if t.elapsed() > signals::HURRY_GRACE => break,
                (None, Some(_)) => {}
            }
        }
        if target_exit.is_some() {
            if signals::received() > signals_at_exit {
                tracing::warn!("not waiting for the target's remaining child processes");
                break;
            }
            if !warned && exited_at.elapsed() > Duration::from_secs(2) {
                crate::say!(
                    "xpuprof: the target exited; waiting for its child processes (Ctrl+C to stop waiting)"
                );
                warned = true;
            }
        }
        tick();
        if tty && last_status.elapsed() > Duration::from_millis(500) {
            summary::status_line(started.elapsed(), names, counters);
            last_status = Instant::now();
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    if tty {
        crate::term::say_inline(format_args!("\r\x1b[K"));
    }
    if target_exit.is_none() {
        cpu_at_exit = own_cpu_time();
    }
    (target_exit.unwrap_or(125), cpu_at_exit)
}
