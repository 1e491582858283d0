//! `xpuprof check-plugin`: the examples pass; a panicking, a blocking, a crashing and a
//! rule-breaking plugin fail, each with a message in the author's terms.

use std::path::Path;
use std::process::Command;

use super::cabi::{compile, repo};
use super::common::*;
use super::examples::{add_rust_examples, c_examples};

fn check(lib: &Path, extra: &[&str], config: Option<&str>) -> (Option<i32>, String) {
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = Command::new(xpuprof());
    cmd.arg("check-plugin").arg(lib).args(extra).current_dir(dir.path());
    if let Some(c) = config {
        std::fs::write(dir.path().join("c.toml"), c).unwrap();
        cmd.args(["-c", "c.toml"]);
    }
    let o = cmd.output().unwrap();
    (o.status.code(), String::from_utf8_lossy(&o.stdout).into_owned())
}

#[test]
fn the_examples_pass_the_check_without_warnings() {
    let dir = c_examples();
    add_rust_examples(dir.path());
    for name in ["acme", "kernel_csv", "fakeacc", "speedscope"] {
        let (code, out) = check(&dir.path().join(format!("libxpuprof_plugin_{name}.so")), &[], None);
        assert_eq!(code, Some(0), "{out}");
        assert!(out.contains("passes the conformance check (0 warnings)"), "{out}");
    }
}

#[test]
fn a_panic_is_reported_with_its_entry_point_and_location() {
    let (code, out) =
        check(&require_plugin("panicky"), &[], Some("[source.panicky]\npanic_in = [\"start\"]\n"));
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("ERROR   entry points do not panic: plugin `panicky` panicked in start"), "{out}");
    assert!(out.contains("tests/plugins/panicky/src/lib.rs:"), "the location: {out}");
}

#[test]
fn a_blocked_call_is_abandoned_and_named() {
    let (code, out) = check(
        &require_plugin("stuck-source"),
        &["--timeout", "2"],
        Some("[source.stuck]\nblock_in = [\"stop\"]\n"),
    );
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("ERROR   entry points do not block: stop did not return within 2 s"), "{out}");
}

fn bad_source(dir: &Path) -> std::path::PathBuf {
    let lib = dir.join("libxpuprof_plugin_bad_source.so");
    let flags = ["-std=c99", "-Wall", "-Wextra", "-Werror", "-fPIC", "-shared", "-fvisibility=hidden"];
    compile("cc", &flags, &[repo().join("tests/c-abi/bad_source.c")], &lib);
    lib
}

#[test]
fn broken_record_rules_are_named_with_the_record_the_field_and_the_fix() {
    let dir = tempfile::tempdir().unwrap();
    let (code, out) = check(&bad_source(dir.path()), &[], None);
    assert_eq!(code, Some(1), "{out}");
    for expected in [
        "ERROR   definitions come before their first use: ApiCall uses string 7 in `name` before any StrDef defined it",
        "ERROR   an id is defined once: string 7 is defined twice with different contents (\"badCall\" then \"otherText\")",
        "ERROR   timestamps are session-clock nanoseconds: ApiCall has `start` = 12345, outside the session",
        "ERROR   clock domains are paired with the session clock: 1 records are stamped in clock domain 2, which no ClockSync pairs",
    ] {
        assert!(out.contains(expected), "missing `{expected}` in:\n{out}");
    }
}

#[test]
fn a_crash_is_reported_with_the_step_it_happened_in() {
    let dir = tempfile::tempdir().unwrap();
    let (code, out) = check(&bad_source(dir.path()), &[], Some("[source.bad-source]\nfault = \"crash\"\n"));
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("the check died of signal 11 (SIGSEGV, a bad memory access) in start"), "{out}");
}

#[test]
fn keep_leaves_a_sources_records_and_a_sinks_input_and_outputs_to_read() {
    let dir = c_examples();
    let keep = tempfile::tempdir().unwrap();
    let (code, out) = check(
        &dir.path().join("libxpuprof_plugin_acme.so"),
        &["--keep", keep.path().join("src").to_str().unwrap()],
        None,
    );
    assert_eq!(code, Some(0), "{out}");
    assert!(out.contains("ok      device work reaches its launch: 9 device operations: 8 joined with their launch stack, 1 with their API call only"), "{out}");
    let lines = std::fs::read_to_string(keep.path().join("src/records.jsonl")).unwrap();
    assert!(lines.lines().any(|l| l.starts_with("{\"record\":\"LaunchSite\"")), "{lines}");
    assert!(keep.path().join("src/records.bin").metadata().unwrap().len() > 0);
    let (code, out) = check(
        &dir.path().join("libxpuprof_plugin_kernel_csv.so"),
        &["--keep", keep.path().join("sink").to_str().unwrap()],
        None,
    );
    assert_eq!(code, Some(0), "{out}");
    assert!(std::fs::read_to_string(keep.path().join("sink/input.jsonl")).unwrap().lines().count() > 10);
    let outputs: Vec<_> = std::fs::read_dir(keep.path().join("sink/outputs")).unwrap().collect();
    assert!(!outputs.is_empty(), "the sink's files are kept: {out}");
}

#[test]
fn input_gives_a_sink_the_records_a_source_emitted() {
    let dir = c_examples();
    let keep = tempfile::tempdir().unwrap();
    let src = keep.path().join("src");
    let (code, out) =
        check(&dir.path().join("libxpuprof_plugin_acme.so"), &["--keep", src.to_str().unwrap()], None);
    assert_eq!(code, Some(0), "{out}");
    let input = src.join("records.bin");
    let sink = keep.path().join("sink");
    let csv = dir.path().join("libxpuprof_plugin_kernel_csv.so");
    let args = ["--input", input.to_str().unwrap(), "--keep", sink.to_str().unwrap()];
    let (code, out) = check(&csv, &args, None);
    assert_eq!(code, Some(0), "{out}");
    assert!(out.contains(&format!("the records of {} went through", input.display())), "{out}");
    let kept = std::fs::read_to_string(sink.join("outputs/kernels.csv")).unwrap();
    assert!(kept.contains("acme::gemm<float>"), "the source's kernels reach the sink: {kept}");
    let (code, out) = check(&csv, &["--input", "/nonexistent/records.bin"], None);
    assert_eq!(code, Some(1), "{out}");
    assert!(
        out.contains("ERROR   the sink's input is read: failed to read /nonexistent/records.bin"),
        "{out}"
    );
}

#[test]
fn set_gives_a_plugin_key_checked_like_the_file() {
    let (code, out) =
        check(&require_plugin("panicky"), &["--set", "source.panicky.panic_in=[\"start\"]"], None);
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("ERROR   entry points do not panic: plugin `panicky` panicked in start"), "{out}");
    let (code, out) = check(&require_plugin("panicky"), &["--set", "source.panicky.nope=1"], None);
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("--set source.panicky.nope: unknown key `nope` for source `panicky`"), "{out}");
}
