//! Building the test double of the CUDA driver and CUPTI (`tests/doubles/libcuda_double.c`, as
//! `libcuda.so.1`) and the programs that run on it, for the tests that use it.

use std::path::{Path, PathBuf};
use std::process::Command;

/// `tests/doubles/`.
pub fn doubles() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/doubles")
}

/// Runs `cc ARGS -o OUT`, failing the test with cc's errors.
pub fn cc(args: &[&str], out: &Path) {
    let o = Command::new("cc").args(args).arg("-o").arg(out).output().expect("run cc");
    assert!(o.status.success(), "cc {args:?}: {}", String::from_utf8_lossy(&o.stderr));
}

fn include() -> String {
    format!("-I{}", cupti_sys::INCLUDE_DIR.trim())
}

/// Builds the double as `dir/libcuda.so.1`; returns its path.
pub fn build_double(dir: &Path) -> PathBuf {
    let lib = dir.join("libcuda.so.1");
    let src = doubles().join("libcuda_double.c");
    let soname = "-Wl,-soname,libcuda.so.1";
    cc(
        &["-Wall", "-O1", "-shared", "-fPIC", soname, &include(), src.to_str().unwrap(), "-lpthread", "-ldl"],
        &lib,
    );
    lib
}

/// Builds the double and `tests/doubles/SOURCE` linked against it as `dir/NAME` (compiled with
/// `flags`, linked with `libs`); returns the program.
pub fn build_program(dir: &Path, source: &str, name: &str, flags: &[&str], libs: &[&str]) -> PathBuf {
    let lib = build_double(dir);
    let app = dir.join(name);
    let rpath = format!("-Wl,-rpath,{}", dir.display());
    let src = doubles().join(source);
    let args = [&include(), src.to_str().unwrap(), lib.to_str().unwrap(), &rpath];
    cc(&[flags, &args[..], libs].concat(), &app);
    app
}
