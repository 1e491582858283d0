//! The one place the agent calls CUPTI: the loaded function table and [`check`], which turns
//! every `CUptiResult` into a `Result`.

use std::ffi::CStr;

pub use cupti_sys as ffi;
use cupti_sys::{CUptiResult, Cupti};

/// A failed CUPTI call: which call, its result code and CUPTI's text for it.
#[derive(Debug, Clone)]
pub struct CuptiError {
    /// The call.
    pub call: &'static str,
    /// The `CUptiResult`.
    pub code: u32,
    /// CUPTI's description.
    pub text: String,
}

impl std::fmt::Display for CuptiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} failed: {} (CUPTI error {})", self.call, self.text, self.code)?;
        if let Some(hint) = hint(self.code) {
            write!(f, "; {hint}")?;
        }
        Ok(())
    }
}

/// A hint for the result codes whose fix is known.
fn hint(code: u32) -> Option<&'static str> {
    use cupti_sys::CUptiResult::{
        CUPTI_ERROR_CUDA_COMPILER_NOT_COMPATIBLE, CUPTI_ERROR_INSUFFICIENT_PRIVILEGES,
        CUPTI_ERROR_INVALID_DEVICE, CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED,
        CUPTI_ERROR_NOT_COMPATIBLE,
    };
    Some(match code {
        CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED => {
            "another CUPTI client is already subscribed in this process (torch.profiler, Nsight Systems, \
             another injection); stop it or run without the cupti source"
        }
        CUPTI_ERROR_INVALID_DEVICE => "no usable NVIDIA GPU is visible to this process",
        CUPTI_ERROR_CUDA_COMPILER_NOT_COMPATIBLE | CUPTI_ERROR_NOT_COMPATIBLE => {
            "the CUPTI library does not match the CUDA driver; install a CUPTI matching the CUDA runtime"
        }
        CUPTI_ERROR_INSUFFICIENT_PRIVILEGES => {
            "profiling is restricted to admin users (NVreg_RestrictProfilingToAdminUsers)"
        }
        _ => return None,
    })
}

/// CUPTI's NVTX injection entry point.
type NvtxInit = unsafe extern "C" fn(*const std::os::raw::c_void) -> std::os::raw::c_int;

/// The loaded CUPTI library.
pub struct Lib {
    /// Function table.
    pub api: Cupti,
    /// Where it was loaded from.
    pub path: String,
    nvtx: Option<NvtxInit>,
    _lib: libloading::Library,
}

impl std::fmt::Debug for Lib {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lib").field("path", &self.path).finish()
    }
}

impl Lib {
    /// Loads libcupti from `path`.
    ///
    /// # Safety
    /// Loading a library runs its initialisers; `path` must be a CUPTI library.
    pub unsafe fn load(path: &str) -> Result<Self, String> {
        // SAFETY: the caller guarantees `path` names a CUPTI library, whose initialisers are
        // safe to run in a CUDA process.
        let api = unsafe { Cupti::new(path) }.map_err(|e| format!("failed to load {path}: {e}"))?;
        // SAFETY: as above; loading the same file again only takes another reference.
        let lib =
            unsafe { libloading::Library::new(path) }.map_err(|e| format!("failed to load {path}: {e}"))?;
        // SAFETY: CUPTI exports `InitializeInjectionNvtx2` with the `NvtxInit` signature.
        let nvtx = unsafe { lib.get::<NvtxInit>(b"InitializeInjectionNvtx2\0") }.ok().map(|s| *s);
        Ok(Self { api, path: path.to_owned(), nvtx, _lib: lib })
    }

    /// Hands NVTX's export table to CUPTI's NVTX handler; 0 when CUPTI has none.
    ///
    /// # Safety
    /// `get_export_table` must be the function NVTX passes to `InitializeInjectionNvtx2`.
    pub unsafe fn forward_nvtx(&self, get_export_table: *const std::os::raw::c_void) -> std::os::raw::c_int {
        match self.nvtx {
            // SAFETY: forwarded unchanged from NVTX, as the caller guarantees.
            Some(f) => unsafe { f(get_export_table) },
            None => 0,
        }
    }

