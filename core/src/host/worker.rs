//! Every plugin instance lives on a thread of its own, and every call into it has a deadline.
//!
//! A plugin that blocks in any entry point (`create` … `destroy`) is abandoned once the call is
//! overdue ([`signals::call_deadline`]): the host stops waiting, names the plugin and the call,
//! and goes on without it. An abandoned instance is never called again nor destroyed (its
//! thread may still be inside it); its library stays mapped and its host context stays valid, so
//! nothing it does later can touch freed memory.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crossbeam_channel::{bounded, Receiver, RecvTimeoutError, SendTimeoutError, Sender};

use super::instance::{HostContext, Instance};
use crate::signals;

/// How often a waiting host checks whether the call it waits for is overdue.
const POLL: Duration = Duration::from_millis(50);

/// Why a call into a plugin gave no result.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CallError {
    /// The plugin returned an error (or panicked; the SDK turns that into an error).
    #[error("plugin `{name}` failed in {what}: {message}")]
    Failed {
        /// The plugin.
        name: String,
        /// The entry point.
        what: &'static str,
        /// Its message.
        message: String,
    },
    /// The call did not return in time; the plugin is abandoned.
    #[error(
        "plugin `{name}` did not return from {what} within {secs:.1}s and was abandoned (the limit is \
         `plugin_timeout` in the config file; a second Ctrl+C shortens it)",
        secs = .after.as_secs_f64()
    )]
    Abandoned {
        /// The plugin.
        name: String,
        /// The entry point it was stuck in.
        what: &'static str,
        /// How long it had been running.
        after: Duration,
    },
    /// The plugin was abandoned or failed earlier and is not called any more.
    #[error("plugin `{name}` is not running any more")]
    Gone {
        /// The plugin.
        name: String,
    },
}

/// State the host and the plugin's thread share.
#[derive(Debug)]
struct Shared {
    name: String,
    /// The entry point running now, and since when.
    busy: Mutex<Option<(&'static str, Instant)>>,
    /// The first error of a call nobody waits for (a sink's `consume`): later ones are skipped.
    failed: Mutex<Option<CallError>>,
    abandoned: AtomicBool,
}

impl Shared {
    fn run<R>(&self, what: &'static str, f: impl FnOnce() -> R) -> R {
        *self.busy.lock().unwrap_or_else(|e| e.into_inner()) = Some((what, Instant::now()));
        let r = f();
        *self.busy.lock().unwrap_or_else(|e| e.into_inner()) = None;
        r
    }

    fn failed(&self) -> Option<CallError> {
        self.failed.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

type Job = Box<dyn FnOnce(&mut Instance, &Shared) + Send>;

/// A plugin instance on its own thread. Calls wait at most until they are overdue.
#[derive(Debug)]
pub struct PluginThread {
    shared: Arc<Shared>,
    jobs: Option<Sender<Job>>,
    /// Disconnected when the thread has ended (after `destroy`).
    ended: Receiver<()>,
    host: &'static HostContext,
    timeout: Duration,
}

impl PluginThread {
    /// Starts a thread that creates the instance with `create` and then runs the calls sent to
    /// it, at most `queue` waiting at a time. `create` is bounded by `timeout` like every call.
    /// `host` is the context the instance's callbacks use; it is disconnected when creating
    /// fails.
    pub fn spawn(
        host: &'static HostContext,
        timeout: Duration,
        queue: usize,
        create: impl FnOnce() -> Result<Instance, String> + Send + 'static,
    ) -> Result<Self, CallError> {
        let r = Self::spawn_inner(host, timeout, queue, create);
        if r.is_err() {
            host.disconnect();
        }
        r
    }

    fn spawn_inner(
        host: &'static HostContext,
        timeout: Duration,
        queue: usize,
        create: impl FnOnce() -> Result<Instance, String> + Send + 'static,
    ) -> Result<Self, CallError> {
        let name = host.plugin_name();
        let shared = Arc::new(Shared {
            name: name.to_owned(),
            busy: Mutex::new(None),
            failed: Mutex::new(None),
            abandoned: AtomicBool::new(false),
        });
        let (jobs, job_rx) = bounded::<Job>(queue.max(1));
        let (ended_tx, ended) = bounded::<()>(0);
        let (created_tx, created) = bounded(1);
        let sh = Arc::clone(&shared);
        std::thread::Builder::new()
            .name(format!("plugin {name}"))
            .spawn(move || {
                let _ended = ended_tx;
                let inst = sh.run("create", create);
                let mut inst = match inst {
                    Ok(i) => {
                        let _ = created_tx.send(Ok(()));
                        i
                    }
                    Err(e) => {
                        let _ = created_tx.send(Err(e));
                        return;
                    }
                };
                serve(&sh, &mut inst, &job_rx);
                if sh.abandoned.load(Ordering::SeqCst) {
                    // Never destroy what the host gave up on: it may be in an inconsistent state.
                    std::mem::forget(inst);
                } else {
                    sh.run("destroy", move || drop(inst));
                }
            })
            .map_err(|e| CallError::Failed {
                name: name.to_owned(),
                what: "create",
                message: e.to_string(),
            })?;
        let waiter = Waiter { shared: &shared, timeout };
        match waiter.wait(&created) {
            Ok(Ok(())) => {}
            Ok(Err(message)) => {
                return Err(CallError::Failed { name: name.to_owned(), what: "create", message })
            }
            Err(e) => return Err(e),
        }
        Ok(Self { shared, jobs: Some(jobs), ended, host, timeout })
    }

    /// The plugin's name.
    pub fn name(&self) -> &str {
        &self.shared.name
    }

    /// The instance's host context (late records, disconnecting a source).
    pub fn host(&self) -> &'static HostContext {
        self.host
    }

    /// Whether the plugin can still be called (not abandoned, no failed posted call).
    pub fn is_live(&self) -> bool {
        self.jobs.is_some() && self.shared.failed().is_none()
    }

    /// Calls `f` on the instance and waits for its result, at most until the call is overdue.
    pub fn call<R: Send + 'static>(
        &mut self,
        what: &'static str,
        f: impl FnOnce(&mut Instance) -> Result<R, String> + Send + 'static,
    ) -> Result<R, CallError> {
        let (tx, rx) = bounded(1);
        self.post_job(Box::new(move |inst, sh| {
            // A sink whose earlier `consume` failed is not finished (its output is incomplete).
            let r = match sh.failed() {
                Some(e) => Err(e),
                None => sh.run(what, || f(inst)).map_err(|message| CallError::Failed {
                    name: sh.name.clone(),
                    what,
                    message,
                }),
            };
            let _ = tx.send(r);
        }))?;
        self.wait(&rx)?
    }

