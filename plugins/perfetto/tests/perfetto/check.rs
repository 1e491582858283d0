//! Runs `tests/check_trace.py` (Perfetto's official protos from the `perfetto` PyPI package,
//! installed by `scripts/install-deps.sh`) on a trace.

use std::path::Path;
use std::process::Command;

use serde_json::Value;

fn script() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/check_trace.py")
}

fn python(args: &[&std::ffi::OsStr]) -> String {
    let out = Command::new("python3")
        .arg(script())
        .args(args)
        .output()
        .expect("failed to run python3: install it with scripts/install-deps.sh");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !stderr.contains("No module named 'perfetto'"),
        "the perfetto Python package is missing: run scripts/install-deps.sh (pip install perfetto)"
    );
    assert!(out.status.success(), "check_trace.py failed: {stderr}");
    String::from_utf8(out.stdout).unwrap()
}

/// Checks `trace` and returns the checker's summary.
pub fn check(trace: &Path) -> Value {
    serde_json::from_str(&python(&[trace.as_os_str()])).expect("summary JSON")
}

/// Every packet of `trace` in protobuf text format.
pub fn dump(trace: &Path) -> String {
    python(&["--dump".as_ref(), trace.as_os_str()])
}

/// What `trace` says, one line per event (`check_trace.py --events`): absolute timestamps,
/// track names, names, arguments, flows and callstacks, whatever the encoding.
pub fn events(trace: &Path) -> String {
    python(&["--events".as_ref(), trace.as_os_str()])
}
