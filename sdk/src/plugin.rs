//! The traits a plugin implements and the metadata it declares.

use std::path::PathBuf;

use crate::config::{ConfigKey, PluginConfig};
use crate::emit::{Emitter, Logger};
use crate::machine::MachineCheck;
use crate::model::Record;

/// Source or sink.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PluginKind {
    /// Produces events (eBPF, CUPTI, ...).
    Source,
    /// Consumes events and writes an output (folded, chrome, ...).
    Sink,
}

impl PluginKind {
    /// `"source"` or `"sink"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Source => "source",
            Self::Sink => "sink",
        }
    }
}

/// Something a plugin needs from the machine, by a stable name; `xpuprof doctor` checks the ones
/// it knows and lists the others as not checked.
///
/// An open set: the names below are the ones this SDK knows; a backend this SDK does not list
/// names its own with [`Capability::named`] (lowercase words joined by `-`, e.g.
/// `"npu-runtime"`). Only the name crosses the ABI, so hosts and plugins of any SDK version agree.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Capability(&'static str);

#[allow(non_upper_case_globals)]
impl Capability {
    /// Root, or CAP_BPF + CAP_PERFMON.
    pub const BpfAndPerf: Self = Self("bpf-perf");
    /// Kernel BTF (`/sys/kernel/btf/vmlinux`).
    pub const KernelBtf: Self = Self("kernel-btf");
    /// The NVIDIA driver and a CUDA runtime.
    pub const CudaRuntime: Self = Self("cuda");
    /// The ROCm runtime.
    pub const RocmRuntime: Self = Self("rocm");
    /// The Level Zero loader and a driver.
    pub const LevelZeroRuntime: Self = Self("level-zero");

    /// A capability this SDK does not list, by its stable name.
    pub const fn named(name: &'static str) -> Self {
        Self(name)
    }

    /// Stable name used in the ABI and in `xpuprof doctor`.
    pub fn as_str(self) -> &'static str {
        self.0
    }
}

/// What a plugin declares about itself.
#[derive(Debug, Clone)]
pub struct PluginInfo {
    /// Name used on the command line and in `[source.NAME]` / `[sink.NAME]` tables.
    pub name: &'static str,
    /// Plugin version (usually `env!("CARGO_PKG_VERSION")`).
    pub version: &'static str,
    /// One line saying what it does.
    pub description: &'static str,
    /// Every configuration key it accepts; the host rejects any other.
    pub config_keys: Vec<ConfigKey>,
    /// What it needs from the machine.
    pub capabilities: Vec<Capability>,
}

/// Facts about the session a plugin instance is created for.
#[derive(Debug, Clone, Default)]
pub struct SessionInfo {
    /// Output directory (sinks write their files here).
    pub output_dir: PathBuf,
    /// The profiled command and its arguments (empty for `xpuprof report`).
    pub command: Vec<String>,
    /// Names of the session's sources.
    pub sources: Vec<String>,
    /// Names of the session's sinks.
    pub sinks: Vec<String>,
    /// The correlation backends the host's sources declared ([`Source::backends`]), with
    /// their names for reports; see [`SessionInfo::backend_name`]. Empty when the host predates
    /// SDK 0.4.
    pub backends: Vec<BackendName>,
    /// Session start, session clock ns.
    pub start_time: u64,
    /// Verbosity: 0 = warnings, 1 = info, 2 = debug.
    pub verbosity: u8,
    /// The session starts with no capture window open: sources read it in `create` or
    /// [`Source::prepare`] and start dormant (a GPU source tells its agent through the target's
    /// environment), until the host calls [`Source::set_capture`]`(true)`. `false` when the host
    /// predates windows.
    pub start_paused: bool,
    /// The program's own markers that open and close capture windows, as the user gave them:
    /// `cuda-profiler-api` or `nvtx:MESSAGE[@DOMAIN]`; empty when windows are not marker-driven.
    /// A source that implements markers opens and closes windows itself and emits a
    /// [`crate::model::CaptureWindow`] record twice per window: with `end` 0 the moment it opens
    /// (the host then opens the window in the other sources) and complete when it closes (the
    /// host closes the others'; sinks see only complete ones as windows). The other sources ignore
    /// it: the host drives them with [`Source::set_capture`].
    pub capture_range: String,
    /// What happens at the end of the first marker window: `stop` (the session ends) or
    /// `repeat` (every later range opens a window again); empty when `capture_range` is.
    pub capture_range_end: String,
}

