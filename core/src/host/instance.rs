//! Live plugin instances: the host callbacks they get, and safe wrappers around the ABI calls.

use std::ffi::c_void;
use std::sync::mpsc::SyncSender;
use std::sync::Mutex;

use abi_stable::std_types::{RResult, RSlice, RStr, RVec};
use xpuprof_sdk::abi::{FfiHost, FfiInstance, PluginModuleRef};

use super::bounded;
use super::loader::LoadedPlugin;

/// A batch of encoded records from one source.
#[derive(Debug)]
pub struct SourceBatch {
    /// Index of the source in the session.
    pub source: usize,
    /// Encoded records.
    pub bytes: Vec<u8>,
}

/// What the host's callbacks need for one instance. Boxed so its address is stable.
#[derive(Debug)]
struct CallbackCtx {
    name: String,
    source: usize,
    tx: Mutex<Option<SyncSender<SourceBatch>>>,
}

extern "C" fn host_emit(ctx: *const c_void, batch: RSlice<'_, u8>) {
    // SAFETY: `ctx` is the `CallbackCtx` boxed in the `Instance` that owns the plugin instance;
    // it is freed only after `destroy` returned, and plugins may not emit after that.
    let ctx = unsafe { &*(ctx as *const CallbackCtx) };
    let tx = ctx.tx.lock().unwrap_or_else(|e| e.into_inner()).clone();
    if let Some(tx) = tx {
        // A closed channel means the session is over: late records have nowhere to go.
        let _ = tx.send(SourceBatch { source: ctx.source, bytes: batch.as_slice().to_vec() });
    }
}

extern "C" fn host_log(ctx: *const c_void, level: u8, message: RStr<'_>) {
    // SAFETY: as in `host_emit`.
    let ctx = unsafe { &*(ctx as *const CallbackCtx) };
    let (name, msg) = (ctx.name.as_str(), bounded::cap(message.as_str(), bounded::MAX_MESSAGE_BYTES));
    match level {
        1 => tracing::error!("{name}: {msg}"),
        2 => tracing::warn!("{name}: {msg}"),
        3 => tracing::info!("{name}: {msg}"),
        _ => tracing::debug!("{name}: {msg}"),
    }
}

/// One live plugin instance. Destroyed on drop.
pub struct Instance {
    module: PluginModuleRef,
    inst: FfiInstance,
    ctx: Box<CallbackCtx>,
    name: String,
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
        let ctx = Box::new(CallbackCtx { name: plugin.meta.name.clone(), source, tx: Mutex::new(tx) });
        let host =
            FfiHost { ctx: &*ctx as *const CallbackCtx as *const c_void, emit: host_emit, log: host_log };
        let inst = into_result((plugin.module.create())(RStr::from_str(args), host))?;
        Ok(Self { module: plugin.module, inst, ctx, name: plugin.meta.name.clone() })
    }

    /// The plugin's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Sources: collects the environment variables the target needs.
    pub fn prepare(&mut self) -> Result<Vec<(String, String)>, String> {
        let mut env = RVec::new();
        into_result((self.module.prepare())(self.inst, &mut env))?;
        Ok(env.into_iter().map(|t| (t.0.into(), t.1.into())).collect())
    }

    /// Sources: starts recording the process tree of `pid`.
    pub fn start(&mut self, pid: u32) -> Result<(), String> {
        into_result((self.module.start())(self.inst, pid))
    }

    /// Sources: stops and flushes.
    pub fn stop(&mut self) -> Result<(), String> {
        into_result((self.module.stop())(self.inst))
    }

    /// Sinks: consumes a batch of encoded records.
    pub fn consume(&mut self, batch: &[u8]) -> Result<(), String> {
        into_result((self.module.consume())(self.inst, RSlice::from_slice(batch)))
    }

    /// Sinks: finishes and returns the files written.
    pub fn finish(&mut self) -> Result<Vec<String>, String> {
        into_result((self.module.finish())(self.inst)).map(|v| v.into_iter().map(Into::into).collect())
    }

    /// Stops emitting into the session's channel (after the source stopped).
    pub fn disconnect(&mut self) {
        *self.ctx.tx.lock().unwrap_or_else(|e| e.into_inner()) = None;
    }
}

impl Drop for Instance {
    fn drop(&mut self) {
        (self.module.destroy())(self.inst);
    }
}
