//! Driving a plugin through its entry points, as the host does, with each call timed.

use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc::sync_channel;
use std::time::{Duration, Instant};

use xpuprof_sdk::clock::now_ns;
use xpuprof_sdk::codec::{self, Decoder};
use xpuprof_sdk::PluginKind;

use super::report::Report;
use super::rules::StreamRules;
use super::CheckOptions;
use crate::host::instance::{HostContext, Instance};
use crate::host::worker::{CallError, PluginThread};
use crate::host::LoadedPlugin;
use crate::session::{create_args, session_table};

/// The longest a source's target may run in the check before it is killed.
const TARGET_LIMIT: Duration = Duration::from_secs(60);

/// Runs the lifecycle of `plugin` (created with `table`) and checks what it does.
pub fn run(
    plugin: &LoadedPlugin,
    table: toml::Table,
    opts: &CheckOptions,
    report: &mut Report,
    progress: &mut dyn FnMut(&str),
) {
    let out = match tempfile::tempdir() {
        Ok(d) => d,
        Err(e) => {
            return report.error("the check runs", format!("failed to create a temporary directory: {e}"))
        }
    };
    match plugin.meta.kind {
        PluginKind::Source => source(plugin, table, opts, out.path(), report, progress),
        PluginKind::Sink => sink(plugin, table, opts, out.path(), report, progress),
    }
}

/// A worker thread for the plugin and how it went.
struct Harness<'a> {
    worker: Option<PluginThread>,
    opts: &'a CheckOptions,
    host: &'static HostContext,
}

impl Harness<'_> {
    fn create(
        plugin: &LoadedPlugin,
        args: String,
        host: &'static HostContext,
        opts: &CheckOptions,
        report: &mut Report,
    ) -> Option<PluginThread> {
        let p = plugin.clone();
        let t = Instant::now();
        let r = PluginThread::spawn(host, opts.timeout, 8, move || Instance::create_with(&p, &args, host));
        timed(report, opts, "create", t.elapsed());
        match r {
            Ok(w) => Some(w),
            Err(e) => {
                failed(report, "create", &e);
                None
            }
        }
    }

    /// Calls entry point `what`; `None` (reported) when it failed, panicked or was abandoned.
    fn call<R: Send + 'static>(
        &mut self,
        report: &mut Report,
        what: &'static str,
        f: impl FnOnce(&mut Instance) -> Result<R, String> + Send + 'static,
    ) -> Option<R> {
        let w = self.worker.as_mut()?;
        let t = Instant::now();
        let r = w.call(what, f);
        timed(report, self.opts, what, t.elapsed());
        match r {
            Ok(v) => Some(v),
            Err(e) => {
                failed(report, what, &e);
                if matches!(e, CallError::Abandoned { .. }) {
                    self.worker = None;
                }
                None
            }
        }
    }

    /// Destroys the instance (when it is not abandoned).
    fn shutdown(&mut self, report: &mut Report) {
        self.host.disconnect();
        if let Some(w) = self.worker.take() {
            let t = Instant::now();
            let r = w.shutdown();
            timed(report, self.opts, "destroy", t.elapsed());
            if let Err(e) = r {
                failed(report, "destroy", &e);
            }
        }
    }
}

/// Reports a slow call (a warning): the host waits for every call.
fn timed(report: &mut Report, opts: &CheckOptions, what: &str, took: Duration) {
    if took > opts.slow && took < opts.timeout {
        report.warn(
            "entry points return promptly",
            format!(
                "{what} took {:.1} s; the host waits for it on its own thread (and abandons it after \
                 `plugin_timeout`, 10 s by default): move slow work to a thread of the plugin",
                took.as_secs_f64()
            ),
        );
    }
}

/// Reports a failed call in the author's terms.
fn failed(report: &mut Report, what: &str, e: &CallError) {
    match e {
        CallError::Abandoned { after, .. } => report.error(
            "entry points do not block",
            format!(
                "{what} did not return within {:.0} s and was abandoned; the host does the same (its \
                 `plugin_timeout`), losing the plugin's output: never wait in an entry point for something \
                 that may not come (the target, a socket, a lock held by your own threads)",
                after.as_secs_f64()
            ),
        ),
        CallError::Failed { message, .. } if message.contains(" panicked in ") => report.error(
            "entry points do not panic",
            format!("{message}; the host disables a plugin that panicked and goes on without it"),
        ),
        CallError::Failed { message, .. } => {
            report.error("entry points succeed", format!("{what} returned an error: {message}"))
        }
        other => report.error("entry points succeed", format!("{what}: {other}")),
    }
}

