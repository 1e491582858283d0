//! An embedded CPython for benchmarks that read live interpreter frames: the interpreter
//! library is loaded into the calling process with its symbols global (as a `python` executable
//! exports them, where the agents find them), started on the calling thread, and given a
//! function `down(n)` that calls back into the benchmark through `ctypes` under `n + 1` frames
//! of its own.

use std::ffi::{c_char, c_int, CString};

/// `PyRun_SimpleString`: runs Python source on the thread that started the interpreter;
/// 0 when it succeeded.
pub type Run = unsafe extern "C" fn(*const c_char) -> c_int;

/// The interpreter library the benchmarks load unless `XPUPROF_BENCH_LIBPYTHON` names another
/// (the GPU machine runs 3.12).
pub const LIBPYTHON: &str = "libpython3.11.so.1.0";

/// Loads and starts CPython on this thread and defines `down(n)`, which recurses `n` times and
/// then calls `callback`. Panics with what to install when the library is missing.
pub fn start(callback: extern "C" fn()) -> Run {
    type Init = unsafe extern "C" fn();
    let lib = std::env::var("XPUPROF_BENCH_LIBPYTHON").unwrap_or_else(|_| LIBPYTHON.to_owned());
    let name = CString::new(lib.clone()).expect("a library name without NUL");
    // SAFETY: loads the interpreter library (RTLD_GLOBAL), initialises it on this thread and runs
    // a script; the symbols have the C API's signatures.
    unsafe {
        let h = libc::dlopen(name.as_ptr(), libc::RTLD_NOW | libc::RTLD_GLOBAL);
        assert!(!h.is_null(), "{lib} is missing: scripts/install-deps.sh installs libpython3.11-dev");
        let init: Init = std::mem::transmute(libc::dlsym(h, c"Py_Initialize".as_ptr()));
        let run: Run = std::mem::transmute(libc::dlsym(h, c"PyRun_SimpleString".as_ptr()));
        init();
        let script = format!(
            "import ctypes\nmeasure = ctypes.CFUNCTYPE(None)({})\ndef down(n):\n    if n == 0:\n        measure()\n    else:\n        down(n - 1)\n",
            callback as usize
        );
        run_or_panic(run, &script);
        run
    }
}

/// Runs `source` with `run`; panics when it fails.
pub fn run_or_panic(run: Run, source: &str) {
    let source = CString::new(source).expect("Python source without NUL");
    // SAFETY: `run` is the started interpreter's PyRun_SimpleString, called on its thread.
    assert_eq!(unsafe { run(source.as_ptr()) }, 0, "the benchmark's Python script failed");
}
