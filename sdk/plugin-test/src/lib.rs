//! # xpuprof-plugin-test: the conformance kit for xpuprof plugins
//!
//! Runs a built plugin library through its whole lifecycle in xpuprof's own harness (`xpuprof
//! check-plugin PATH`, in a child process, so a crash is a finding too) and reports in your
//! terms what breaks the plugin contract:
//!
//! - the library loads (file checks, ABI, layout, descriptor, the name rule
//!   `libxpuprof_plugin_<name>.so`);
//! - the config schema: declared defaults within their own constraints, documented keys, and
//!   the table of a config file when you give one ([`CheckOptions::config_file`]);
//! - every entry point: errors (with your message), panics (contained, and named with their
//!   location), slow calls, and calls blocked past [`CheckOptions::timeout`];
//! - sources, on a real target process: every batch decodes; every id is defined before its
//!   first use and never redefined differently; clock domains are declared and paired with the
//!   session clock by `ClockSync`; session-clock timestamps lie inside the session; host-only
//!   fields are left alone; nothing is emitted after `stop` returns;
//! - sinks: a canonical session in the host's order (plus a record kind from a future SDK,
//!   which a sink must skip) is consumed and finished, the files named exist inside the output
//!   directory; an empty session finishes too.
//!
//! The crate has no dependency and builds in a second: the checks are those of the `xpuprof`
//! you run your plugin with, found as [`xpuprof`] says.
//!
//! ## In your plugin's `cargo test`
//!
//! ```toml
//! [lib]
//! name = "xpuprof_plugin_mysource"
//! crate-type = ["cdylib", "rlib"]
//!
//! [dev-dependencies]
//! # installed by xpuprof's scripts/install.sh (PREFIX is /usr/local or ~/.local by default)
//! xpuprof-plugin-test = { path = "PREFIX/share/xpuprof/plugin-test" }
//! ```
//!
//! ```no_run
//! // tests/conformance.rs
//! #[test]
//! fn the_plugin_conforms() {
//!     let lib = xpuprof_plugin_test::cdylib("xpuprof_plugin_mysource");
//!     xpuprof_plugin_test::assert_conforms(&lib);
//! }
//! ```
//!
//! ## The records and files, for your own assertions
//!
//! [`run_source`] returns the records your source emitted (encoded as the SDK encodes them:
//! `xpuprof_sdk::codec::decode_all` gives the `Record`s, definitions included, in order);
//! [`run_sink`] returns the files your sink wrote from the host's canonical session,
//! [`run_sink_on`] those it wrote from the records you give it. Both run
//! the same check, in xpuprof's real host, and fail with the report when it does not pass.
//!
//! `cargo test` builds the `cdylib` before it runs integration tests, so the library is there.
//! C and C++ authors run the same checks with `xpuprof check-plugin ./libxpuprof_plugin_x.so`.

mod records;
mod report;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

pub use records::{run_sink, run_sink_on, run_source, SinkRun, SourceRun};
pub use report::{Finding, Report, Severity};

/// How to run the check.
#[derive(Debug, Clone)]
pub struct CheckOptions {
    /// A config file (`xpuprof.toml` format) whose `[source.NAME]`/`[sink.NAME]` table to use.
    pub config_file: Option<PathBuf>,
    /// The target a source records (empty: xpuprof's default, `sleep 0.2`).
    pub command: Vec<String>,
    /// A call that has not returned after this is abandoned and an error.
    pub timeout: Duration,
    /// Expect the file name rule `libxpuprof_plugin_<name>.so` (off for renamed test builds).
    pub file_name_rule: bool,
    /// The `xpuprof` executable to run (default: see [`xpuprof`]).
    pub xpuprof: Option<PathBuf>,
    /// Keep what the check produced in this folder (`check-plugin --keep`): a source's records,
    /// a sink's input and output files. [`run_source`] and [`run_sink`] read them back for you.
    pub keep: Option<PathBuf>,
    /// Give a sink the records of this file (the SDK's record encoding, `check-plugin
    /// --input`) instead of the canonical session; [`run_sink_on`] writes it for you.
    pub input: Option<PathBuf>,
}

impl Default for CheckOptions {
    fn default() -> Self {
        Self {
            config_file: None,
            command: Vec::new(),
            timeout: Duration::from_secs(10),
            file_name_rule: true,
            xpuprof: None,
            keep: None,
            input: None,
        }
    }
}