    /// Queues `f` without waiting for it (a sink's `consume`). Waits only while the queue is
    /// full, at most until the call in progress is overdue. The first error is kept and
    /// returned by later calls; calls after it are skipped.
    pub fn post(
        &mut self,
        what: &'static str,
        f: impl FnOnce(&mut Instance) -> Result<(), String> + Send + 'static,
    ) -> Result<(), CallError> {
        if let Some(e) = self.shared.failed() {
            return Err(e);
        }
        self.post_job(Box::new(move |inst, sh| {
            if sh.failed().is_some() {
                return;
            }
            if let Err(message) = sh.run(what, || f(inst)) {
                let e = CallError::Failed { name: sh.name.clone(), what, message };
                *sh.failed.lock().unwrap_or_else(|e| e.into_inner()) = Some(e);
            }
        }))
    }

    fn post_job(&mut self, mut job: Job) -> Result<(), CallError> {
        loop {
            let Some(jobs) = &self.jobs else {
                return Err(CallError::Gone { name: self.shared.name.clone() });
            };
            match jobs.send_timeout(job, POLL) {
                Ok(()) => return Ok(()),
                Err(SendTimeoutError::Disconnected(_)) => {
                    self.jobs = None;
                    return Err(CallError::Gone { name: self.shared.name.clone() });
                }
                Err(SendTimeoutError::Timeout(j)) => {
                    job = j;
                    self.check_overdue()?;
                }
            }
        }
    }

    /// The error of the first failed posted call, if any; `None` while all went well.
    pub fn failure(&self) -> Option<CallError> {
        self.shared.failed()
    }

    /// Destroys the instance on its thread and waits for it, at most until `destroy` is
    /// overdue. An abandoned plugin is left alone.
    pub fn shutdown(mut self) -> Result<(), CallError> {
        if self.jobs.take().is_none() {
            return Ok(());
        }
        let ended = self.ended.clone();
        match self.wait(&ended) {
            Ok(()) | Err(CallError::Gone { .. }) => Ok(()),
            Err(e) => Err(e),
        }
    }

    fn wait<T>(&mut self, rx: &Receiver<T>) -> Result<T, CallError> {
        let r = Waiter { shared: &self.shared, timeout: self.timeout }.wait(rx);
        if matches!(r, Err(CallError::Abandoned { .. })) {
            self.jobs = None;
        }
        r
    }

    fn check_overdue(&mut self) -> Result<(), CallError> {
        match (Waiter { shared: &self.shared, timeout: self.timeout }).overdue() {
            Some(e) => {
                self.jobs = None;
                Err(e)
            }
            None => Ok(()),
        }
    }
}

/// Waits for a reply from a plugin's thread, abandoning the plugin when its call is overdue.
struct Waiter<'a> {
    shared: &'a Shared,
    timeout: Duration,
}

impl Waiter<'_> {
    fn wait<T>(&self, rx: &Receiver<T>) -> Result<T, CallError> {
        loop {
            match rx.recv_timeout(POLL) {
                Ok(v) => return Ok(v),
                Err(RecvTimeoutError::Disconnected) => {
                    return Err(CallError::Gone { name: self.shared.name.clone() })
                }
                Err(RecvTimeoutError::Timeout) => {
                    if let Some(e) = self.overdue() {
                        return Err(e);
                    }
                }
            }
        }
    }

    /// Abandons the plugin if the call in progress is overdue.
    fn overdue(&self) -> Option<CallError> {
        let (what, since) = (*self.shared.busy.lock().unwrap_or_else(|e| e.into_inner()))?;
        if Instant::now() < signals::call_deadline(since, self.timeout) {
            return None;
        }
        self.shared.abandoned.store(true, Ordering::SeqCst);
        let e = CallError::Abandoned { name: self.shared.name.clone(), what, after: since.elapsed() };
        tracing::error!("{e}");
        Some(e)
    }
}

/// Runs the calls sent to the plugin's thread until the host closes the queue or gives up.
fn serve(shared: &Shared, inst: &mut Instance, jobs: &Receiver<Job>) {
    for job in jobs.iter() {
        if shared.abandoned.load(Ordering::SeqCst) {
            return;
        }
        job(inst, shared);
    }
}