    /// Turns a `CUptiResult` into a `Result`, naming the call.
    pub fn check(&self, call: &'static str, code: CUptiResult::Type) -> Result<(), CuptiError> {
        if code == CUptiResult::CUPTI_SUCCESS {
            return Ok(());
        }
        let mut text: *const std::os::raw::c_char = std::ptr::null();
        let text = match &self.api.cuptiGetResultString {
            // SAFETY: cuptiGetResultString writes a pointer to a static string into `text`.
            Ok(f) => match unsafe { f(code, &mut text) } {
                0 if !text.is_null() => {
                    // SAFETY: CUPTI returned a valid, static, NUL-terminated string.
                    unsafe { CStr::from_ptr(text) }.to_string_lossy().into_owned()
                }
                _ => "unknown error".to_owned(),
            },
            Err(_) => "unknown error".to_owned(),
        };
        Err(CuptiError { call, code, text })
    }
}

/// A C string pointer from CUPTI as text, or `""` for null.
///
/// # Safety
/// `p` must be null or point to a NUL-terminated string that lives for the call.
pub unsafe fn c_str<'a>(p: *const std::os::raw::c_char) -> &'a [u8] {
    if p.is_null() {
        return b"";
    }
    // SAFETY: guaranteed by the caller.
    unsafe { CStr::from_ptr(p) }.to_bytes()
}

/// Activity buffer callbacks.
pub type RequestFn = unsafe extern "C" fn(*mut *mut u8, *mut usize, *mut usize);
/// Activity buffer completion callback.
pub type CompleteFn = unsafe extern "C" fn(ffi::CUcontext, u32, *mut u8, usize, usize);
/// API callback.
pub type CallbackFn = unsafe extern "C" fn(*mut std::os::raw::c_void, u32, u32, *const std::os::raw::c_void);
/// Timestamp callback.
pub type TimestampFn = unsafe extern "C" fn() -> u64;

macro_rules! call {
    ($self:ident, $name:ident ( $($arg:expr),* )) => {{
        match &$self.api.$name {
            // SAFETY: every argument is valid for the call as documented in the CUPTI headers
            // (checked by each wrapper below), and the function pointer comes from libcupti.
            Ok(f) => $self.check(stringify!($name), unsafe { f($($arg),*) }),
            Err(_) => Err(CuptiError {
                call: stringify!($name),
                code: CUptiResult::CUPTI_ERROR_NOT_SUPPORTED,
                text: format!("{} is missing from {}", stringify!($name), $self.path),
            }),
        }
    }};
}

impl Lib {
    /// `cuptiGetVersion`.
    pub fn version(&self) -> Result<u32, CuptiError> {
        let mut v = 0u32;
        call!(self, cuptiGetVersion(&mut v))?;
        Ok(v)
    }

    /// `cuptiSubscribe` with `cb` and no user data.
    pub fn subscribe(&self, cb: CallbackFn) -> Result<ffi::CUpti_SubscriberHandle, CuptiError> {
        let mut h: ffi::CUpti_SubscriberHandle = std::ptr::null_mut();
        call!(self, cuptiSubscribe(&mut h, Some(cb), std::ptr::null_mut()))?;
        Ok(h)
    }

    /// `cuptiUnsubscribe`.
    pub fn unsubscribe(&self, h: ffi::CUpti_SubscriberHandle) -> Result<(), CuptiError> {
        call!(self, cuptiUnsubscribe(h))
    }

    /// `cuptiFinalize`: CUPTI detaches from the process (every subscriber, enabled kind and
    /// registered callback gone); any later CUPTI call attaches it again.
    pub fn finalize(&self) -> Result<(), CuptiError> {
        call!(self, cuptiFinalize())
    }

    /// `cuptiEnableDomain(on, h, domain)`.
    pub fn set_domain(
        &self,
        on: bool,
        h: ffi::CUpti_SubscriberHandle,
        domain: u32,
    ) -> Result<(), CuptiError> {
        call!(self, cuptiEnableDomain(u32::from(on), h, domain))
    }

    /// `cuptiEnableCallback(on, h, domain, cbid)`.
    pub fn set_callback(
        &self,
        on: bool,
        h: ffi::CUpti_SubscriberHandle,
        domain: u32,
        cbid: u32,
    ) -> Result<(), CuptiError> {
        call!(self, cuptiEnableCallback(u32::from(on), h, domain, cbid))
    }

    /// `cuptiActivityEnable`.
    pub fn activity_enable(&self, kind: u32) -> Result<(), CuptiError> {
        call!(self, cuptiActivityEnable(kind))
    }