fn source(
    plugin: &LoadedPlugin,
    table: toml::Table,
    opts: &CheckOptions,
    out: &Path,
    report: &mut Report,
    progress: &mut dyn FnMut(&str),
) {
    let name = plugin.meta.name.clone();
    let (tx, rx) = sync_channel(1024);
    let host = HostContext::new(&name, 0, Some(tx));
    let collector =
        std::thread::spawn(move || rx.iter().map(|b: crate::host::SourceBatch| b.bytes).collect::<Vec<_>>());
    let start = now_ns();
    let session = session_table(out, &opts.command, std::slice::from_ref(&name), &[], start, 0);
    progress("create");
    let Some(worker) = Harness::create(plugin, create_args(table, &session), host, opts, report) else {
        host.disconnect();
        return;
    };
    let mut h = Harness { worker: Some(worker), opts, host };
    progress("prepare");
    let env = h.call(report, "prepare", Instance::prepare);
    if let Some(env) = env {
        progress("start");
        if let Some(pid) = spawn_and_start(&mut h, report, &opts.command, &env) {
            progress("stop");
            h.call(report, "stop", Instance::stop);
            tracing::debug!("the check's target {pid} exited");
        }
    }
    let end = now_ns();
    progress("destroy");
    h.shutdown(report);
    let batches = collector.join().unwrap_or_default();
    check_stream(&batches, start, end, report);
    super::losses::check(&batches, report);
    if let Some(dir) = &opts.keep {
        super::keep::source(dir, &batches, report);
    }
    let late = host.late_records();
    if late > 0 {
        report.error(
            "nothing is emitted after stop",
            format!(
                "{late} records arrived after stop returned and were dropped (the host counts them as lost): \
                 emit and flush everything, and join your threads, before stop returns"
            ),
        );
    }
}

