//! Runs the real `xpuprof` binary with the scripted source plugin, for end-to-end tests.
//!
//! The tests need `target/debug/xpuprof` and the plugin libraries next to it; build them with
//! `cargo build -p xpuprof-core -p xpuprof-plugin-scripted -p xpuprof-plugin-folded
//! -p xpuprof-plugin-chrome -p xpuprof-plugin-archive -p xpuprof-plugin-flamegraph`. Without
//! them the tests are skipped with that reason printed.

use std::path::{Path, PathBuf};
use std::process::Command;

/// `target/<profile>/`, where cargo put this test binary's parent directory.
fn target_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("test binary path");
    exe.parent().and_then(Path::parent).expect("target/<profile>/deps").to_owned()
}

/// The `xpuprof` binary, or `None` (with the reason printed) when it or a needed plugin is
/// not built.
pub fn xpuprof(plugins: &[&str]) -> Option<PathBuf> {
    let dir = target_dir();
    let bin = dir.join("xpuprof");
    let mut missing: Vec<String> = Vec::new();
    if !bin.is_file() {
        missing.push(bin.display().to_string());
    }
    for p in plugins {
        let so = dir.join(format!("libxpuprof_plugin_{p}.so"));
        if !so.is_file() {
            missing.push(so.display().to_string());
        }
    }
    if missing.is_empty() {
        return Some(bin);
    }
    eprintln!(
        "SKIPPED: end-to-end test needs {} (cargo build -p xpuprof-core -p xpuprof-plugin-scripted and the sinks)",
        missing.join(", ")
    );
    None
}

/// Runs `xpuprof` with `args`, asserting success; returns its stderr.
pub fn run(bin: &Path, args: &[&str]) -> String {
    let out = Command::new(bin).args(args).env_remove("XPUPROF_PLUGIN_PATH").output().expect("run xpuprof");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "xpuprof {args:?} failed ({}):\n{stderr}", out.status);
    stderr
}

/// Records the scripted session into `out` through `sinks` (comma-separated).
pub fn record(bin: &Path, sinks: &str, out: &Path) -> String {
    run(bin, &["--source", "scripted", "--sink", sinks, "-o", out.to_str().unwrap(), "--", "true"])
}
