//! The session's sources through their lifecycle (create, prepare, start, stop, destroy), each
//! on its own thread with a deadline per call: a failed or stuck source is reported by name and
//! the session goes on without it.

use std::sync::mpsc::SyncSender;
use std::time::Duration;

use super::instance::{HostContext, Instance, SourceBatch};
use super::loader::LoadedPlugin;
use super::worker::{CallError, PluginThread};

/// The live sources, in session order (a failed one leaves an empty slot, so indexes stay the
/// source numbers the pipeline uses).
#[derive(Debug)]
pub struct Sources {
    slots: Vec<Option<PluginThread>>,
    /// Every source's host context, live or not: disconnected at the end, late records counted.
    hosts: Vec<&'static HostContext>,
}

/// Reports a failed or abandoned plugin call and keeps its message for the summary.
pub fn report_failure(failures: &mut Vec<String>, e: &CallError) {
    tracing::error!("{e}; continuing without it");
    failures.push(e.to_string());
}

impl Sources {
    /// Creates every source from its plugin and `create` arguments; they emit into `tx`.
    pub fn create(
        plugins: Vec<(LoadedPlugin, String)>,
        tx: &SyncSender<SourceBatch>,
        timeout: Duration,
        failures: &mut Vec<String>,
    ) -> Self {
        let mut me = Self { slots: Vec::new(), hosts: Vec::new() };
        for (i, (plugin, args)) in plugins.into_iter().enumerate() {
            let host = HostContext::new(&plugin.meta.name, i, Some(tx.clone()));
            me.hosts.push(host);
            let create = move || Instance::create_with(&plugin, &args, host);
            match PluginThread::spawn(host, timeout, 1, create) {
                Ok(t) => me.slots.push(Some(t)),
                Err(e) => {
                    report_failure(failures, &e);
                    me.slots.push(None);
                }
            }
        }
        me
    }

    /// Number of sources, live or not.
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// Collects the environment every source needs in the target; a later source's value of
    /// the same variable wins, with a warning.
    pub fn prepare(&mut self, failures: &mut Vec<String>) -> Vec<(String, String)> {
        let mut env: Vec<(String, String)> = Vec::new();
        for slot in &mut self.slots {
            let Some(s) = slot else { continue };
            match s.call("prepare", |inst| inst.prepare()) {
                Ok(vars) => {
                    for (k, v) in vars {
                        if let Some(old) = env.iter_mut().find(|(ek, _)| *ek == k) {
                            tracing::warn!("{}: overrides {k}={} with {v}", s.name(), old.1);
                            old.1 = v;
                        } else {
                            env.push((k, v));
                        }
                    }
                }
                Err(e) => drop_failed(slot, failures, &e),
            }
        }
        env
    }

    /// Starts every source on the process tree of `pid`.
    pub fn start(&mut self, pid: u32, failures: &mut Vec<String>) {
        for slot in &mut self.slots {
            let Some(s) = slot else { continue };
            if let Err(e) = s.call("start", move |inst| inst.start(pid)) {
                drop_failed(slot, failures, &e);
            }
        }
    }

    /// Starts every source on the running process `pid` that xpuprof did not start (with
    /// `tree`, its descendants too). A source that cannot attach is reported and dropped.
    pub fn attach(&mut self, pid: u32, tree: bool, failures: &mut Vec<String>) {
        for slot in &mut self.slots {
            let Some(s) = slot else { continue };
            if let Err(e) = s.call("attach", move |inst| inst.attach(pid, tree)) {
                drop_failed(slot, failures, &e);
            }
        }
    }

    /// Number of sources still running.
    pub fn live(&self) -> usize {
        self.slots.iter().flatten().filter(|s| s.is_live()).count()
    }

    /// Opens (`on`) or closes a capture window in every source. A source that cannot pause keeps
    /// recording and stays in the session; its error is returned by name (the caller reports it
    /// once), not counted as a failure. A source stuck in the call is abandoned as for any call.
    pub fn set_capture(&mut self, on: bool, failures: &mut Vec<String>) -> Vec<(String, String)> {
        let mut cannot = Vec::new();
        for slot in &mut self.slots {
            let Some(s) = slot else { continue };
            match s.call("set_capture", move |inst| inst.set_capture(on)) {
                Ok(()) => {}
                Err(CallError::Failed { name, message, .. }) => cannot.push((name, message)),
                Err(e) => drop_failed(slot, failures, &e),
            }
        }
        cannot
    }

    /// Stops every source (all at once, each bounded by its deadline), disconnects them from
    /// the session and destroys them. What they emit afterwards is counted as late.
    pub fn stop(&mut self, failures: &mut Vec<String>) {
        let results: Vec<Option<CallError>> = std::thread::scope(|scope| {
            let handles: Vec<_> = self
                .slots
                .iter_mut()
                .map(|slot| {
                    scope.spawn(move || {
                        let s = slot.as_mut()?;
                        s.call("stop", |inst| inst.stop()).err()
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap_or(None)).collect()
        });
        for e in results.iter().flatten() {
            report_failure(failures, e);
        }
        for host in &self.hosts {
            host.disconnect();
        }
        let errors: Vec<CallError> = std::thread::scope(|scope| {
            let handles: Vec<_> = self
                .slots
                .iter_mut()
                .filter_map(Option::take)
                .map(|s| scope.spawn(move || s.shutdown().err()))
                .collect();
            handles.into_iter().filter_map(|h| h.join().ok().flatten()).collect()
        });
        for e in &errors {
            report_failure(failures, e);
        }
    }

    /// Reports the capture windows the sources open and close themselves (program markers) to
    /// `windows`.
    pub fn watch_windows(&self, windows: &'static crate::window::MarkerWindows) {
        for h in &self.hosts {
            h.watch_windows(windows);
        }
    }

    /// Sends records the host itself made (capture windows) into the session, in order with what
    /// the sources emitted so far; through the first source still connected, before `stop`.
    pub fn emit_host_records(&self, records: &[xpuprof_sdk::model::Record]) {
        let mut bytes = Vec::new();
        for r in records {
            xpuprof_sdk::codec::encode(r, &mut bytes);
        }
        match self.hosts.iter().find(|h| h.is_connected()) {
            Some(h) if !bytes.is_empty() => h.emit_batch(&bytes),
            _ => {}
        }
    }

    /// Records each source emitted after it was stopped (dropped), by plugin name; only those
    /// with some.
    pub fn late_records(&self) -> Vec<(String, u64)> {
        self.hosts
            .iter()
            .filter(|h| h.late_records() > 0)
            .map(|h| (h.plugin_name().to_owned(), h.late_records()))
            .collect()
    }
}

impl Drop for Sources {
    fn drop(&mut self) {
        // However the session ends, the pipeline must see every source gone.
        for host in &self.hosts {
            host.disconnect();
        }
    }
}

fn drop_failed(slot: &mut Option<PluginThread>, failures: &mut Vec<String>, e: &CallError) {
    report_failure(failures, e);
    if let Some(s) = slot.take() {
        s.host().disconnect();
        if let Err(e) = s.shutdown() {
            report_failure(failures, &e);
        }
    }
}
