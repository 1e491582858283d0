//! The structs of `sdk/include/xpuprof/plugin.h` as Rust sees them. Their layouts are pinned to
//! the header's by `core/tests/host/cabi.rs`, which compiles a C program printing `sizeof` and
//! `offsetof` of each and compares them with these.

use std::ffi::{c_char, c_int, c_void};

/// `XPUPROF_C_ABI_VERSION`.
pub const C_ABI_VERSION: u32 = 1;
/// `XPUPROF_ENTRY_SYMBOL`.
pub const ENTRY_SYMBOL: &str = "xpuprof_plugin_v1";
/// `XPUPROF_OK`.
pub const OK: c_int = 0;
/// `XPUPROF_CONFIG_SET`.
pub const CONFIG_SET: c_int = 1;
/// `XPUPROF_CONFIG_UNSET`.
pub const CONFIG_UNSET: c_int = 0;
/// `XPUPROF_CONFIG_WRONG_TYPE`.
pub const CONFIG_WRONG_TYPE: c_int = -1;

/// `xpuprof_text`: bytes that are not NUL-terminated.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct Text {
    /// First byte.
    pub ptr: *const c_char,
    /// Length in bytes.
    pub len: usize,
}

impl Text {
    /// A text over `s`, valid as long as `s`.
    pub fn of(s: &str) -> Self {
        Self { ptr: s.as_ptr().cast(), len: s.len() }
    }
}

/// `xpuprof_host`.
#[repr(C)]
#[derive(Debug)]
pub struct Host {
    /// `sizeof(xpuprof_host)` of this host.
    pub size: u32,
    /// [`C_ABI_VERSION`].
    pub abi_version: u32,
    /// Passed back to every callback.
    pub ctx: *mut c_void,
    /// Takes a batch of encoded records.
    pub emit: extern "C" fn(ctx: *mut c_void, batch: *const u8, len: usize),
    /// Logs a message.
    pub log: extern "C" fn(ctx: *mut c_void, level: c_int, message: *const c_char, len: usize),
    /// Sets the current entry point's error message.
    pub set_error: extern "C" fn(ctx: *mut c_void, message: *const c_char, len: usize),
}

/// Opaque `xpuprof_config`.
pub type Config = c_void;

/// `xpuprof_create_info`.
#[repr(C)]
#[derive(Debug)]
pub struct CreateInfo {
    /// `sizeof(xpuprof_create_info)` of this host.
    pub size: u32,
    /// 0 = warnings, 1 = info, 2 = debug.
    pub verbosity: u32,
    /// Output directory.
    pub output_dir: Text,
    /// Session start, ns.
    pub start_time: u64,
    /// The whole argument document.
    pub args_toml: Text,
    /// Opaque config handle.
    pub config: *const Config,
    /// Integer getter.
    pub get_int: extern "C" fn(config: *const Config, key: *const c_char, out: *mut i64) -> c_int,
    /// Float getter.
    pub get_float: extern "C" fn(config: *const Config, key: *const c_char, out: *mut f64) -> c_int,
    /// Bool getter.
    pub get_bool: extern "C" fn(config: *const Config, key: *const c_char, out: *mut c_int) -> c_int,
    /// String getter.
    pub get_str: extern "C" fn(config: *const Config, key: *const c_char, out: *mut Text) -> c_int,
}

/// `xpuprof_env`.
#[repr(C)]
#[derive(Debug)]
pub struct Env {
    /// Size of this struct.
    pub size: u32,
    /// Passed back to `set`.
    pub ctx: *mut c_void,
    /// Sets one variable.
    pub set: extern "C" fn(ctx: *mut c_void, key: *const c_char, value: *const c_char),
}

/// `xpuprof_files`.
#[repr(C)]
#[derive(Debug)]
pub struct Files {
    /// Size of this struct.
    pub size: u32,
    /// Passed back to `add`.
    pub ctx: *mut c_void,
    /// Names one file written.
    pub add: extern "C" fn(ctx: *mut c_void, path: *const c_char),
}

/// `create`.
pub type CreateFn = unsafe extern "C" fn(*const Host, *const CreateInfo, *mut *mut c_void) -> c_int;
/// `prepare`.
pub type PrepareFn = unsafe extern "C" fn(*mut c_void, *const Env) -> c_int;
/// `start`.
pub type StartFn = unsafe extern "C" fn(*mut c_void, u32) -> c_int;
/// `stop`.
pub type StopFn = unsafe extern "C" fn(*mut c_void) -> c_int;
/// `consume`.
pub type ConsumeFn = unsafe extern "C" fn(*mut c_void, *const u8, usize) -> c_int;
/// `finish`.
pub type FinishFn = unsafe extern "C" fn(*mut c_void, *const Files) -> c_int;
/// `destroy`.
pub type DestroyFn = unsafe extern "C" fn(*mut c_void);
/// `set_capture`.
pub type SetCaptureFn = unsafe extern "C" fn(*mut c_void, c_int) -> c_int;
/// `attach`.
pub type AttachFn = unsafe extern "C" fn(*mut c_void, u32, c_int) -> c_int;