    /// `cuptiActivityDisable`.
    pub fn activity_disable(&self, kind: u32) -> Result<(), CuptiError> {
        call!(self, cuptiActivityDisable(kind))
    }

    /// `cuptiActivityEnableRuntimeApi(cbid, 1)`.
    pub fn enable_runtime_api(&self, cbid: u32) -> Result<(), CuptiError> {
        call!(self, cuptiActivityEnableRuntimeApi(cbid, 1))
    }

    /// `cuptiActivityEnableDriverApi(cbid, 1)`.
    pub fn enable_driver_api(&self, cbid: u32) -> Result<(), CuptiError> {
        call!(self, cuptiActivityEnableDriverApi(cbid, 1))
    }

    /// `cuptiActivityRegisterCallbacks`.
    pub fn register_buffers(&self, req: RequestFn, done: CompleteFn) -> Result<(), CuptiError> {
        call!(self, cuptiActivityRegisterCallbacks(Some(req), Some(done)))
    }

    /// `cuptiActivityRegisterTimestampCallback`.
    pub fn register_timestamp(&self, ts: TimestampFn) -> Result<(), CuptiError> {
        call!(self, cuptiActivityRegisterTimestampCallback(Some(ts)))
    }

    /// `cuptiActivitySetAttribute` for a `size_t` attribute.
    pub fn set_size_attribute(&self, attr: u32, value: usize) -> Result<(), CuptiError> {
        let mut v = value;
        let mut size = std::mem::size_of::<usize>();
        call!(self, cuptiActivitySetAttribute(attr, &mut size, (&mut v as *mut usize).cast()))
    }

    /// `cuptiSetThreadIdType(SYSTEM)`: activity records carry kernel thread ids (gettid), not
    /// pthread handles, so they match launch sites and the eBPF source.
    pub fn use_system_thread_ids(&self) -> Result<(), CuptiError> {
        call!(
            self,
            cuptiSetThreadIdType(ffi::CUpti_ActivityThreadIdType::CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM)
        )
    }

    /// `cuptiActivityFlushAll(flag)`.
    pub fn flush_all(&self, flag: u32) -> Result<(), CuptiError> {
        call!(self, cuptiActivityFlushAll(flag))
    }

    /// `cuptiActivityGetNumDroppedRecords(ctx, stream)`.
    pub fn dropped(&self, ctx: ffi::CUcontext, stream: u32) -> Result<usize, CuptiError> {
        let mut n = 0usize;
        call!(self, cuptiActivityGetNumDroppedRecords(ctx, stream, &mut n))?;
        Ok(n)
    }

    /// `cuptiGetTimestamp`.
    pub fn timestamp(&self) -> Result<u64, CuptiError> {
        let mut t = 0u64;
        call!(self, cuptiGetTimestamp(&mut t))?;
        Ok(t)
    }

    /// `cuptiGetGraphNodeId`: the id CUPTI gives `node` (kernel records carry it).
    pub fn graph_node_id(&self, node: ffi::CUgraphNode) -> Result<u64, CuptiError> {
        let mut id = 0u64;
        call!(self, cuptiGetGraphNodeId(node, &mut id))?;
        Ok(id)
    }

    /// `cuptiGetGraphId`: the id CUPTI gives `graph`.
    pub fn graph_id(&self, graph: ffi::CUgraph) -> Result<u32, CuptiError> {
        let mut id = 0u32;
        call!(self, cuptiGetGraphId(graph, &mut id))?;
        Ok(id)
    }

    /// `cuptiGetCallbackName`: the API function's name.
    pub fn callback_name(&self, domain: u32, cbid: u32) -> Option<String> {
        let mut name: *const std::os::raw::c_char = std::ptr::null();
        call!(self, cuptiGetCallbackName(domain, cbid, &mut name)).ok()?;
        // SAFETY: CUPTI returned a static NUL-terminated string (or null).
        Some(String::from_utf8_lossy(unsafe { c_str(name) }).into_owned())
    }

