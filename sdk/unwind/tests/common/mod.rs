//! Helpers: the frameless C fixture, built at test time and loaded with `dlopen`.

use std::ffi::{c_void, CStr};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Builds `tests/fixtures/deep.c` with `-O2 -fomit-frame-pointer` into a shared library in
/// `dir`; panics with the compiler's output when that fails (a C compiler is a prerequisite).
pub fn build_deep(dir: &Path) -> PathBuf {
    build_deep_with(dir, "libdeep.so", "-fomit-frame-pointer")
}

/// Builds `tests/fixtures/deep.c` with `-O2` and `flag` into `dir/name`.
pub fn build_deep_with(dir: &Path, name: &str, flag: &str) -> PathBuf {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/deep.c");
    let out = dir.join(name);
    let o = Command::new("cc")
        .args(["-O2", flag, "-shared", "-fPIC", "-o"])
        .arg(&out)
        .arg(&src)
        .output()
        .expect("failed to run cc: a C compiler is needed to build the fixture");
    assert!(o.status.success(), "cc failed: {}", String::from_utf8_lossy(&o.stderr));
    out
}

/// The exported symbol containing `addr` (a return address is looked up at `addr - 1`).
pub fn symbol(addr: u64) -> String {
    // SAFETY: dladdr only reads the loader's tables and writes `info`.
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    // SAFETY: as above; `info` is a valid out-pointer.
    if unsafe { libc::dladdr(addr as *const c_void, &mut info) } == 0 || info.dli_sname.is_null() {
        return format!("{addr:#x}");
    }
    // SAFETY: dladdr returned a NUL-terminated name valid while the object stays loaded.
    unsafe { CStr::from_ptr(info.dli_sname) }.to_string_lossy().into_owned()
}

/// The names of a walk's frames (return addresses looked up at `addr - 1`).
pub fn names(frames: &[u64]) -> Vec<String> {
    frames.iter().enumerate().map(|(i, &a)| symbol(if i == 0 { a } else { a - 1 })).collect()
}

/// The five levels and the entry of the fixture, innermost first.
pub const PATH: [&str; 6] =
    ["deep_level5", "deep_level4", "deep_level3", "deep_level2", "deep_level1", "deep_entry"];

/// True when `names` contains `PATH` as consecutive frames.
pub fn has_path(names: &[String]) -> bool {
    names.windows(PATH.len()).any(|w| w.iter().zip(PATH).all(|(a, b)| a == b))
}

/// The calling thread's stack bounds `[lo, hi)`.
pub fn thread_stack() -> (u64, u64) {
    // SAFETY: `attr` is initialised by pthread_getattr_np before use and destroyed after.
    unsafe {
        let mut attr: libc::pthread_attr_t = std::mem::zeroed();
        assert_eq!(libc::pthread_getattr_np(libc::pthread_self(), &mut attr), 0);
        let mut addr: *mut c_void = std::ptr::null_mut();
        let mut size = 0usize;
        assert_eq!(libc::pthread_attr_getstack(&attr, &mut addr, &mut size), 0);
        libc::pthread_attr_destroy(&mut attr);
        (addr as u64, addr as u64 + size as u64)
    }
}
