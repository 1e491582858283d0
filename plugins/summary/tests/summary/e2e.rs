//! End to end: `target/debug/xpuprof --source scripted --sink summary -o DIR -- true`, the sink
//! loaded as a cdylib through the ABI after the host's correlator. A missing build fails in CI
//! and is a counted skip elsewhere (`xpuprof_testkit::skip`).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::{json, Value};

use crate::golden;

fn target_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/debug")
}

/// Runs a recording into a fresh directory, or says why it cannot.
fn record() -> Option<(tempfile::TempDir, Output)> {
    record_with("summary")
}

/// Runs a recording with these sinks.
fn record_with(sinks: &str) -> Option<(tempfile::TempDir, Output)> {
    let dir = target_dir();
    let xpuprof = dir.join("xpuprof");
    // The scripted source is a test plugin (`libxpuprof_test_*`, never discovered): named explicitly.
    let scripted = dir.join("libxpuprof_test_scripted.so");
    for needed in [xpuprof.clone(), scripted.clone(), dir.join("libxpuprof_plugin_summary.so")] {
        if !needed.exists() {
            xpuprof_testkit::skip::missing(&format!(
                "{} is not built (cargo build --workspace)",
                needed.display()
            ));
            return None;
        }
    }
    let out = tempfile::tempdir().unwrap();
    let output = Command::new(&xpuprof)
        .args(["--source", "scripted", "--sink", sinks, "-o"])
        .arg(out.path())
        .args(["--", "true"])
        .env("XPUPROF_PLUGIN_PATH", &scripted)
        .output()
        .unwrap();
    assert!(output.status.success(), "xpuprof failed: {}", String::from_utf8_lossy(&output.stderr));
    Some((out, output))
}

#[test]
fn scripted_session_summary() {
    let Some((dir, output)) = record() else { return };
    let text = std::fs::read_to_string(dir.path().join("summary.txt")).unwrap();
    let raw = std::fs::read_to_string(dir.path().join("summary.json")).unwrap();
    let j: Value = serde_json::from_str(&raw).unwrap();

    // Kernels: gemm 250 µs, the graph launch's nodes a (2 x 100 µs) and b (50 µs), relu 30 µs,
    // the unmatched kernel 20 µs: 550 µs in all, all on one device with no overlap.
    assert_eq!(j["kernels"].as_array().unwrap().len(), 5);
    assert_eq!(j["kernels"][1]["name"], "graph_node_a");
    assert_eq!(j["kernels"][1]["launches"], 2);
    assert_eq!(j["kernels"][1]["gpu_time_pct"], 36.36); // 200 of 550 µs
    let d = &j["devices"][0];
    assert_eq!(d["kernel_busy_ns"], 550_000);
    // The one gap over 100 µs: from the end of the graph's work to the unmatched kernel.
    assert_eq!(
        d["largest_gaps"],
        json!([{"start_ns": 1_000_730_000u64, "end_ns": 1_010_006_000u64, "duration_ns": 9_276_000, "cpu_before": null}])
    );
    // 64 MiB allocated from allocate_buffers and never freed.
    assert_eq!(
        j["memory"]["leaks"],
        json!([{"device_index": 0, "device": "Scripted GPU", "pid": 4242, "allocations": 1, "bytes": 67108864,
                "stack": ["allocate_buffers", "setup", "main"], "display_stack": ["allocate_buffers", "setup", "main"],
                "caching_allocator": null,
                "by_runtime": false}])
    );
    assert_eq!(j["xpuprof"]["unmatched_device_ops"], 1);
    assert_eq!(j["xpuprof"]["lost_total"], 4);

    // The digest: five lines on stderr, in order.
    let stderr = String::from_utf8_lossy(&output.stderr);
    let prefixes =
        ["summary: ", "GPU busy: ", "top kernels: ", "losses: ", "device memory still allocated at exit"];
    let start = stderr.lines().position(|l| l.starts_with("summary: ")).expect("digest on stderr");
    let digest: Vec<&str> = stderr.lines().skip(start).take(5).collect();
    for (line, prefix) in digest.iter().zip(prefixes) {
        assert!(line.starts_with(prefix), "digest line {line:?} should start with {prefix:?}\n{stderr}");
    }
    assert_eq!(digest[1], "GPU busy: device 0 1.8% (1 idle gaps)");
    assert!(
        digest[4].starts_with(
            "device memory still allocated at exit (released by the driver): 64.00 MiB in 1 allocations \
             from 1 allocation site; full report: "
        ),
        "{}",
        digest[4]
    );

    golden::check("e2e-summary.txt", &text);
    golden::check("e2e-summary.json", &raw);
}

#[test]
fn diff_of_a_run_against_itself_passes() {
    let Some((dir, _)) = record() else { return };
    let status = Command::new(target_dir().join("xpuprof"))
        .arg("diff")
        .arg(dir.path())
        .arg(dir.path())
        .status()
        .unwrap();
    assert_eq!(status.code(), Some(0));
}

#[test]
fn diff_reads_an_archive_by_replaying_it() {
    let Some((dir, _)) = record_with("summary,archive") else { return };
    if !target_dir().join("libxpuprof_plugin_archive.so").exists() {
        xpuprof_testkit::skip::missing("the archive sink is not built (cargo build --workspace)");
        return;
    }
    let out = Command::new(target_dir().join("xpuprof"))
        .args(["diff", "--format", "json"])
        .arg(dir.path().join("archive"))
        .arg(dir.path().join("summary.json"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(v["base"].as_str().unwrap().ends_with("trace.xpa"), "{v}");
    // The scripted session's 14 kernel, API and total entries and, since `diff` compares CPU
    // profiles too, 16 CPU entries (hot functions' self and total time, on- and off-CPU, and two
    // more totals).
    assert_eq!(v["counts"], json!({"unchanged": 30}));
}
