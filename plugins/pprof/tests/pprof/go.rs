//! Runs `go tool pprof` (Debian's `golang-go`, installed by `scripts/install-deps.sh`).

use std::path::Path;
use std::process::Command;

/// `go tool pprof <args> <profile>`'s standard output; fails the test with the reason when Go
/// is missing or pprof cannot read the file.
pub fn pprof(args: &[&str], profile: &Path) -> String {
    let home = std::env::temp_dir().join("xpuprof-pprof-test-home");
    let out = Command::new("go")
        .args(["tool", "pprof"])
        .args(args)
        .arg(profile)
        .env("HOME", &home)
        .env("PPROF_TMPDIR", &home)
        .output()
        .expect("failed to run `go`: install golang-go with scripts/install-deps.sh");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "go tool pprof {args:?} failed: {stderr}");
    String::from_utf8(out.stdout).unwrap()
}
