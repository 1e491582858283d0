//! The loader as the agent uses it: the bindgen function table over the `libze_loader.so.1`
//! the process already mapped, and one function that turns a `ze_result_t` into a `Result`.

use std::os::raw::{c_char, c_int, c_void};
use std::sync::OnceLock;

use level_zero_sys::{ze_result_t, ZeLoader, LOADER_SONAME};

/// A failed Level Zero call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ZeError {
    /// The function.
    pub call: &'static str,
    /// Its result code.
    pub code: ze_result_t,
}

impl std::fmt::Display for ZeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} failed: ze_result_t 0x{:x}", self.call, self.code)
    }
}

/// `Ok` for `ZE_RESULT_SUCCESS`, the call and code otherwise.
pub fn check(call: &'static str, code: ze_result_t) -> Result<(), ZeError> {
    if code == level_zero_sys::_ze_result_t::ZE_RESULT_SUCCESS {
        Ok(())
    } else {
        Err(ZeError { call, code })
    }
}

/// True when the process has the loader mapped (linked, or `dlopen`ed by the application).
pub fn loader_mapped() -> bool {
    let name = std::ffi::CString::new(LOADER_SONAME).expect("no NUL");
    let Some(dlopen) = real_dlopen() else { return false };
    // SAFETY: RTLD_NOLOAD only looks the library up; the reference it takes is dropped at once.
    unsafe {
        let h = dlopen(name.as_ptr(), libc::RTLD_NOW | libc::RTLD_NOLOAD);
        if h.is_null() {
            return false;
        }
        libc::dlclose(h);
    }
    true
}

/// The function table of the mapped loader. Functions it lacks are errors when called through
/// their `Result` fields, never a crash at load.
pub fn load() -> Result<ZeLoader, String> {
    // SAFETY: the loader is already initialised in this process (mapped by the application);
    // loading it again only takes a reference and resolves symbols.
    unsafe { ZeLoader::new(LOADER_SONAME) }.map_err(|e| format!("failed to load {LOADER_SONAME}: {e}"))
}

/// The signature of `dlopen`.
pub type DlopenFn = unsafe extern "C" fn(*const c_char, c_int) -> *mut c_void;

/// libc's `dlopen`, which the agent's exported `dlopen` stands in front of.
pub fn real_dlopen() -> Option<DlopenFn> {
    static REAL: OnceLock<usize> = OnceLock::new();
    let p = *REAL.get_or_init(|| {
        // SAFETY: dlsym with RTLD_NEXT and a NUL-terminated name.
        unsafe { libc::dlsym(libc::RTLD_NEXT, c"dlopen".as_ptr()) as usize }
    });
    // SAFETY: a non-null result is libc's dlopen, which has this signature.
    (p != 0).then(|| unsafe { std::mem::transmute::<usize, DlopenFn>(p) })
}

/// The loader's own version as `major << 16 | minor << 8 | patch` (0 when it cannot say).
pub fn loader_version(ze: &ZeLoader) -> u32 {
    let Ok(get) = ze.zelLoaderGetVersions.as_ref() else { return 0 };
    let mut n = 0usize;
    // SAFETY: a count query.
    if unsafe { get(&mut n, std::ptr::null_mut()) } != 0 {
        return 0;
    }
    let mut v = vec![level_zero_sys::zel_component_version_t::default(); n];
    // SAFETY: `v` holds `n` entries.
    if unsafe { get(&mut n, v.as_mut_ptr()) } != 0 {
        return 0;
    }
    v.iter()
        .take(n)
        .find(|c| c.component_name.iter().take_while(|&&b| b != 0).map(|&b| b as u8).eq(*b"loader"))
        .map_or(0, |c| {
            let l = c.component_lib_version;
            (l.major as u32) << 16 | (l.minor as u32) << 8 | l.patch as u32
        })
}
