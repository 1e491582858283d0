//! Helpers shared by the host tests.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The `xpuprof` binary under test.
pub fn xpuprof() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_xpuprof"))
}

/// The directory holding the workspace's plugin libraries (next to the binary).
pub fn plugin_dir() -> PathBuf {
    xpuprof().parent().unwrap().to_path_buf()
}

/// Panics with the fix when a test plugin was not built.
pub fn require_plugin(name: &str) -> PathBuf {
    let p = plugin_dir().join(format!("libxpuprof_plugin_{}.so", name.replace('-', "_")));
    assert!(p.exists(), "{} is missing: run `cargo build --workspace` before the tests", p.display());
    p
}

/// Runs xpuprof with `args` in `cwd`, with only the built-in plugin directory.
pub fn run_in(cwd: &Path, args: &[&str]) -> Output {
    Command::new(xpuprof())
        .args(args)
        .current_dir(cwd)
        .env_remove("XPUPROF_PLUGIN_PATH")
        .output()
        .expect("failed to run xpuprof")
}

/// Runs xpuprof in a fresh temporary directory.
pub fn run(args: &[&str]) -> (Output, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    (run_in(dir.path(), args), dir)
}

/// stderr as text.
pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A directory holding copies of only the named plugins (so tests see a controlled set).
pub fn plugin_subset(names: &[&str]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for n in names {
        let src = require_plugin(n);
        std::fs::copy(&src, dir.path().join(src.file_name().unwrap())).unwrap();
    }
    dir
}
