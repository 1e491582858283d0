//! A live instance of a C plugin: the callbacks the host hands it and the calls into it.

use std::ffi::{c_char, c_int, c_void, CStr};
use std::sync::Mutex;

use super::ffi;
use super::CModule;
use crate::host::bounded;
use crate::host::instance::HostContext;

/// What the C callbacks of one instance reach through `ctx`. Leaked, like [`HostContext`]: a
/// plugin thread may call `emit` after the instance is gone.
#[derive(Debug)]
struct CHost {
    host: &'static HostContext,
    error: Mutex<Option<String>>,
}

extern "C" fn c_emit(ctx: *mut c_void, batch: *const u8, len: usize) {
    // SAFETY: `ctx` is the leaked `CHost` of this instance (`CInstance::create`).
    let h = unsafe { &*(ctx as *const CHost) };
    let bytes = if batch.is_null() || len == 0 {
        &[][..]
    } else {
        // SAFETY: the header requires `len` readable bytes at `batch` for the call.
        unsafe { std::slice::from_raw_parts(batch, len) }
    };
    h.host.emit_batch(bytes);
}

fn lossy(p: *const c_char, len: usize) -> String {
    if p.is_null() {
        return String::new();
    }
    // SAFETY: the header requires `len` readable bytes at `p` for the call.
    let b = unsafe { std::slice::from_raw_parts(p.cast::<u8>(), len.min(bounded::MAX_MESSAGE_BYTES * 2)) };
    String::from_utf8_lossy(b).into_owned()
}

extern "C" fn c_log(ctx: *mut c_void, level: c_int, message: *const c_char, len: usize) {
    // SAFETY: as in `c_emit`.
    let h = unsafe { &*(ctx as *const CHost) };
    h.host.log(u8::try_from(level).unwrap_or(4), &lossy(message, len));
}

extern "C" fn c_set_error(ctx: *mut c_void, message: *const c_char, len: usize) {
    // SAFETY: as in `c_emit`.
    let h = unsafe { &*(ctx as *const CHost) };
    let msg = bounded::cap(&lossy(message, len), bounded::MAX_MESSAGE_BYTES).into_owned();
    *h.error.lock().unwrap_or_else(|e| e.into_inner()) = Some(msg);
}

/// The `[plugin]` table a C plugin's getters read, with its `[session]` facts.
struct Args {
    plugin: toml::Table,
    output_dir: String,
    start_time: u64,
    verbosity: u32,
}

fn parse_args(args: &str) -> Result<Args, String> {
    let mut doc: toml::Table =
        args.parse().map_err(|e| format!("failed to parse the plugin arguments: {e}"))?;
    let plugin = match doc.remove("plugin") {
        Some(toml::Value::Table(t)) => t,
        _ => toml::Table::new(),
    };
    let session = match doc.remove("session") {
        Some(toml::Value::Table(t)) => t,
        _ => toml::Table::new(),
    };
    let int = |k: &str| session.get(k).and_then(toml::Value::as_integer).unwrap_or(0);
    Ok(Args {
        plugin,
        output_dir: session.get("output_dir").and_then(|v| v.as_str()).unwrap_or(".").to_owned(),
        start_time: int("start_time") as u64,
        verbosity: int("verbosity") as u32,
    })
}

fn config_value<'a>(config: *const ffi::Config, key: *const c_char) -> Option<&'a toml::Value> {
    if config.is_null() || key.is_null() {
        return None;
    }
    // SAFETY: `config` is the `Args` `create` passed for the duration of the call, `key` a
    // NUL-terminated string (the header's contract).
    let (args, key) = unsafe { (&*(config as *const Args), CStr::from_ptr(key)) };
    args.plugin.get(key.to_str().ok()?)
}