/// `xpuprof_checks`: what `machine_checks` reports through.
#[repr(C)]
#[derive(Debug)]
pub struct Checks {
    /// Size of this struct.
    pub size: u32,
    /// Passed back to `add`.
    pub ctx: *mut c_void,
    /// Reports one check: capability, status, detail, hint (may be NULL).
    pub add: extern "C" fn(*mut c_void, *const c_char, c_int, *const c_char, *const c_char),
}

/// `xpuprof_backend_name`: a correlation backend and its name in reports.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct BackendName {
    /// The backend id.
    pub id: u32,
    /// Its name; NULL ends the plugin's list.
    pub name: *const c_char,
}

/// `machine_checks`.
pub type MachineChecksFn = unsafe extern "C" fn(*const Checks);

/// `xpuprof_plugin`, the descriptor. Entry points are `Option`s: C may leave them NULL.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct Plugin {
    /// `sizeof(xpuprof_plugin)` as the plugin was compiled.
    pub size: u32,
    /// The plugin's `XPUPROF_C_ABI_VERSION`.
    pub abi_version: u32,
    /// Source or sink.
    pub kind: u32,
    /// Zero.
    pub reserved: u32,
    /// Name.
    pub name: *const c_char,
    /// Version.
    pub version: *const c_char,
    /// Description.
    pub description: *const c_char,
    /// `XPUPROF_HEADER_VERSION` it was compiled with.
    pub header_version: *const c_char,
    /// Config schema, TOML.
    pub config_schema: *const c_char,
    /// NULL-terminated capability names.
    pub capabilities: *const *const c_char,
    /// Entry point.
    pub create: Option<CreateFn>,
    /// Entry point.
    pub prepare: Option<PrepareFn>,
    /// Entry point.
    pub start: Option<StartFn>,
    /// Entry point.
    pub stop: Option<StopFn>,
    /// Entry point.
    pub consume: Option<ConsumeFn>,
    /// Entry point.
    pub finish: Option<FinishFn>,
    /// Entry point.
    pub destroy: Option<DestroyFn>,
    /// Entry point, appended (absent from descriptors whose `size` ends before it).
    pub set_capture: Option<SetCaptureFn>,
    /// Entry point, appended (absent from descriptors whose `size` ends before it).
    pub attach: Option<AttachFn>,
    /// Machine checks, appended in header 0.4.
    pub machine_checks: Option<MachineChecksFn>,
    /// Correlation backends, a list ended by a NULL name, or NULL; appended in header 0.4.
    pub backends: *const BackendName,
    /// Non-zero: a default source; appended in header 0.4.
    pub default_source: u32,
    /// Zero.
    pub reserved2: u32,
}

impl Plugin {
    /// The size of the first C ABI 1 descriptor (up to `destroy`): shorter ones are refused,
    /// fields past it are read only when the plugin's `size` covers them.
    pub const MIN_SIZE: usize = std::mem::offset_of!(Plugin, set_capture);
}

/// Offsets and sizes of every field of the ABI structs, by C name, as this build lays them out
/// (compared with the C compiler's by the layout test).
pub fn layout() -> Vec<(&'static str, usize)> {
    use std::mem::{offset_of, size_of};
    macro_rules! fields {
        ($out:ident, $cname:literal, $t:ty, [$($f:ident),*]) => {
            $out.push((concat!("sizeof ", $cname), size_of::<$t>()));
            $( $out.push((concat!($cname, ".", stringify!($f)), offset_of!($t, $f))); )*
        };
    }
    let mut out = Vec::new();
    fields!(out, "xpuprof_text", Text, [ptr, len]);
    fields!(out, "xpuprof_host", Host, [size, abi_version, ctx, emit, log, set_error]);
    fields!(
        out,
        "xpuprof_create_info",
        CreateInfo,
        [size, verbosity, output_dir, start_time, args_toml, config, get_int, get_float, get_bool, get_str]
    );
    fields!(out, "xpuprof_env", Env, [size, ctx, set]);
    fields!(out, "xpuprof_files", Files, [size, ctx, add]);
    fields!(out, "xpuprof_checks", Checks, [size, ctx, add]);
    fields!(out, "xpuprof_backend_name", BackendName, [id, name]);
    fields!(
        out,
        "xpuprof_plugin",
        Plugin,
        [
            size,
            abi_version,
            kind,
            reserved,
            name,
            version,
            description,
            header_version,
            config_schema,
            capabilities,
            create,
            prepare,
            start,
            stop,
            consume,
            finish,
            destroy,
            set_capture,
            attach,
            machine_checks,
            backends,
            default_source,
            reserved2
        ]
    );
    out
}
