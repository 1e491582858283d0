//! Live plugin instances: the host callbacks they get, and safe wrappers around the ABI calls.

use std::ffi::c_void;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::SyncSender;
use std::sync::Mutex;

use abi_stable::std_types::{RResult, RSlice, RStr, RVec};
use xpuprof_sdk::abi::{FfiHost, FfiInstance, FfiRecords, PluginModuleRef};
use xpuprof_sdk::codec::Decoder;

use super::bounded;
use super::cabi::CInstance;
use super::loader::{LoadedPlugin, PluginEntry};
use crate::pipeline::batch::RecordBatch;

/// A batch of encoded records from one source.
#[derive(Debug)]
pub struct SourceBatch {
    /// Index of the source in the session.
    pub source: usize,
    /// Encoded records.
    pub bytes: Vec<u8>,
}

/// Emptied source-batch buffers for reuse: the pipeline gives each batch's buffer back once it
/// has decoded it, so the next copy of a source's batch lands in memory already mapped (a fresh
/// 64 KiB allocation per batch, freed on another thread, had the kernel fault in and zero its
/// pages again and again: about 2% of a live recording's CPU time).
static SPARE_BUFFERS: Mutex<Vec<Vec<u8>>> = Mutex::new(Vec::new());
/// Buffers kept for reuse at most (4 MiB of the SDK emitter's 64 KiB batches).
const SPARE_MAX: usize = 64;
/// A buffer larger than this (a source that handed over one big batch) is not kept.
const SPARE_MAX_BYTES: usize = 256 * 1024;

impl SourceBatch {
    /// Gives the batch's buffer back for reuse by the next batch a source emits; call once the
    /// records are decoded.
    pub fn recycle(self) {
        let mut bytes = self.bytes;
        if bytes.capacity() > SPARE_MAX_BYTES {
            return;
        }
        bytes.clear();
        let mut spare = SPARE_BUFFERS.lock().unwrap_or_else(|e| e.into_inner());
        if spare.len() < SPARE_MAX {
            spare.push(bytes);
        }
    }
}

/// A copy of `batch` in a recycled buffer when there is one.
fn copy_batch(batch: &[u8]) -> Vec<u8> {
    let reused = SPARE_BUFFERS.lock().unwrap_or_else(|e| e.into_inner()).pop();
    let mut bytes = reused.unwrap_or_default();
    bytes.extend_from_slice(batch);
    bytes
}

/// What the host's callbacks need for one instance.
///
/// Never freed (leaked on purpose, a few hundred bytes per plugin instance): a plugin thread
/// that outlives its instance, or an emitter clone dropped after `destroy`, may still call
/// `emit` or `log`, and must then find valid memory that says the session is closed instead of
/// a freed one. Records that arrive after the session closed are counted, not silently dropped.
#[derive(Debug)]
pub struct HostContext {
    name: String,
    source: usize,
    tx: Mutex<Option<SyncSender<SourceBatch>>>,
    late_records: AtomicU64,
    /// Where the capture windows this source opens and closes itself are reported (sessions
    /// with `--capture-range` only).
    marker_windows: std::sync::OnceLock<&'static crate::window::MarkerWindows>,
}

impl HostContext {
    /// A context for an instance of plugin `name`, source number `source` emitting into `tx`
    /// (`None` for sinks). Leaked: it lives as long as the process (see the type's docs).
    pub fn new(name: &str, source: usize, tx: Option<SyncSender<SourceBatch>>) -> &'static Self {
        Box::leak(Box::new(Self {
            name: name.to_owned(),
            source,
            tx: Mutex::new(tx),
            late_records: AtomicU64::new(0),
            marker_windows: std::sync::OnceLock::new(),
        }))
    }

    /// Stops taking records from this instance (its source stopped, or was abandoned): from
    /// now on what it emits is counted as late and dropped.
    pub fn disconnect(&self) {
        *self.tx.lock().unwrap_or_else(|e| e.into_inner()) = None;
    }

    /// Reports the window records this instance emits to `windows` from now on.
    pub fn watch_windows(&self, windows: &'static crate::window::MarkerWindows) {
        let _ = self.marker_windows.set(windows);
    }

    /// Whether records emitted through this context still reach the session.
    pub fn is_connected(&self) -> bool {
        self.tx.lock().unwrap_or_else(|e| e.into_inner()).is_some()
    }

    /// Records this instance emitted after [`HostContext::disconnect`] (dropped).
    pub fn late_records(&self) -> u64 {
        self.late_records.load(Ordering::Relaxed)
    }

    /// The plugin's name.
    pub fn plugin_name(&self) -> &str {
        &self.name
    }

    fn count_late(&self, batch: &[u8]) {
        let n = Decoder::new(batch).take_while(Result::is_ok).count() as u64;
        self.late_records.fetch_add(n.max(1), Ordering::Relaxed);
    }

    /// Queues a batch the instance emitted (copied), or counts it as late once disconnected.
    pub(crate) fn emit_batch(&self, batch: &[u8]) {
        if let Some(w) = self.marker_windows.get() {
            w.scan(batch);
        }
        let tx = self.tx.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let sent = match tx {
            Some(tx) => tx.send(SourceBatch { source: self.source, bytes: copy_batch(batch) }).is_ok(),
            None => false,
        };
        if !sent {
            self.count_late(batch);
        }
    }

    /// Logs a message of the instance: level 1 = error, 2 = warn, 3 = info, else debug.
    pub(crate) fn log(&self, level: u8, message: &str) {
        let (name, msg) = (self.name.as_str(), bounded::cap(message, bounded::MAX_MESSAGE_BYTES));
        match level {
            1 => tracing::error!("{name}: {msg}"),
            2 => tracing::warn!("{name}: {msg}"),
            3 => tracing::info!("{name}: {msg}"),
            _ => tracing::debug!("{name}: {msg}"),
        }
    }
}

