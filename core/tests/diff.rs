//! `xpuprof diff`: exit semantics on improved, unchanged and regressed runs, the three output
//! formats, and clear errors for bad input. The baseline is the summary sink's own golden
//! `summary.json`, so a change of the sink's schema that `diff` cannot read fails here.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;
use xpuprof_core::diff::{self, DiffError, DiffOptions};

fn golden_summary() -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../plugins/summary/tests/golden/summary.json");
    serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap()
}

/// Multiplies every time of kernel `name` by `factor`.
fn scale_kernel(mut v: Value, name: &str, factor: f64) -> Value {
    for k in v["kernels"].as_array_mut().unwrap() {
        if k["name"] == name {
            for (_, t) in k["time"].as_object_mut().unwrap().iter_mut() {
                if let Some(n) = t.as_u64() {
                    *t = Value::from((n as f64 * factor) as u64);
                }
            }
        }
    }
    v
}

fn write(dir: &Path, name: &str, v: &Value) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, serde_json::to_string_pretty(v).unwrap()).unwrap();
    p
}

fn opts(base: &Path, current: &Path, metric: &str, format: &str) -> DiffOptions {
    DiffOptions {
        base: base.to_owned(),
        current: current.to_owned(),
        threshold_pct: 5.0,
        metric: metric.into(),
        format: format.into(),
    }
}

fn run(o: &DiffOptions) -> (Result<bool, DiffError>, String) {
    let mut out = Vec::new();
    let r = diff::run(o, &mut out);
    (r, String::from_utf8(out).unwrap())
}

#[test]
fn unchanged_run_passes() {
    let dir = tempfile::tempdir().unwrap();
    let base = write(dir.path(), "base.json", &golden_summary());
    let (r, text) = run(&opts(&base, &base, "total", "text"));
    assert!(!r.unwrap());
    // 9 kernel and API rows, 14 CPU rows (self and total of 3 + 3 hot functions, 2 profiles).
    assert!(text.contains("0 regressed, 0 improved, 23 unchanged"), "{text}");
}

#[test]
fn regressed_kernel_fails_and_is_listed_first() {
    let dir = tempfile::tempdir().unwrap();
    let base = write(dir.path(), "base.json", &golden_summary());
    let cur = write(dir.path(), "cur.json", &scale_kernel(golden_summary(), "gemm", 1.2));
    let (r, text) = run(&opts(&base, &cur, "p99", "text"));
    assert!(r.unwrap(), "{text}");
    let first_row = text.lines().nth(2).unwrap();
    assert!(first_row.contains("gemm") && first_row.contains("regressed"), "{text}");
    assert!(first_row.contains("+20.0%"), "{text}");
    // The same change under a 25% threshold passes.
    let mut o = opts(&base, &cur, "p99", "text");
    o.threshold_pct = 25.0;
    assert!(!run(&o).0.unwrap());
    // Counts did not change: judged on count it passes.
    assert!(!run(&opts(&base, &cur, "count", "text")).0.unwrap());
}

#[test]
fn improved_run_passes_and_says_improved() {
    let dir = tempfile::tempdir().unwrap();
    let base = write(dir.path(), "base.json", &golden_summary());
    let cur = write(dir.path(), "cur.json", &scale_kernel(golden_summary(), "relu", 0.5));
    let (r, text) = run(&opts(&base, &cur, "mean", "json"));
    assert!(!r.unwrap());
    let v: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["regressed"], false);
    let relu = v["entries"].as_array().unwrap().iter().find(|e| e["name"] == "relu").unwrap();
    assert_eq!((relu["status"].as_str(), relu["change_pct"].as_f64()), (Some("improved"), Some(-50.0)));
}

