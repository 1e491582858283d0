//! Misbehaving plugins cannot take xpuprof down: a plugin stuck in any entry point is
//! abandoned and named once its call is overdue, the other plugins' outputs are written, a
//! second SIGTERM cuts every wait short, and records emitted after a source stopped (even after
//! it was destroyed) are counted, not silently dropped or read from freed memory.
//!
//! Uses the test doubles `stuck` and `stuck-sink` (tests/plugins/stuck-*), which block forever
//! where they are told to.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::common::*;

/// Longer than any of these sessions may take: past it, xpuprof hung (and is killed).
const HUNG: Duration = Duration::from_secs(20);

/// A temporary directory with an `xpuprof.toml` holding `config`.
fn setup(config: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("xpuprof.toml"), config).unwrap();
    dir
}

/// The test plugins, the stuck ones included.
fn plugin_path() -> String {
    let stuck = ["stuck-source", "stuck-sink"].map(|n| require_plugin(n).display().to_string());
    format!("{}:{}", test_plugin_path(), stuck.join(":"))
}

/// Starts xpuprof in `dir` with `args`; output goes to files (no pipe can fill up).
fn spawn(dir: &Path, args: &[&str]) -> std::process::Child {
    let out = std::fs::File::create(dir.join("stdout.txt")).unwrap();
    let err = std::fs::File::create(dir.join("stderr.txt")).unwrap();
    Command::new(xpuprof())
        .args(args)
        .current_dir(dir)
        .env("XPUPROF_PLUGIN_PATH", plugin_path())
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .spawn()
        .unwrap()
}