/// The `xpuprof` that runs the checks: `$XPUPROF` when set; else the one cargo built next to
/// the running test (inside xpuprof's own workspace); else the first `xpuprof` on `PATH` (an
/// installed one: `scripts/install.sh` puts it in `PREFIX/bin`).
pub fn xpuprof() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("XPUPROF").filter(|p| !p.is_empty()) {
        return Some(PathBuf::from(p));
    }
    let exe = std::env::current_exe().ok();
    let profile_dir = exe.as_deref().and_then(Path::parent).and_then(Path::parent);
    if let Some(built) = profile_dir.map(|d| d.join("xpuprof")).filter(|p| p.is_file()) {
        return Some(built);
    }
    std::env::split_paths(&std::env::var_os("PATH")?).map(|d| d.join("xpuprof")).find(|p| p.is_file())
}

/// Checks the plugin library at `path` with the default options.
pub fn check(path: impl AsRef<Path>) -> Report {
    check_with(path, &CheckOptions::default())
}

/// Checks the plugin library at `path`. When xpuprof cannot run, the report holds one error
/// saying why.
pub fn check_with(path: impl AsRef<Path>, options: &CheckOptions) -> Report {
    let failed =
        |message: String| Report::parse(&format!("ERROR   xpuprof runs the check: {message}\n"), false);
    let Some(exe) = options.xpuprof.clone().or_else(xpuprof) else {
        return failed(
            "no xpuprof found: install it (scripts/install.sh) and put PREFIX/bin on PATH, or set XPUPROF to \
             its path"
                .into(),
        );
    };
    let mut cmd = Command::new(&exe);
    if let Some(config) = &options.config_file {
        cmd.arg("-c").arg(config);
    }
    cmd.arg("check-plugin").arg("--timeout").arg(options.timeout.as_secs().max(1).to_string());
    if !options.file_name_rule {
        cmd.arg("--any-name");
    }
    if let Some(keep) = &options.keep {
        cmd.arg("--keep").arg(keep);
    }
    if let Some(input) = &options.input {
        cmd.arg("--input").arg(input);
    }
    cmd.arg(path.as_ref());
    if !options.command.is_empty() {
        cmd.arg("--").args(&options.command);
    }
    let out = match cmd.stdin(Stdio::null()).stderr(Stdio::piped()).output() {
        Ok(out) => out,
        Err(e) => return failed(format!("failed to run {}: {e}", exe.display())),
    };
    let text = String::from_utf8_lossy(&out.stdout);
    match out.status.code() {
        Some(0 | 1) => Report::parse(&text, out.status.success()),
        _ => failed(format!(
            "{} check-plugin exited with {}: {}{}",
            exe.display(),
            out.status,
            text.trim(),
            String::from_utf8_lossy(&out.stderr).trim()
        )),
    }
}

/// Checks the plugin library at `path` and panics with the report when it breaks a rule.
///
/// # Panics
///
/// When the report has an error; the message is the whole report.
pub fn assert_conforms(path: impl AsRef<Path>) -> Report {
    assert_conforms_with(path, &CheckOptions::default())
}

/// [`assert_conforms`] with options.
///
/// # Panics
///
/// When the report has an error; the message is the whole report.
pub fn assert_conforms_with(path: impl AsRef<Path>, options: &CheckOptions) -> Report {
    let report = check_with(path, options);
    assert!(report.passed(), "\n{report}");
    report
}

/// The shared library `lib<lib_name>.so` that cargo built for the package under test, next to
/// the running test binary (`target/<profile>/deps/` or `target/<profile>/`).
///
/// # Panics
///
/// When it is not there, with what to build.
pub fn cdylib(lib_name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary's path");
    // target/<profile>/deps/<test binary>: `cargo test` leaves the cdylib in deps/, `cargo
    // build` in target/<profile>/.
    let deps = exe.parent().expect("a cargo target directory");
    let file = format!("lib{lib_name}.so");
    let candidates = [deps.join(&file), deps.parent().unwrap_or(deps).join(&file)];
    let path = candidates.iter().find(|p| p.exists()).unwrap_or(&candidates[1]).clone();
    assert!(
        path.exists(),
        "{} is missing: give the package `[lib] crate-type = [\"cdylib\", \"rlib\"]` and `name = \"{lib_name}\"`, \
         and run `cargo test` (it builds the cdylib first)",
        path.display()
    );
    path
}