    /// Walks the records of a completed buffer: calls `f(record)` for each, with the record's
    /// bytes (its size is the distance to the next record, or to the end of the valid data).
    ///
    /// # Safety
    /// `buf` must be a buffer CUPTI completed, with `valid` bytes of records.
    pub unsafe fn for_each_record(&self, buf: *mut u8, valid: usize, mut f: impl FnMut(&[u8])) {
        let Ok(next) = &self.api.cuptiActivityGetNextRecord else { return };
        let mut rec: *mut ffi::CUpti_Activity = std::ptr::null_mut();
        let mut prev: Option<usize> = None;
        loop {
            // SAFETY: `buf`/`valid` describe a completed buffer (caller), `rec` is CUPTI's cursor.
            let r = unsafe { next(buf, valid, &mut rec) };
            let at = if r == CUptiResult::CUPTI_SUCCESS { Some(rec as usize - buf as usize) } else { None };
            if let Some(p) = prev {
                let end = at.unwrap_or(valid).min(valid);
                // SAFETY: `p..end` lies inside the valid part of the buffer.
                f(unsafe { std::slice::from_raw_parts(buf.add(p), end - p) });
            }
            match at {
                Some(a) => prev = Some(a),
                None => break,
            }
        }
    }
}

/// Whether this process has initialised CUDA (`cuInit` ran): `cuDeviceGetCount` of the loaded
/// driver answers `CUDA_ERROR_NOT_INITIALIZED` (3) before. `None` when no driver is loaded or it
/// lacks the function.
pub fn cuda_initialised() -> Option<bool> {
    // SAFETY: RTLD_NOLOAD only returns a handle to a library already loaded; nothing runs.
    let h = unsafe { libc::dlopen(c"libcuda.so.1".as_ptr(), libc::RTLD_NOLOAD | libc::RTLD_NOW) };
    // The driver by its soname (loaded locally by the CUDA runtime), else in the global scope.
    let scope = if h.is_null() { libc::RTLD_DEFAULT } else { h };
    // SAFETY: dlsym on a valid handle (or the global scope) with a NUL-terminated name.
    let f = unsafe { libc::dlsym(scope, c"cuDeviceGetCount".as_ptr()) };
    let answer = (!f.is_null()).then(|| {
        // SAFETY: cuDeviceGetCount has this signature (cuda.h) and only writes the count.
        let get: unsafe extern "C" fn(*mut std::os::raw::c_int) -> u32 = unsafe { std::mem::transmute(f) };
        let mut n = 0;
        // SAFETY: `n` is a valid out-pointer.
        let result = unsafe { get(&mut n) };
        result != 3
    });
    if !h.is_null() {
        // SAFETY: `h` came from dlopen above; the library stays loaded (the process holds it).
        unsafe { libc::dlclose(h) };
    }
    answer
}

/// The loaded CUDA driver's `CUresult` as a `Result`, naming the call.
fn cu(call: &str, code: u32) -> Result<(), String> {
    match code {
        0 => Ok(()),
        code => Err(format!("{call} failed: CUDA error {code}")),
    }
}

/// The first of `names` the loaded driver (`scope`) exports.
fn driver_symbol(
    scope: *mut std::os::raw::c_void,
    names: &[&CStr],
) -> Result<*mut std::os::raw::c_void, String> {
    names
        .iter()
        // SAFETY: dlsym on a valid handle (or the global scope) with a NUL-terminated name.
        .map(|n| unsafe { libc::dlsym(scope, n.as_ptr()) })
        .find(|f| !f.is_null())
        .ok_or_else(|| format!("the CUDA driver has no {}", names[0].to_string_lossy()))
}

