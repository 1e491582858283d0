//! The bytes and communicator of NCCL's collectives, end to end without a GPU: a program on the
//! test double of the CUDA driver and CUPTI (`tests/doubles/nccl_nvtx.c`) loads NVTX's payload
//! extension into the real agent, registers NCCL's schemas through it and makes NCCL's NVTX
//! ranges around its kernel launches, under `xpuprof record --source cupti --sink
//! summary,chrome,dump`. The summary's Collectives section and the trace's slices must show each
//! collective's bytes as the program stated them, and its bandwidth.

use std::path::{Path, PathBuf};
use std::process::Command;

use xpuprof_testkit::host;

use super::double::build_program;
use xpuprof_testkit::outputs::Outputs;

/// Builds the summary sink, which the testkit's host build leaves out (a no-op when fresh).
fn build_summary() {
    let mut cmd = Command::new(option_env!("CARGO").unwrap_or("cargo"));
    cmd.args(["build", "-p", "xpuprof-plugin-summary"]).current_dir(env!("CARGO_MANIFEST_DIR"));
    if host::target_dir().ends_with("release") {
        cmd.arg("--release");
    }
    let o = cmd.output().expect("run cargo build");
    assert!(
        o.status.success(),
        "cargo build -p xpuprof-plugin-summary:\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// Builds the double and the NCCL program on it in `dir`; returns the program.
fn build(dir: &Path) -> PathBuf {
    build_program(dir, "nccl_nvtx.c", "nccl_nvtx", &["-Wall", "-O1"], &["-ldl"])
}

#[test]
fn each_collective_carries_the_bytes_its_nccl_nvtx_payload_states() {
    build_summary();
    let Some(xpuprof) = host::xpuprof(&["cupti", "summary", "chrome"]) else { return };
    if !host::target_dir().join("libxpuprof_cupti_agent.so").exists() {
        xpuprof_testkit::skip::missing("libxpuprof_cupti_agent.so not built");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let app = build(dir.path());
    let out = dir.path().join("out");
    let o = Command::new(&xpuprof)
        .arg("record")
        .arg("--plugin-dir")
        .arg(host::target_dir())
        .args(["--source", "cupti", "--sink", "summary,chrome", "-o"])
        .arg(&out)
        .arg("--")
        .arg(&app)
        .env("XPUPROF_CUPTI_LIB", dir.path().join("libcuda.so.1"))
        .output()
        .expect("run xpuprof record");
    let (stdout, stderr) = (String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    assert!(o.status.success(), "xpuprof record failed:\n{stdout}\n{stderr}");
    assert!(stdout.contains("launches=10"), "the program ran to its end:\n{stdout}\n{stderr}");
    assert!(
        stderr.contains("ignored an NVTX payload schema registration (no entries)"),
        "the malformed registration is refused and said:\n{stderr}"
    );

    let outputs = Outputs { stderr: stderr.into_owned(), out };
    let summary = outputs.summary();
    let kinds = summary["collectives"]["kinds"].as_array().cloned().unwrap_or_default();
    let kind = |k: &str| kinds.iter().find(|r| r["kind"] == k).cloned().unwrap_or_default();
    let (ar, ag) = (kind("allreduce"), kind("allgather"));
    // 3 × 1 MiB + 3 × 16 MiB + 64 bytes on one rank (a kernel not named for NCCL) + 1 KiB of a
    // schema never registered (no bytes).
    let want = 3 * (1u64 << 20) + 3 * (16u64 << 20) + 64;
    assert_eq!((ar["count"].as_u64(), ar["bytes"].as_u64()), (Some(8), Some(want)), "{summary:#}");
    assert!(ar["gb_per_s"].as_f64().unwrap_or(0.0) > 0.0, "{summary:#}");
    // Two grouped all-gathers, one kernel at the group's end: their bytes summed.
    assert_eq!((ag["count"].as_u64(), ag["bytes"].as_u64()), (Some(1), Some(12288)), "{summary:#}");
    let text = outputs.file("summary.txt");
    assert!(text.contains("GB/s"), "{text}");

    let mut by_bytes: Vec<u64> = outputs
        .chrome()
        .iter()
        .filter(|e| e["ph"] == "X" && e["args"]["bandwidth_mb_per_s"].is_u64())
        .filter_map(|e| e["args"]["bytes"].as_u64())
        .collect();
    by_bytes.sort_unstable();
    let mib = 1u64 << 20;
    assert_eq!(
        by_bytes,
        [64, 12288, mib, mib, mib, 16 * mib, 16 * mib, 16 * mib],
        "collective slices with bytes"
    );
}