impl SessionInfo {
    /// The name reports show for correlation backend `id` ([`crate::model::backend`]): the name
    /// its source declared, `uncorrelated` and `test` for the SDK's own ids, else `backend-ID`.
    pub fn backend_name(&self, id: u32) -> String {
        use crate::model::backend;
        match self.backends.iter().find(|b| b.id == id) {
            Some(b) => b.name.clone(),
            None if id == backend::UNCORRELATED => "uncorrelated".to_owned(),
            None if id == backend::TEST => "test".to_owned(),
            None => format!("backend-{id}"),
        }
    }
}

/// A correlation backend a source issues ids for ([`crate::model::Correlation::backend`]), and
/// the short name reports show for it (`events_by_backend` of the summary).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BackendName {
    /// The backend id (see [`crate::model::backend`]).
    pub id: u32,
    /// Its name in reports: lowercase words joined by `-`.
    pub name: String,
}

impl BackendName {
    /// Backend `id`, shown as `name`.
    pub fn new(id: u32, name: impl Into<String>) -> Self {
        Self { id, name: name.into() }
    }
}

/// Everything a plugin gets when it is created.
#[derive(Debug)]
pub struct CreateContext {
    /// The user's configuration for this plugin, already checked against its declared keys.
    pub config: PluginConfig,
    /// Session facts.
    pub session: SessionInfo,
    /// Sends records to the host (sources). Clone it for other threads.
    pub emitter: Emitter,
    /// Logs through the host.
    pub log: Logger,
}

/// Error returned by a plugin: a message for the user.
///
/// Write it as `failed to <verb> <object>: <cause>` and add a hint when the fix is known.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PluginError(pub String);

impl PluginError {
    /// An error with this message.
    pub fn new(msg: impl Into<String>) -> Self {
        Self(msg.into())
    }
}

impl std::fmt::Display for PluginError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for PluginError {}

impl From<std::io::Error> for PluginError {
    fn from(e: std::io::Error) -> Self {
        Self(e.to_string())
    }
}

impl From<String> for PluginError {
    fn from(e: String) -> Self {
        Self(e)
    }
}

impl From<&str> for PluginError {
    fn from(e: &str) -> Self {
        Self(e.to_owned())
    }
}

/// Result of plugin entry points.
pub type PluginResult<T> = Result<T, PluginError>;

/// Environment variables for the target process, filled by [`Source::prepare`].
#[derive(Debug, Default, Clone)]
pub struct TargetEnv {
    vars: Vec<(String, String)>,
}

impl TargetEnv {
    /// Sets `key=value` in the target's environment.
    pub fn set(&mut self, key: impl Into<String>, value: impl Into<String>) {
        self.vars.push((key.into(), value.into()));
    }

    /// The variables set so far, in order.
    pub fn vars(&self) -> &[(String, String)] {
        &self.vars
    }
}