#[test]
fn output_directories_are_accepted_and_markdown_is_a_table() {
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    write(a.path(), "summary.json", &golden_summary());
    write(b.path(), "summary.json", &scale_kernel(golden_summary(), "gemm", 2.0));
    let (r, md) = run(&opts(a.path(), b.path(), "total", "markdown"));
    assert!(r.unwrap());
    assert!(md.starts_with("### xpuprof diff: :x: regression"), "{md}");
    assert!(md.contains("|---|---|---:|"), "{md}");
    assert!(
        md.contains("| kernel | `gemm` | 3 | 3 | +0 | 900.00 µs | 1.80 ms | +100.0% | **regressed** |"),
        "{md}"
    );
}

#[test]
fn malformed_json_names_file_line_and_column() {
    let dir = tempfile::tempdir().unwrap();
    let base = write(dir.path(), "base.json", &golden_summary());
    let bad = dir.path().join("bad.json");
    std::fs::write(&bad, "{\n  \"schema_version\": 1,\n  \"api\": [\n}").unwrap();
    let err = run(&opts(&base, &bad, "total", "text")).0.unwrap_err();
    assert!(matches!(err, DiffError::MalformedJson { line: 4, .. }), "{err:?}");
    let msg = err.to_string();
    assert!(msg.contains("bad.json") && msg.contains("line 4, column 1"), "{msg}");
}

#[test]
fn schema_mismatch_and_non_summaries_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let base = write(dir.path(), "base.json", &golden_summary());
    let mut v2 = golden_summary();
    v2["schema_version"] = Value::from(2);
    let newer = write(dir.path(), "newer.json", &v2);
    let err = run(&opts(&base, &newer, "total", "text")).0.unwrap_err();
    assert!(matches!(err, DiffError::SchemaMismatch { found: 2, supported: 1, .. }), "{err:?}");
    assert!(err.to_string().contains("newer.json: summary schema_version is 2"), "{err}");
    let other = write(dir.path(), "other.json", &serde_json::json!({"kernels": []}));
    let err = run(&opts(&other, &base, "total", "text")).0.unwrap_err();
    assert!(err.to_string().contains("other.json: not an xpuprof summary.json"), "{err}");
}

#[test]
fn missing_inputs_and_bad_options_are_clear() {
    let dir = tempfile::tempdir().unwrap();
    let base = write(dir.path(), "base.json", &golden_summary());
    let err = run(&opts(&base, &dir.path().join("nope.json"), "total", "text")).0.unwrap_err();
    assert!(err.to_string().starts_with("failed to read ") && err.to_string().contains("nope.json"), "{err}");
    let empty = tempfile::tempdir().unwrap();
    let err = run(&opts(&base, empty.path(), "total", "text")).0.unwrap_err();
    assert!(err.to_string().contains("neither summary.json nor an archive"), "{err}");
    assert!(matches!(run(&opts(&base, &base, "p90", "text")).0, Err(DiffError::BadMetric { .. })));
    assert!(matches!(run(&opts(&base, &base, "total", "html")).0, Err(DiffError::BadFormat { .. })));
}

/// A summary without a section the other has is refused (exit 2), not read as every row of
/// that section added or removed: a run that lost its CPU profile must not pass the gate.
#[test]
fn a_section_only_one_input_has_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let base = write(dir.path(), "base.json", &golden_summary());
    for section in ["cpu", "kernels", "api"] {
        let mut v = golden_summary();
        v.as_object_mut().unwrap().remove(section);
        let lacking = write(dir.path(), &format!("no-{section}.json"), &v);
        for (b, c, side, shown) in
            [(&base, &lacking, "current run", "removed"), (&lacking, &base, "baseline", "added")]
        {
            let err = run(&opts(b, c, "total", "text")).0.unwrap_err();
            assert!(matches!(err, DiffError::MissingSection { .. }), "{err:?}");
            let msg = err.to_string();
            let want = format!("the {side} {} has no `{section}` section", lacking.display());
            assert!(msg.contains(&want) && msg.contains(&format!("would show as {shown}")), "{msg}");
        }
        // Both without it: nothing of it to compare, no difference.
        assert!(!run(&opts(&lacking, &lacking, "total", "text")).0.unwrap());
    }
    let no_cpu = dir.path().join("no-cpu.json");
    let o = Command::new(env!("CARGO_BIN_EXE_xpuprof")).arg("diff").arg(&base).arg(&no_cpu).output().unwrap();
    let e = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{e}");
    assert!(e.contains("has no `cpu` section"), "{e}");
    // An empty section is there: a run without API calls is compared, not refused.
    let mut v = golden_summary();
    v["api"] = Value::Array(Vec::new());
    let no_calls = write(dir.path(), "no-calls.json", &v);
    let (r, text) = run(&opts(&base, &no_calls, "total", "text"));
    assert!(!r.unwrap() && text.contains("removed"), "{text}");
}