extern "C" fn host_emit(ctx: *const c_void, batch: RSlice<'_, u8>) {
    // SAFETY: `ctx` is a `HostContext` leaked by `HostContext::new`: valid for the rest of the
    // process, even after the instance was destroyed.
    let ctx = unsafe { &*(ctx as *const HostContext) };
    ctx.emit_batch(batch.as_slice());
}

extern "C" fn host_log(ctx: *const c_void, level: u8, message: RStr<'_>) {
    // SAFETY: as in `host_emit`.
    let ctx = unsafe { &*(ctx as *const HostContext) };
    ctx.log(level, message.as_str());
}

/// Why a plugin without the `set_capture` entry point (built before windows) fails it.
pub(crate) const CANNOT_PAUSE: &str =
    "its plugin has no set_capture entry point (built before capture windows)";
/// Why a plugin without the `attach` entry point (built before attach) fails it.
pub(crate) const CANNOT_ATTACH: &str =
    "this source cannot attach to a running process (its plugin has no attach entry point)";

/// The plugin behind an instance: a Rust root module or a C descriptor.
enum Live {
    Rust { module: PluginModuleRef, inst: FfiInstance },
    C(CInstance),
}

/// A sink's entry point for lent records, when its build lays out records like the host's.
type ConsumeRecords = extern "C" fn(FfiInstance, FfiRecords) -> xpuprof_sdk::abi::FfiResult<()>;

/// One live plugin instance. Destroyed on drop.
pub struct Instance {
    live: Live,
    ctx: &'static HostContext,
    name: String,
    lend: Option<ConsumeRecords>,
}

impl std::fmt::Debug for Instance {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Instance").field("name", &self.name).finish_non_exhaustive()
    }
}

// SAFETY: plugin instances are `Send` by the SDK's contract (`Source: Send`, `Sink: Send`), and
// the wrapper only calls into one instance from one thread at a time (`&mut self`).
unsafe impl Send for Instance {}

fn into_result<T>(r: RResult<T, abi_stable::std_types::RString>) -> Result<T, String> {
    match r {
        RResult::ROk(v) => Ok(v),
        RResult::RErr(e) => Err(bounded::cap(&e, bounded::MAX_MESSAGE_BYTES).into_owned()),
    }
}

impl Instance {
    /// Creates an instance of `plugin` with `args` (the `[plugin]` and `[session]` TOML
    /// document). Sources get `tx` to emit through; sinks get `None`.
    pub fn create(
        plugin: &LoadedPlugin,
        args: &str,
        source: usize,
        tx: Option<SyncSender<SourceBatch>>,
    ) -> Result<Self, String> {
        Self::create_with(plugin, args, HostContext::new(&plugin.meta.name, source, tx))
    }

    /// Creates an instance whose callbacks use `ctx` (made by the host beforehand, so that it
    /// can disconnect the instance even while `create` is still running).
    pub fn create_with(plugin: &LoadedPlugin, args: &str, ctx: &'static HostContext) -> Result<Self, String> {
        let live = match plugin.module {
            PluginEntry::Rust(module) => {
                let host = FfiHost {
                    ctx: ctx as *const HostContext as *const c_void,
                    emit: host_emit,
                    log: host_log,
                };
                into_result((module.create())(RStr::from_str(args), host))
                    .map(|inst| Live::Rust { module, inst })
            }
            PluginEntry::C(module) => CInstance::create(module, args, ctx).map(Live::C),
        };
        match live {
            Ok(live) => {
                let same_layout = plugin.meta.record_layout == Some(xpuprof_sdk::model::record_layout());
                let lend = match plugin.module {
                    PluginEntry::Rust(module) => module.consume_records().filter(|_| same_layout),
                    PluginEntry::C(_) => None,
                };
                Ok(Self { live, ctx, name: plugin.meta.name.clone(), lend })
            }
            Err(e) => {
                ctx.disconnect();
                Err(e)
            }
        }
    }

