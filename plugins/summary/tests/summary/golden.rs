//! Golden-file comparison with a bless switch.

use std::path::Path;

/// Compares `actual` with `tests/golden/<name>`; `XPUPROF_BLESS=1` rewrites the golden file.
pub fn check(name: &str, actual: &str) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden").join(name);
    if std::env::var_os("XPUPROF_BLESS").is_some_and(|v| v == "1") {
        std::fs::write(&path, actual).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("failed to read {}: {e} (run with XPUPROF_BLESS=1)", path.display()));
    assert_eq!(actual, expected, "{name} differs from the golden file; XPUPROF_BLESS=1 regenerates it");
}