/// Waits for xpuprof, killing it and failing the test if it hangs; returns its exit code,
/// stderr, and how long it took.
fn finish(dir: &Path, mut child: std::process::Child, started: Instant) -> (Option<i32>, String, Duration) {
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if started.elapsed() > HUNG {
            let _ = child.kill();
            let _ = child.wait();
            let e = std::fs::read_to_string(dir.join("stderr.txt")).unwrap_or_default();
            panic!("xpuprof hung (killed after {HUNG:?}):\n{e}");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let e = std::fs::read_to_string(dir.join("stderr.txt")).unwrap();
    (status.code(), e, started.elapsed())
}

fn record(dir: &Path, args: &[&str]) -> (Option<i32>, String, Duration) {
    let started = Instant::now();
    let child = spawn(dir, args);
    finish(dir, child, started)
}

fn folded(dir: &Path) -> String {
    std::fs::read_to_string(dir.join("out/profile.folded")).unwrap_or_default()
}

#[test]
fn a_source_stuck_in_any_entry_point_is_abandoned_and_named() {
    require_plugin("scripted");
    for what in ["create", "prepare", "start", "stop", "destroy"] {
        let d = setup(&format!("plugin_timeout = 1\n[source.stuck]\nblock_in = [\"{what}\"]\n"));
        let (code, e, took) =
            record(d.path(), &["--source", "scripted,stuck", "--sink", "folded", "-o", "out", "--", "true"]);
        assert!(e.contains(&format!("plugin `stuck` did not return from {what} within")), "{what}: {e}");
        assert_eq!(code, Some(125), "{what}: the target succeeded but a plugin was abandoned: {e}");
        assert!(
            folded(d.path()).contains("[GPU_Kernel]"),
            "{what}: the other source's records were written: {e}"
        );
        assert!(took < Duration::from_secs(8), "{what}: took {took:?}");
    }
}

#[test]
fn a_stuck_sink_does_not_stop_the_others() {
    require_plugin("scripted");
    for what in ["create", "consume", "finish", "destroy"] {
        let d = setup(&format!("plugin_timeout = 1\n[sink.stuck-sink]\nblock_in = [\"{what}\"]\n"));
        let args =
            ["--source", "scripted", "--sink", "stuck-sink,folded", "-o", "out", "--", "sh", "-c", "exit 3"];
        let (code, e, took) = record(d.path(), &args);
        assert!(e.contains(&format!("plugin `stuck-sink` did not return from {what} within")), "{what}: {e}");
        assert_eq!(code, Some(3), "{what}: the exit code stays the target's: {e}");
        assert!(folded(d.path()).contains("[GPU_Kernel]"), "{what}: the other sink wrote its output: {e}");
        assert!(took < Duration::from_secs(8), "{what}: took {took:?}");
    }
}

/// Runs xpuprof with `args` in `dir` and sends it SIGTERM twice, 0.7 s apart (the first once
/// the file `ready` exists in `dir`, when the target writes one, else after 0.7 s); asserts that
/// it exited within 5 s of the second and returns its exit code and stderr.
fn sigterm_twice(dir: &Path, args: &[&str]) -> (Option<i32>, String) {
    let started = Instant::now();
    let child = spawn(dir, args);
    std::thread::sleep(Duration::from_millis(700));
    // On a busy machine the target may start later than that: signal it once it is ready.
    if args.iter().any(|a| a.contains("touch ready")) {
        while !dir.join("ready").exists() {
            assert!(started.elapsed() < Duration::from_secs(30), "the target never became ready");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    // SAFETY: signalling the child we spawned. The first SIGTERM is forwarded to the target.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    std::thread::sleep(Duration::from_millis(700));
    let second = Instant::now();
    // SAFETY: as above.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let (code, e, _) = finish(dir, child, started);
    assert!(
        second.elapsed() < Duration::from_secs(5),
        "exited {:?} after the second signal",
        second.elapsed()
    );
    (code, e)
}

#[test]
fn a_second_sigterm_abandons_a_stuck_plugin_and_writes_the_outputs() {
    require_plugin("scripted");
    // The default deadline (30 s) is far away: only the second signal can end this quickly.
    let d = setup("[source.stuck]\nblock_in = [\"stop\"]\n");
    let args = ["--source", "scripted,stuck", "--sink", "folded", "-o", "out", "--", "sleep", "30"];
    let (code, e) = sigterm_twice(d.path(), &args);
    assert_eq!(code, Some(128 + libc::SIGTERM), "{e}");
    assert!(e.contains("plugin `stuck` did not return from stop"), "{e}");
    assert!(folded(d.path()).contains("[GPU_Kernel]"), "recorded data was written: {e}");
}

#[test]
fn a_second_sigterm_kills_a_target_that_ignores_the_first() {
    require_plugin("scripted");
    let d = setup("");
    // `ready` tells the test that the trap is set (a SIGTERM before it would end the shell).
    let script = "trap '' TERM INT; touch ready; sleep 30";
    let args = ["--source", "scripted", "--sink", "folded", "-o", "out", "--", "sh", "-c", script];
    let (code, e) = sigterm_twice(d.path(), &args);
    assert_eq!(code, Some(128 + libc::SIGKILL), "{e}");
    assert!(e.contains("interrupted twice: killing the target"), "{e}");
    assert!(folded(d.path()).contains("[GPU_Kernel]"), "recorded data was written: {e}");
}

#[test]
fn records_emitted_after_stop_and_destroy_are_counted() {
    require_plugin("scripted");
    // The stuck sink holds the session open for a second after the sources were destroyed, so
    // the records the source's thread emits 100 ms after `destroy` arrive before the summary.
    let d = setup(
        "plugin_timeout = 1\n[source.stuck]\nlate_records = 3\n[sink.stuck-sink]\nblock_in = [\"finish\"]\n",
    );
    let args = ["--source", "scripted,stuck", "--sink", "folded,stuck-sink", "-o", "out", "--", "true"];
    let (_, e, _) = record(d.path(), &args);
    assert!(e.contains("records emitted after the source stopped (dropped): stuck: 6"), "{e}");
    assert!(folded(d.path()).contains("[GPU_Kernel]"), "{e}");
}

#[test]
fn plugin_timeout_is_validated() {
    let d = setup("plugin_timeout = -1\n");
    let (code, e, _) = record(d.path(), &["--source", "scripted", "--sink", "folded", "--", "true"]);
    assert_eq!(code, Some(2), "{e}");
    assert!(
        e.contains("xpuprof.toml:1:1") && e.contains("`plugin_timeout` must be a number of seconds"),
        "{e}"
    );
}