/// The devices of this process as the loaded CUDA driver (`libcuda.so.1`) describes them:
/// `cuDeviceGetCount`, `cuDeviceGet`, `cuDeviceGetName`, `cuDeviceGetUuid`, `cuDeviceTotalMem`
/// and `cuDeviceGetAttribute` (multiprocessors, compute capability). Call it once CUDA is
/// initialised ([`cuda_initialised`]), not from inside `cuInit`.
pub fn driver_devices() -> Result<Vec<xpuprof_cupti_wire::DeviceDesc>, String> {
    use std::os::raw::{c_char, c_int};
    // cuda.h's CU_DEVICE_ATTRIBUTE_* numbers (stable across CUDA versions).
    const MULTIPROCESSOR_COUNT: c_int = 16;
    const CC_MAJOR: c_int = 75;
    const CC_MINOR: c_int = 76;
    // SAFETY: RTLD_NOLOAD only returns a handle to a library already loaded; nothing runs.
    let h = unsafe { libc::dlopen(c"libcuda.so.1".as_ptr(), libc::RTLD_NOLOAD | libc::RTLD_NOW) };
    let scope = if h.is_null() { libc::RTLD_DEFAULT } else { h };
    let found = (|| {
        let f = |names: &[&CStr]| driver_symbol(scope, names);
        Ok::<_, String>((
            f(&[c"cuDeviceGetCount"])?,
            f(&[c"cuDeviceGet"])?,
            f(&[c"cuDeviceGetName"])?,
            f(&[c"cuDeviceGetUuid_v2", c"cuDeviceGetUuid"])?,
            f(&[c"cuDeviceTotalMem_v2", c"cuDeviceTotalMem"])?,
            f(&[c"cuDeviceGetAttribute"])?,
        ))
    })();
    if !h.is_null() {
        // SAFETY: `h` came from dlopen above; the process keeps the driver loaded (it holds it
        // itself), so the functions found stay valid.
        unsafe { libc::dlclose(h) };
    }
    let (count, get, name, uuid, memory, attribute) = found?;
    // SAFETY: each symbol is the cuda.h function of that name, with these signatures (CUdevice
    // is an int, CUuuid 16 bytes, CUdevice_attribute an int enum).
    let (count, get, name, uuid, memory, attribute) = unsafe {
        (
            std::mem::transmute::<*mut std::os::raw::c_void, unsafe extern "C" fn(*mut c_int) -> u32>(count),
            std::mem::transmute::<*mut std::os::raw::c_void, unsafe extern "C" fn(*mut c_int, c_int) -> u32>(
                get,
            ),
            std::mem::transmute::<
                *mut std::os::raw::c_void,
                unsafe extern "C" fn(*mut c_char, c_int, c_int) -> u32,
            >(name),
            std::mem::transmute::<*mut std::os::raw::c_void, unsafe extern "C" fn(*mut [u8; 16], c_int) -> u32>(
                uuid,
            ),
            std::mem::transmute::<*mut std::os::raw::c_void, unsafe extern "C" fn(*mut usize, c_int) -> u32>(
                memory,
            ),
            std::mem::transmute::<
                *mut std::os::raw::c_void,
                unsafe extern "C" fn(*mut c_int, c_int, c_int) -> u32,
            >(attribute),
        )
    };
    let mut n = 0;
    // SAFETY: `n` is a valid out-pointer.
    cu("cuDeviceGetCount", unsafe { count(&mut n) })?;
    let mut out = Vec::new();
    for ordinal in 0..n {
        let mut dev = 0;
        // SAFETY: `dev` is a valid out-pointer; `ordinal` is below the count.
        cu("cuDeviceGet", unsafe { get(&mut dev, ordinal) })?;
        let mut text = [0 as c_char; 256];
        // SAFETY: the driver writes at most `len` bytes, NUL-terminated, into `text`; the last
        // byte is left out of `len`, so it stays 0.
        cu("cuDeviceGetName", unsafe { name(text.as_mut_ptr(), text.len() as c_int - 1, dev) })?;
        // SAFETY: `text` is NUL-terminated (its last byte is 0).
        let text = unsafe { CStr::from_ptr(text.as_ptr()) }.to_string_lossy().into_owned();
        let mut id = [0u8; 16];
        // SAFETY: `id` has the 16 bytes of a CUuuid.
        cu("cuDeviceGetUuid", unsafe { uuid(&mut id, dev) })?;
        let mut bytes = 0usize;
        // SAFETY: `bytes` is a valid out-pointer.
        cu("cuDeviceTotalMem", unsafe { memory(&mut bytes, dev) })?;
        let attr = |which| {
            let mut v = 0;
            // SAFETY: `v` is a valid out-pointer.
            cu("cuDeviceGetAttribute", unsafe { attribute(&mut v, which, dev) }).map(|_| v.max(0) as u32)
        };
        out.push(xpuprof_cupti_wire::DeviceDesc {
            ordinal: ordinal as u32,
            multiprocessors: attr(MULTIPROCESSOR_COUNT)?,
            cc_major: attr(CC_MAJOR)?,
            cc_minor: attr(CC_MINOR)?,
            memory: bytes as u64,
            uuid: id,
            name: text,
        });
    }
    Ok(out)
}
