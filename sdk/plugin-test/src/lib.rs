//! # xpuprof-plugin-test: the conformance kit for xpuprof plugins
//!
//! Runs a built plugin library through its whole lifecycle in the host's own harness, the same
//! checks as `xpuprof check-plugin PATH`, and reports in your terms what breaks the plugin
//! contract:
//!
//! - the library loads (file checks, ABI, layout, descriptor, the name rule
//!   `libxpuprof_plugin_<name>.so`);
//! - the config schema: declared defaults within their own constraints, documented keys, and
//!   the table of a config file when you give one ([`CheckOptions::config_file`]);
//! - every entry point: errors (with your message), panics (contained, and named with their
//!   location), calls slower than [`CheckOptions::slow`] and calls blocked past
//!   [`CheckOptions::timeout`];
//! - sources, on a real target process: every batch decodes; every id is defined before its
//!   first use and never redefined differently; clock domains are declared and paired with the
//!   session clock by `ClockSync`; session-clock timestamps lie inside the session; host-only
//!   fields are left alone; nothing is emitted after `stop` returns;
//! - sinks: a canonical session in the host's order (plus a record kind from a future SDK,
//!   which a sink must skip) is consumed and finished, the files named exist inside the output
//!   directory; an empty session finishes too.
//!
//! ## In your plugin's `cargo test`
//!
//! ```toml
//! [lib]
//! name = "xpuprof_plugin_mysource"
//! crate-type = ["cdylib", "rlib"]
//!
//! [dev-dependencies]
//! xpuprof-plugin-test = { path = "..." }
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
//! `cargo test` builds the `cdylib` before it runs integration tests, so the library is there.
//! C and C++ authors run the same checks with `xpuprof check-plugin ./libxpuprof_plugin_x.so`.

use std::path::{Path, PathBuf};

pub use xpuprof_core::check::{CheckOptions, Finding, Report, Severity};

/// Checks the plugin library at `path` with the default options.
pub fn check(path: impl AsRef<Path>) -> Report {
    check_with(path, &CheckOptions::default())
}

/// Checks the plugin library at `path`.
pub fn check_with(path: impl AsRef<Path>, options: &CheckOptions) -> Report {
    xpuprof_core::check::check_plugin(path.as_ref(), options, &mut |_| {})
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
