//! Launch-stack reuse in the real agent (`xpuprof_agent_kit::reuse`), end to end without a GPU:
//! python3 drives the CUDA test double (`tests/doubles/`, built here as `libcuda.so.1`) with the
//! real cupti agent injected, through `tests/workloads/reuse_windows.py`: a training-shaped loop
//! about 50 Python frames deep (the same layer functions called from several lines) and a
//! backward-like native thread `pt_autograd_0` whose launches take the Python stack of the
//! thread waiting in `_engine_run_backward` (`tests/workloads/engine_thread.c`). The script
//! switches the agent between full captures and reuse in adjacent windows, then captures every
//! launch both ways (`check`): no launch's reused stack may differ from its full capture.

use std::path::{Path, PathBuf};
use std::process::Command;

use xpuprof_testkit::host;

use super::double::{build_double, cc};

fn here() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests")
}

/// A `key=value` field of a line.
fn field<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    line.split_whitespace().find_map(|f| f.strip_prefix(key)?.strip_prefix('='))
}

#[test]
fn reused_launch_stacks_equal_full_captures_in_the_agent() {
    // Builds the agent (with the host and plugins) when it is not fresh.
    if host::xpuprof(&["cupti"]).is_none() {
        return;
    }
    let agent = host::target_dir().join("libxpuprof_cupti_agent.so");
    if !agent.exists() {
        xpuprof_testkit::skip::missing("libxpuprof_cupti_agent.so not built");
        return;
    }
    if Command::new("python3").arg("-c").arg("pass").status().map(|s| !s.success()).unwrap_or(true) {
        xpuprof_testkit::skip::missing("python3 not available");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let lib = build_double(dir.path());
    let engine = dir.path().join("libengine.so");
    let src = here().join("workloads/engine_thread.c");
    cc(&["-O1", "-shared", "-fPIC", src.to_str().unwrap(), "-lpthread", "-ldl"], &engine);
    let dump = dir.path().join("dump");
    std::fs::create_dir_all(&dump).unwrap();
    let o = Command::new("python3")
        .arg(here().join("workloads/reuse_windows.py"))
        .arg("double")
        .arg(&lib)
        .arg(&engine)
        .args(["3", "5"])
        .env("CUDA_INJECTION64_PATH", &agent)
        .env("XPUPROF_CUPTI_LIB", &lib)
        .env("XPUPROF_CUPTI_DUMP", &dump)
        .output()
        .expect("run python3");
    let out = String::from_utf8_lossy(&o.stdout);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "reuse_windows.py failed:\n{out}\n{err}");
    let check = out.lines().find(|l| l.starts_with("REUSE_CHECK ")).expect("a REUSE_CHECK line");
    let n = |k| field(check, k).and_then(|v| v.parse::<u64>().ok()).unwrap_or_else(|| panic!("{k}: {check}"));
    // 5 steps of 56 forward, 41 engine and 3 optimizer launches, all checked.
    assert_eq!(n("checked"), 5 * 100, "{check}");
    assert_eq!(n("differed"), 0, "launches whose reused stack differed from the full capture: {check}");
    assert!(n("launches_reusing_native") > 0 && n("launches_reusing_python") > 0, "{check}");
}
