//! Runs the real `xpuprof` binary for the plugin crates' end-to-end tests (the sinks with the
//! scripted source, the cupti source with a replayed agent stream).
//!
//! `cargo test` builds a plugin crate only as an rlib, so the helper first runs `cargo build`
//! for the host, the scripted source, the sinks and the cupti plugin and agent (a no-op when
//! they are fresh): the plugin
//! libraries the host loads are then the code under test, not a stale build. If that build
//! fails (another crate of the workspace is broken), the tests are skipped with the reason.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

const PACKAGES: &[&str] = &[
    "xpuprof-core",
    "xpuprof-plugin-scripted",
    "xpuprof-plugin-folded",
    "xpuprof-plugin-chrome",
    "xpuprof-plugin-archive",
    "xpuprof-plugin-flamegraph",
    "xpuprof-plugin-perfetto",
    "xpuprof-plugin-pprof",
    "xpuprof-plugin-cupti",
    "xpuprof-cupti-agent",
];

/// Builds the host and the plugins once per test binary; `Err` says why not.
fn build() -> &'static Result<(), String> {
    static BUILT: OnceLock<Result<(), String>> = OnceLock::new();
    BUILT.get_or_init(|| {
        let mut cmd = Command::new(option_env!("CARGO").unwrap_or("cargo"));
        cmd.arg("build").current_dir(env!("CARGO_MANIFEST_DIR"));
        if target_dir().ends_with("release") {
            cmd.arg("--release");
        }
        for p in PACKAGES {
            cmd.args(["-p", p]);
        }
        match cmd.output() {
            Ok(o) if o.status.success() => Ok(()),
            Ok(o) => Err(format!("cargo build failed:\n{}", String::from_utf8_lossy(&o.stderr))),
            Err(e) => Err(format!("failed to run cargo: {e}")),
        }
    })
}

/// `target/<profile>/`, where cargo put this test binary's parent directory.
pub fn target_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("test binary path");
    exe.parent().and_then(Path::parent).expect("target/<profile>/deps").to_owned()
}

/// The `xpuprof` binary, or `None` when it or a needed plugin is not built: a failure in CI,
/// a counted skip elsewhere (see [`crate::skip`]).
pub fn xpuprof(plugins: &[&str]) -> Option<PathBuf> {
    if let Err(why) = build() {
        crate::skip::missing(&format!("the end-to-end test could not build the host and plugins: {why}"));
        return None;
    }
    let dir = target_dir();
    let bin = dir.join("xpuprof");
    let mut missing: Vec<String> = Vec::new();
    if !bin.is_file() {
        missing.push(bin.display().to_string());
    }
    for p in plugins {
        let so = plugin_file(&dir, p);
        if !so.is_file() {
            missing.push(so.display().to_string());
        }
    }
    if missing.is_empty() {
        return Some(bin);
    }
    crate::skip::missing(&format!(
        "the end-to-end test needs {} (cargo build -p xpuprof-core -p xpuprof-plugin-scripted and the sinks)",
        missing.join(", ")
    ));
    None
}

/// The library of plugin `name` in `dir`: test plugins are built as `libxpuprof_test_<name>.so`
/// so that no build ships them, and xpuprof finds them only where a test names them.
fn plugin_file(dir: &Path, name: &str) -> PathBuf {
    let test = dir.join(format!("libxpuprof_test_{name}.so"));
    if name == "scripted" {
        return test;
    }
    dir.join(format!("libxpuprof_plugin_{name}.so"))
}

/// Runs `xpuprof` with `args` and the scripted test source, asserting success; returns its
/// stderr.
pub fn run(bin: &Path, args: &[&str]) -> String {
    let scripted = plugin_file(bin.parent().expect("the binary's directory"), "scripted");
    let out =
        Command::new(bin).args(args).env("XPUPROF_PLUGIN_PATH", scripted).output().expect("run xpuprof");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "xpuprof {args:?} failed ({}):\n{stderr}", out.status);
    stderr
}

/// Records the scripted session into `out` through `sinks` (comma-separated).
pub fn record(bin: &Path, sinks: &str, out: &Path) -> String {
    run(bin, &["--source", "scripted", "--sink", sinks, "-o", out.to_str().unwrap(), "--", "true"])
}
