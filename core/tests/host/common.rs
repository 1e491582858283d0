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

/// Test plugins are built as `libxpuprof_test_<name>.so` so that no build ships them; the
/// tests hand these to xpuprof through `XPUPROF_PLUGIN_PATH` (see [`run_in`]).
pub const TEST_PLUGINS: &[&str] =
    &["scripted", "panicky", "wrong-abi", "not-a-plugin", "stuck-source", "stuck-sink"];

/// The library of plugin `name` (a test plugin or a real one) in the build directory; panics
/// with the fix when it was not built.
pub fn require_plugin(name: &str) -> PathBuf {
    let stem = name.replace('-', "_");
    let file = if TEST_PLUGINS.contains(&name) {
        format!("libxpuprof_test_{stem}.so")
    } else {
        format!("libxpuprof_plugin_{stem}.so")
    };
    let p = plugin_dir().join(file);
    assert!(p.exists(), "{} is missing: run `cargo build --workspace` before the tests", p.display());
    p
}

/// `XPUPROF_PLUGIN_PATH` for the tests: the loadable test plugins, named file by file.
pub fn test_plugin_path() -> String {
    ["scripted", "panicky"]
        .iter()
        .map(|n| require_plugin(n).display().to_string())
        .collect::<Vec<_>>()
        .join(":")
}

/// Runs xpuprof with `args` in `cwd`, with the built-in plugin directory and the loadable test
/// plugins (`scripted`, `panicky`).
pub fn run_in(cwd: &Path, args: &[&str]) -> Output {
    Command::new(xpuprof())
        .args(args)
        .current_dir(cwd)
        .env("XPUPROF_PLUGIN_PATH", test_plugin_path())
        .output()
        .expect("failed to run xpuprof")
}

/// Runs xpuprof with `args` as a user would: only the plugins the build ships.
pub fn run_shipped(args: &[&str]) -> Output {
    let dir = tempfile::tempdir().unwrap();
    Command::new(xpuprof())
        .args(args)
        .current_dir(dir.path())
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
        std::fs::copy(&src, dir.path().join(format!("libxpuprof_plugin_{}.so", n.replace('-', "_"))))
            .unwrap();
    }
    dir
}

/// The uid and gid of `nobody`, the ordinary user of the tests that need one.
pub const NOBODY: u32 = 65534;

/// True when running as root. Otherwise the test cannot check what it is about: in CI (which
/// runs as root) that is a failure; locally it is a counted skip (`xpuprof_testkit::skip`).
pub fn require_root(test: &str) -> bool {
    xpuprof_testkit::skip::require_root(&format!("{test} checks what xpuprof does as root"))
}

/// Runs xpuprof with `args` in `cwd` as the ordinary user `nobody` (the test runs as root).
pub fn as_nobody(cwd: &Path, args: &[&str]) -> Output {
    use std::os::unix::process::CommandExt;
    Command::new(xpuprof())
        .args(args)
        .current_dir(cwd)
        .env("XPUPROF_PLUGIN_PATH", test_plugin_path())
        .uid(NOBODY)
        .gid(NOBODY)
        .output()
        .expect("failed to run xpuprof as nobody")
}

/// The home directory of `uid` in the user database.
pub fn home_of(uid: u32) -> String {
    let o = Command::new("getent").args(["passwd", &uid.to_string()]).output().expect("run getent");
    let line = String::from_utf8_lossy(&o.stdout).into_owned();
    line.trim().split(':').nth(5).unwrap_or_default().to_owned()
}