/// Spawns the target with the source's environment, calls `start(pid)`, waits for the target.
fn spawn_and_start(
    h: &mut Harness<'_>,
    report: &mut Report,
    command: &[String],
    env: &[(String, String)],
) -> Option<u32> {
    let Some((program, args)) = command.split_first() else {
        report.error("the check runs", "no target command");
        return None;
    };
    let mut child =
        match Command::new(program).args(args).envs(env.iter().cloned()).stdin(Stdio::null()).spawn() {
            Ok(c) => c,
            Err(e) => {
                report.error("the check runs", format!("failed to run the target `{program}`: {e}"));
                return None;
            }
        };
    let pid = child.id();
    h.call(report, "start", move |i| i.start(pid))?;
    let t = Instant::now();
    while t.elapsed() < TARGET_LIMIT {
        if let Ok(Some(_)) = child.try_wait() {
            return Some(pid);
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let _ = child.kill();
    let _ = child.wait();
    report.warn(
        "the check runs",
        format!("the target ran longer than {} s and was killed", TARGET_LIMIT.as_secs()),
    );
    Some(pid)
}

fn check_stream(batches: &[Vec<u8>], start: u64, end: u64, report: &mut Report) {
    let mut rules = StreamRules::new(start, end);
    let mut skipped = 0;
    for (i, b) in batches.iter().enumerate() {
        let mut d = Decoder::new(b);
        for r in d.by_ref() {
            match r {
                Ok(r) => rules.record(&r, report),
                Err(e) => report.error(
                    "batches decode",
                    format!(
                        "batch {i} of {}: {e}; write records with the SDK's emitter or records.h",
                        batches.len()
                    ),
                ),
            }
        }
        skipped += d.skipped();
    }
    if skipped > 0 {
        report.warn(
            "batches decode",
            format!("{skipped} records of kinds this xpuprof does not know (a newer SDK?) were skipped"),
        );
    }
    rules.finish(report);
}

/// The canonical session a sink is fed: the host's order, in three batches, with a record of a
/// kind from a future SDK in the middle (a sink must skip kinds it does not know).
fn sink_batches() -> Vec<Vec<u8>> {
    let records = xpuprof_archive::sample::session();
    let third = records.len() / 3;
    let mut out = Vec::new();
    for (i, chunk) in records.chunks(third.max(1)).enumerate() {
        let mut b = Vec::new();
        for r in chunk {
            codec::encode(r, &mut b);
        }
        if i == 1 {
            b.extend_from_slice(&[0x7f, 3, 1, 2, 3]);
        }
        out.push(b);
    }
    out
}

fn sink(
    plugin: &LoadedPlugin,
    table: toml::Table,
    opts: &CheckOptions,
    out: &Path,
    report: &mut Report,
    progress: &mut dyn FnMut(&str),
) {
    let name = plugin.meta.name.clone();
    let session = session_table(out, &[], &[], std::slice::from_ref(&name), now_ns(), 0);
    let host = HostContext::new(&name, 0, None);
    progress("create");
    let Some(worker) = Harness::create(plugin, create_args(table.clone(), &session), host, opts, report)
    else {
        return;
    };
    let mut h = Harness { worker: Some(worker), opts, host };
    let batches = match &opts.input {
        None => sink_batches(),
        Some(file) => match std::fs::read(file) {
            Ok(b) => vec![b],
            Err(e) => {
                report.error("the sink's input is read", format!("failed to read {}: {e}", file.display()));
                h.shutdown(report);
                return;
            }
        },
    };
    let input = opts.keep.as_ref().map(|_| batches.clone());
    progress("consume");
    let mut consumed = true;
    for b in batches {
        consumed &= h.call(report, "consume", move |i| i.consume(&b)).is_some();
    }
    progress("finish");
    let files = h.call(report, "finish", Instance::finish);
    progress("destroy");
    h.shutdown(report);
    if let (Some(dir), Some(input)) = (&opts.keep, &input) {
        super::keep::sink(dir, input, out, report);
    }
    if let Some(files) = files {
        check_files(out, &files, report);
        if consumed {
            let what = match &opts.input {
                None => "the sample session (with a record kind from a future SDK) went through".to_owned(),
                Some(file) => format!("the records of {} went through", file.display()),
            };
            report.pass("a session is consumed", what);
        }
    }
    empty_session(plugin, table, &session, opts, report, progress);
}

fn check_files(out: &Path, files: &[String], report: &mut Report) {
    if files.is_empty() {
        report
            .warn("finish names its files", "finish named no files; xpuprof lists the files each sink wrote");
    }
    for f in files {
        let p = Path::new(f);
        match std::fs::metadata(p) {
            Ok(m) if !p.starts_with(out) => report.error(
                "outputs stay in the output directory",
                format!("{f} ({} bytes) is outside the output directory {}", m.len(), out.display()),
            ),
            Ok(m) if m.len() == 0 => {
                report.warn("finish names its files", format!("{f} is empty after a whole session"))
            }
            Ok(m) => report.pass("finish names its files", format!("{f}: {} bytes", m.len())),
            Err(e) => {
                report.error("finish names its files", format!("finish named {f}, which cannot be read: {e}"))
            }
        }
    }
}

/// A session without records (`xpuprof report` of an empty archive, a target that did nothing).
fn empty_session(
    plugin: &LoadedPlugin,
    table: toml::Table,
    session: &toml::Table,
    opts: &CheckOptions,
    report: &mut Report,
    progress: &mut dyn FnMut(&str),
) {
    let Ok(out) = tempfile::tempdir() else { return };
    let mut session = session.clone();
    session.insert("output_dir".into(), toml::Value::String(out.path().display().to_string()));
    let host = HostContext::new(&plugin.meta.name, 0, None);
    progress("empty session");
    let Some(worker) = Harness::create(plugin, create_args(table, &session), host, opts, report) else {
        return;
    };
    let mut h = Harness { worker: Some(worker), opts, host };
    if h.call(report, "finish", Instance::finish).is_some() {
        report.pass("an empty session finishes", "create then finish, with no records, succeeded");
    }
    h.shutdown(report);
}
