//! The interpreters the tests run.

use std::path::PathBuf;
use std::process::Command;

/// Debian's interpreter, required: CI installs it (`python3.11`, `libpython3.11-dev`).
pub const REQUIRED: &str = "/usr/bin/python3.11";

/// Every CPython 3.9-3.13 found: the required one, then pyenv's.
pub fn all() -> Vec<PathBuf> {
    assert!(std::path::Path::new(REQUIRED).exists(), "{REQUIRED} is missing: run scripts/install-deps.sh");
    let mut out = vec![PathBuf::from(REQUIRED)];
    let home = std::env::var("HOME").unwrap_or_default();
    if let Ok(dir) = std::fs::read_dir(format!("{home}/.pyenv/versions")) {
        let mut found: Vec<PathBuf> = dir
            .flatten()
            .filter_map(|e| {
                let v = e.file_name().to_string_lossy().into_owned();
                let minor = v.strip_prefix("3.")?.split('.').next()?.parse::<u32>().ok()?;
                let exe = e.path().join(format!("bin/python3.{minor}"));
                ((9..=13).contains(&minor) && exe.exists()).then_some(exe)
            })
            .collect();
        found.sort();
        out.extend(found);
    }
    out
}

/// `python -c code`'s stdout.
pub fn eval(python: &PathBuf, code: &str) -> String {
    let out = Command::new(python).args(["-c", code]).output().expect("run python");
    assert!(out.status.success(), "{}: {}", python.display(), String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

/// A fixture's path.
pub fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(name)
}