/// The CLI maps the result to exit codes 0, 1 and 2.
#[test]
fn cli_exit_codes() {
    let dir = tempfile::tempdir().unwrap();
    let base = write(dir.path(), "base.json", &golden_summary());
    let slow = write(dir.path(), "slow.json", &scale_kernel(golden_summary(), "gemm", 1.5));
    let bad = dir.path().join("bad.json");
    std::fs::write(&bad, "not json").unwrap();
    let code = |cur: &Path, extra: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_xpuprof"))
            .arg("diff")
            .arg(&base)
            .arg(cur)
            .args(extra)
            .output()
            .unwrap()
            .status
            .code()
    };
    assert_eq!(code(&base, &[]), Some(0));
    assert_eq!(code(&slow, &[]), Some(1));
    assert_eq!(code(&slow, &["--threshold", "60%"]), Some(0));
    assert_eq!(code(&bad, &[]), Some(2));
}

/// Multiplies the on-CPU self and total time of `function` by `factor` (and the profile's
/// weight by what that adds).
fn scale_cpu_function(mut v: Value, function: &str, factor: f64) -> Value {
    let profile = &mut v["cpu"]["on_cpu"];
    let mut added = 0u64;
    for h in profile["hot_functions"].as_array_mut().unwrap() {
        if h["function"] == function {
            let self_ns = h["self_ns"].as_u64().unwrap();
            added = (self_ns as f64 * (factor - 1.0)) as u64;
            h["self_ns"] = Value::from(self_ns + added);
            h["total_ns"] = Value::from(h["total_ns"].as_u64().unwrap() + added);
        }
    }
    profile["weight_ns"] = Value::from(profile["weight_ns"].as_u64().unwrap() + added);
    v
}

#[test]
fn three_times_the_cpu_time_in_one_function_is_a_regression() {
    let dir = tempfile::tempdir().unwrap();
    let base = write(dir.path(), "base.json", &golden_summary());
    let cur = write(dir.path(), "cur.json", &scale_cpu_function(golden_summary(), "spin_wait", 3.0));
    let (r, text) = run(&opts(&base, &cur, "total", "text"));
    assert!(r.unwrap(), "a CPU regression fails the diff:\n{text}");
    let line = |kind: &str| text.lines().find(|l| l.contains(kind) && l.contains("spin_wait")).unwrap_or("");
    assert!(line("cpu_self").contains("regressed") && line("cpu_self").contains("+200"), "{text}");
    assert!(line("cpu_total").contains("regressed"), "{text}");
    assert!(text.lines().any(|l| l.contains("[all CPU samples]") && l.contains("regressed")), "{text}");
    // train_step's own time did not change: its self row is unchanged.
    assert!(text
        .lines()
        .any(|l| l.contains("cpu_self") && l.contains("train_step") && l.contains("unchanged")));
    // The same threshold applies: a 3% change passes at 5%.
    let small = write(dir.path(), "small.json", &scale_cpu_function(golden_summary(), "spin_wait", 1.03));
    let (r, text) = run(&opts(&base, &small, "total", "text"));
    assert!(!r.unwrap(), "{text}");
    // And the JSON output names the CPU rows.
    let (_, json) = run(&opts(&base, &cur, "total", "json"));
    assert!(json.contains("\"cpu_self\"") && json.contains("\"cpu_total\""), "{json}");
}