/// Runs a getter: `Some(v)` written to `out`, `None` unset, `Err` another type.
fn get<T>(
    config: *const ffi::Config,
    key: *const c_char,
    out: *mut T,
    read: impl Fn(&toml::Value) -> Option<T>,
) -> c_int {
    match config_value(config, key) {
        None => ffi::CONFIG_UNSET,
        Some(v) => match read(v) {
            Some(x) if !out.is_null() => {
                // SAFETY: the caller passes a writable `T`.
                unsafe { out.write(x) };
                ffi::CONFIG_SET
            }
            _ => ffi::CONFIG_WRONG_TYPE,
        },
    }
}

extern "C" fn get_int(config: *const ffi::Config, key: *const c_char, out: *mut i64) -> c_int {
    get(config, key, out, toml::Value::as_integer)
}

extern "C" fn get_float(config: *const ffi::Config, key: *const c_char, out: *mut f64) -> c_int {
    get(config, key, out, |v| v.as_float().or_else(|| v.as_integer().map(|i| i as f64)))
}

extern "C" fn get_bool(config: *const ffi::Config, key: *const c_char, out: *mut c_int) -> c_int {
    get(config, key, out, |v| v.as_bool().map(c_int::from))
}

extern "C" fn get_str(config: *const ffi::Config, key: *const c_char, out: *mut ffi::Text) -> c_int {
    get(config, key, out, |v| v.as_str().map(ffi::Text::of))
}

extern "C" fn env_set(ctx: *mut c_void, key: *const c_char, value: *const c_char) {
    if key.is_null() || value.is_null() {
        return;
    }
    // SAFETY: `ctx` is the `Vec` `prepare` passed for the duration of the call; key and value
    // are NUL-terminated (the header's contract).
    let (env, k, v) =
        unsafe { (&mut *(ctx as *mut Vec<(String, String)>), CStr::from_ptr(key), CStr::from_ptr(value)) };
    env.push((k.to_string_lossy().into_owned(), v.to_string_lossy().into_owned()));
}

extern "C" fn files_add(ctx: *mut c_void, path: *const c_char) {
    if path.is_null() {
        return;
    }
    // SAFETY: as in `env_set`.
    let (files, p) = unsafe { (&mut *(ctx as *mut Vec<String>), CStr::from_ptr(path)) };
    files.push(p.to_string_lossy().into_owned());
}

/// The outcome of entry point `what` that returned `rc`, with the message it set.
fn result(chost: &CHost, what: &str, rc: c_int) -> Result<(), String> {
    let msg = chost.error.lock().unwrap_or_else(|e| e.into_inner()).take();
    match (rc, msg) {
        (ffi::OK, _) => Ok(()),
        (_, Some(m)) => Err(m),
        (rc, None) => {
            Err(format!("its {what} returned error {rc} without a message (set one with xpuprof_fail)"))
        }
    }
}

/// One live C plugin instance.
#[derive(Debug)]
pub struct CInstance {
    module: CModule,
    inst: *mut c_void,
    chost: &'static CHost,
}

