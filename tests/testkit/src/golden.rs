//! Golden-file comparison: compares an output with `tests/golden/<name>` of the crate under test
//! (the package `cargo test` runs, from `CARGO_MANIFEST_DIR`); `XPUPROF_BLESS=1` rewrites it.

use std::path::PathBuf;

/// The crate under test: cargo sets `CARGO_MANIFEST_DIR` when it runs a test binary (and runs it
/// from that directory).
fn crate_dir() -> PathBuf {
    std::env::var_os("CARGO_MANIFEST_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| std::env::current_dir().expect("current directory"))
}

/// Compares `actual` with `tests/golden/<name>`. On a difference the message names the first
/// differing line instead of printing both files (a flame graph SVG is hundreds of kilobytes).
pub fn check(name: &str, actual: &str) {
    let path = crate_dir().join("tests/golden").join(name);
    if std::env::var_os("XPUPROF_BLESS").is_some_and(|v| v == "1") {
        std::fs::write(&path, actual).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("failed to read {}: {e} (run with XPUPROF_BLESS=1)", path.display()));
    if actual != expected {
        let line = actual.lines().zip(expected.lines()).position(|(a, e)| a != e);
        let at = match line {
            Some(i) => format!(
                "line {}:\n  got:      {}\n  expected: {}",
                i + 1,
                actual.lines().nth(i).unwrap_or_default(),
                expected.lines().nth(i).unwrap_or_default()
            ),
            None => format!("{} lines vs {} expected", actual.lines().count(), expected.lines().count()),
        };
        panic!("{name} differs from the golden file at {at}\nXPUPROF_BLESS=1 regenerates it");
    }
}
