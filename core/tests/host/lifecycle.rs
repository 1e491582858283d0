//! Session lifecycle: signals reach the target and outputs are still written; children that
//! outlive the target are waited for; as root, unsafe plugin files are refused.

use std::os::unix::fs::PermissionsExt;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::common::*;

#[test]
fn sigint_reaches_the_target_and_outputs_are_still_written() {
    require_plugin("scripted");
    let dir = tempfile::tempdir().unwrap();
    let child = Command::new(xpuprof())
        .args(["--source", "scripted", "--sink", "folded", "-o", "out", "--", "sleep", "30"])
        .current_dir(dir.path())
        .env("XPUPROF_PLUGIN_PATH", test_plugin_path())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(500));
    // SAFETY: signalling the child we spawned.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let started = Instant::now();
    let out = child.wait_with_output().unwrap();
    assert!(started.elapsed() < Duration::from_secs(10), "xpuprof did not stop the target");
    assert_eq!(out.status.code(), Some(128 + libc::SIGINT), "{}", String::from_utf8_lossy(&out.stderr));
    let folded = std::fs::read_to_string(dir.path().join("out/profile.folded")).unwrap();
    assert!(folded.contains("[GPU_Kernel]"), "recorded data was written: {folded}");
}

#[test]
fn children_that_outlive_the_target_are_waited_for() {
    require_plugin("scripted");
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("child-done");
    let script = format!("(sleep 0.5; touch {}) & exit 0", marker.display());
    let o = run_in(dir.path(), &["--source", "scripted", "--sink", "folded", "--", "sh", "-c", &script]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(marker.exists(), "xpuprof returned before the target's child finished");
}

#[test]
fn as_root_plugins_writable_by_others_are_refused() {
    if !xpuprof_testkit::skip::require_root("the check only applies when xpuprof runs as root") {
        return;
    }
    let dir = plugin_subset(&["scripted"]);
    let f = dir.path().join("libxpuprof_plugin_scripted.so");
    std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o666)).unwrap();
    let (o, _d) = run(&["--plugin-dir", dir.path().to_str().unwrap(), "plugins"]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("writable by group or others") && out.contains("chmod go-w"), "{out}");
}