/// A plugin that produces events.
///
/// Lifecycle, all calls on one host thread: `create` → `prepare` (before the target exists) →
/// `start(pid)` (the target is spawned but held before `exec`, so nothing is missed) → `stop`
/// (the target and its children exited, or the user pressed Ctrl+C) → drop.
///
/// For a process xpuprof did not start (`xpuprof attach`), `attach(pid, tree)` replaces
/// `prepare` + `start`. Between `start` (or `attach`) and `stop`, the host may call
/// [`Source::set_capture`] any number of times to open and close capture windows; a session that
/// starts paused ([`SessionInfo::start_paused`]) begins with the window closed.
///
/// Events go through the [`Emitter`] from [`CreateContext`], from any thread, at any time
/// between `start` and the end of `stop`. `stop` must not return before everything recorded
/// has been emitted and flushed: the host finishes the sinks right after.
pub trait Source: Send + 'static {
    /// Declares the plugin.
    fn info() -> PluginInfo
    where
        Self: Sized;

    /// Checks what this source needs from the machine, for `xpuprof doctor` and for choosing
    /// the default sources: one [`MachineCheck`] per capability it declares in
    /// [`PluginInfo::capabilities`] (runtime libraries found, permissions, kernel features).
    /// Runs in the host process, without an instance; it must be quick and must not change the
    /// machine. Default: no checks (the capabilities show as not checked).
    fn machine_checks() -> Vec<MachineCheck>
    where
        Self: Sized,
    {
        Vec::new()
    }

    /// Whether the host runs this source when the user names no source, provided every one
    /// of its capabilities passed [`Source::machine_checks`]. Default: `false` (run only when
    /// named).
    fn default_source() -> bool
    where
        Self: Sized,
    {
        false
    }

    /// The correlation backends this source issues ids for, with their names in reports
    /// ([`SessionInfo::backend_name`] gives them to the sinks). Default: none.
    fn backends() -> Vec<BackendName>
    where
        Self: Sized,
    {
        Vec::new()
    }

    /// Creates an instance for one session.
    fn create(ctx: CreateContext) -> PluginResult<Self>
    where
        Self: Sized;

    /// Adds what the target's environment needs. Default: nothing.
    fn prepare(&mut self, _env: &mut TargetEnv) -> PluginResult<()> {
        Ok(())
    }

    /// Starts recording the process tree rooted at `pid`.
    fn start(&mut self, pid: u32) -> PluginResult<()>;

    /// Emits everything still buffered and stops.
    fn stop(&mut self) -> PluginResult<()>;

    /// Opens (`on == true`) or closes (`false`) a capture window while the target runs.
    ///
    /// Outside a window the source is dormant and costs the target nothing measurable: a GPU
    /// agent detaches the vendor's tracing (no callbacks), an eBPF source detaches or disables its
    /// perf events and probes. Closing a window emits (or keeps queued for emission) everything
    /// recorded inside it; the host writes the window's record itself.
    /// Calls alternate (`true`, `false`, `true`, …) and are idempotent; they come only between
    /// `start`/`attach` and `stop`.
    ///
    /// Default: an error saying the source cannot pause; the host then reports that this source
    /// records the whole run, and refuses it in attach mode.
    fn set_capture(&mut self, _on: bool) -> PluginResult<()> {
        Err(PluginError::new("this source cannot pause"))
    }

    /// Starts recording a process that is already running and was not started by xpuprof: `pid`
    /// and, with `tree`, its existing and future descendants. Called instead of `prepare` +
    /// `start`; `stop` ends it and must leave the process as it found it (nothing of the
    /// source attached to it, the process still running).
    ///
    /// Default: an error saying this source cannot attach; the host names it and goes on
    /// without it (or refuses the session when no source can attach).
    fn attach(&mut self, _pid: u32, _tree: bool) -> PluginResult<()> {
        Err(PluginError::new("this source cannot attach to a running process"))
    }
}

/// A plugin that consumes events and writes an output.
///
/// Sinks receive records in a valid order: every definition before the first event that uses
/// it, every id session-wide, every timestamp in the session clock, every device operation
/// already joined to its launch (see [`crate::model::DeviceOp::launch`]). Sinks must stream:
/// memory may grow with the number of distinct stacks or kernels, not with the run's length.
pub trait Sink: Send + 'static {
    /// Declares the plugin.
    fn info() -> PluginInfo
    where
        Self: Sized;

    /// Checks what this sink needs from the machine, for `xpuprof doctor`; see
    /// [`Source::machine_checks`]. Default: no checks.
    fn machine_checks() -> Vec<MachineCheck>
    where
        Self: Sized,
    {
        Vec::new()
    }

    /// Creates an instance for one session.
    fn create(ctx: CreateContext) -> PluginResult<Self>
    where
        Self: Sized;

    /// Consumes a batch of records. The slice is only valid during the call.
    fn consume(&mut self, records: &[Record]) -> PluginResult<()>;

    /// Finishes the output and returns the files written.
    fn finish(&mut self) -> PluginResult<Vec<PathBuf>>;
}

#[cfg(test)]
mod capability_tests {
    use super::Capability;

    #[test]
    fn known_and_third_party_capabilities_are_names() {
        assert_eq!(Capability::CudaRuntime.as_str(), "cuda");
        assert_eq!(Capability::LevelZeroRuntime.as_str(), "level-zero");
        let npu = Capability::named("npu-runtime");
        assert_eq!(npu.as_str(), "npu-runtime");
        assert_ne!(npu, Capability::CudaRuntime);
        assert!(matches!(Capability::KernelBtf, Capability::KernelBtf));
    }
}