    /// The plugin's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Sources: collects the environment variables the target needs.
    pub fn prepare(&mut self) -> Result<Vec<(String, String)>, String> {
        match &mut self.live {
            Live::Rust { module, inst } => {
                let mut env = RVec::new();
                into_result((module.prepare())(*inst, &mut env))?;
                Ok(env.into_iter().map(|t| (t.0.into(), t.1.into())).collect())
            }
            Live::C(c) => c.prepare(),
        }
    }

    /// Sources: starts recording the process tree of `pid`.
    pub fn start(&mut self, pid: u32) -> Result<(), String> {
        match &mut self.live {
            Live::Rust { module, inst } => into_result((module.start())(*inst, pid)),
            Live::C(c) => c.start(pid),
        }
    }

    /// Sources: stops and flushes.
    pub fn stop(&mut self) -> Result<(), String> {
        match &mut self.live {
            Live::Rust { module, inst } => into_result((module.stop())(*inst)),
            Live::C(c) => c.stop(),
        }
    }

    /// Sources: opens (`on`) or closes a capture window. A plugin built before windows existed
    /// (no entry point) cannot pause: that is an error, as is the SDK's default.
    pub fn set_capture(&mut self, on: bool) -> Result<(), String> {
        match &mut self.live {
            Live::Rust { module, inst } => match module.set_capture() {
                Some(f) => into_result(f(*inst, on)),
                None => Err(CANNOT_PAUSE.to_owned()),
            },
            Live::C(c) => c.set_capture(on),
        }
    }

    /// Sources: starts recording the running process `pid` (and with `tree` its descendants),
    /// instead of `prepare` + `start`.
    pub fn attach(&mut self, pid: u32, tree: bool) -> Result<(), String> {
        match &mut self.live {
            Live::Rust { module, inst } => match module.attach() {
                Some(f) => into_result(f(*inst, pid, tree)),
                None => Err(CANNOT_ATTACH.to_owned()),
            },
            Live::C(c) => c.attach(pid, tree),
        }
    }

    /// Sinks: consumes a batch of encoded records.
    pub fn consume(&mut self, batch: &[u8]) -> Result<(), String> {
        match &mut self.live {
            Live::Rust { module, inst } => into_result((module.consume())(*inst, RSlice::from_slice(batch))),
            Live::C(c) => c.consume(batch),
        }
    }

    /// Sinks: consumes a batch, lent as decoded records when the plugin's build lays them out
    /// like ours, else encoded (once per batch, shared by every sink that needs it).
    pub fn consume_batch(&mut self, batch: &RecordBatch) -> Result<(), String> {
        match (&self.live, self.lend) {
            (Live::Rust { inst, .. }, Some(consume)) => {
                into_result(consume(*inst, FfiRecords::lend(batch.records())))
            }
            _ => self.consume(batch.encoded()),
        }
    }

    /// Sends this sink encoded batches even when it could be lent records: what a plugin of
    /// another build gets (tests compare both paths with it).
    pub fn send_encoded(&mut self) {
        self.lend = None;
    }

    /// Whether this sink is lent decoded records (see [`Instance::consume_batch`]).
    pub fn borrows_records(&self) -> bool {
        self.lend.is_some()
    }

    /// Sinks: finishes and returns the files written.
    pub fn finish(&mut self) -> Result<Vec<String>, String> {
        match &mut self.live {
            Live::Rust { module, inst } => {
                into_result((module.finish())(*inst)).map(|v| v.into_iter().map(Into::into).collect())
            }
            Live::C(c) => c.finish(),
        }
    }

    /// Stops emitting into the session's channel (after the source stopped).
    pub fn disconnect(&mut self) {
        self.ctx.disconnect();
    }

    /// What the host's callbacks of this instance use; it outlives the instance.
    pub fn host_context(&self) -> &'static HostContext {
        self.ctx
    }
}

impl Drop for Instance {
    fn drop(&mut self) {
        if let Live::Rust { module, inst } = &self.live {
            (module.destroy())(*inst);
        }
        // A C instance is destroyed when `live` drops, right after this.
        // Whatever the plugin's leftover threads emit from now on is late.
        self.ctx.disconnect();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_recycled_buffer_comes_back_empty_and_an_oversized_one_is_not_kept() {
        SourceBatch { source: 0, bytes: vec![0xee; 100] }.recycle();
        assert_eq!(copy_batch(b"abc"), b"abc", "nothing of the old contents is left");
        let big = SourceBatch { source: 0, bytes: Vec::with_capacity(SPARE_MAX_BYTES + 1) };
        big.recycle();
        assert!(copy_batch(b"x").capacity() <= SPARE_MAX_BYTES);
    }
}