impl CInstance {
    /// Calls the plugin's `create` with `args` (the `[plugin]` and `[session]` document).
    pub fn create(module: CModule, args: &str, host: &'static HostContext) -> Result<Self, String> {
        let chost: &'static CHost = Box::leak(Box::new(CHost { host, error: Mutex::new(None) }));
        let ffi_host: &'static ffi::Host = Box::leak(Box::new(ffi::Host {
            size: std::mem::size_of::<ffi::Host>() as u32,
            abi_version: ffi::C_ABI_VERSION,
            ctx: chost as *const CHost as *mut c_void,
            emit: c_emit,
            log: c_log,
            set_error: c_set_error,
        }));
        let parsed = parse_args(args)?;
        let info = ffi::CreateInfo {
            size: std::mem::size_of::<ffi::CreateInfo>() as u32,
            verbosity: parsed.verbosity,
            output_dir: ffi::Text::of(&parsed.output_dir),
            start_time: parsed.start_time,
            args_toml: ffi::Text::of(args),
            config: &parsed as *const Args as *const ffi::Config,
            get_int,
            get_float,
            get_bool,
            get_str,
        };
        let mut inst: *mut c_void = std::ptr::null_mut();
        let create = module.desc().create.ok_or("no create entry point")?;
        // SAFETY: the loader checked `create` is set; `ffi_host` lives forever, `info` and what
        // it points to for the call, `inst` is writable.
        let rc = unsafe { create(ffi_host, &info, &mut inst) };
        // A failed create owns nothing the host must release: `destroy` is not called.
        result(chost, "create", rc)?;
        Ok(Self { module, inst, chost })
    }

    fn result(&self, what: &str, rc: c_int) -> Result<(), String> {
        result(self.chost, what, rc)
    }

    /// Sources: the target's environment additions.
    pub fn prepare(&mut self) -> Result<Vec<(String, String)>, String> {
        let mut vars: Vec<(String, String)> = Vec::new();
        let Some(prepare) = self.module.desc().prepare else { return Ok(vars) };
        let env = ffi::Env {
            size: std::mem::size_of::<ffi::Env>() as u32,
            ctx: &mut vars as *mut Vec<(String, String)> as *mut c_void,
            set: env_set,
        };
        // SAFETY: `inst` came from this module's `create`; `env` lives for the call.
        let rc = unsafe { prepare(self.inst, &env) };
        self.result("prepare", rc)?;
        Ok(vars)
    }

    /// Sources: start recording `pid`.
    pub fn start(&mut self, pid: u32) -> Result<(), String> {
        let f = self.module.desc().start.ok_or("this plugin is a sink, not a source")?;
        // SAFETY: `inst` came from this module's `create`.
        let rc = unsafe { f(self.inst, pid) };
        self.result("start", rc)
    }

    /// Sources: stop and flush.
    pub fn stop(&mut self) -> Result<(), String> {
        let f = self.module.desc().stop.ok_or("this plugin is a sink, not a source")?;
        // SAFETY: as in `start`.
        let rc = unsafe { f(self.inst) };
        self.result("stop", rc)
    }

    /// Sources: opens or closes a capture window; a plugin without the entry point cannot pause.
    pub fn set_capture(&mut self, on: bool) -> Result<(), String> {
        let f = self.module.desc().set_capture.ok_or(crate::host::instance::CANNOT_PAUSE)?;
        // SAFETY: as in `start`.
        let rc = unsafe { f(self.inst, c_int::from(on)) };
        self.result("set_capture", rc)
    }

    /// Sources: starts recording the running process `pid` (`tree`: with its descendants).
    pub fn attach(&mut self, pid: u32, tree: bool) -> Result<(), String> {
        let f = self.module.desc().attach.ok_or(crate::host::instance::CANNOT_ATTACH)?;
        // SAFETY: as in `start`.
        let rc = unsafe { f(self.inst, pid, c_int::from(tree)) };
        self.result("attach", rc)
    }

    /// Sinks: one batch.
    pub fn consume(&mut self, batch: &[u8]) -> Result<(), String> {
        let f = self.module.desc().consume.ok_or("this plugin is a source, not a sink")?;
        // SAFETY: as in `start`; the batch is valid for the call.
        let rc = unsafe { f(self.inst, batch.as_ptr(), batch.len()) };
        self.result("consume", rc)
    }

    /// Sinks: finish; the files written.
    pub fn finish(&mut self) -> Result<Vec<String>, String> {
        let f = self.module.desc().finish.ok_or("this plugin is a source, not a sink")?;
        let mut files: Vec<String> = Vec::new();
        let list = ffi::Files {
            size: std::mem::size_of::<ffi::Files>() as u32,
            ctx: &mut files as *mut Vec<String> as *mut c_void,
            add: files_add,
        };
        // SAFETY: as in `start`; `list` lives for the call.
        let rc = unsafe { f(self.inst, &list) };
        self.result("finish", rc)?;
        Ok(files)
    }
}

impl Drop for CInstance {
    fn drop(&mut self) {
        if let Some(destroy) = self.module.desc().destroy {
            // SAFETY: `inst` came from this module's `create` and is destroyed once, here.
            unsafe { destroy(self.inst) };
        }
    }
}
