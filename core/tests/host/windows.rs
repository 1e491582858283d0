//! Capture windows, attach and trigger at the command line: bad input is a usage error with one
//! clear message, and a source that cannot pause or attach is named (the eBPF end-to-end tests
//! of the windows themselves are in plugins/ebpf/tests/ebpf/windows.rs).

use super::common::*;

fn usage_error(args: &[&str], says: &str) {
    let (o, _d) = run(args);
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{args:?}: {e}");
    assert!(e.contains(says), "{args:?}: expected `{says}` in: {e}");
    assert!(!e.contains("panicked"), "{e}");
}

#[test]
fn bad_window_flags_are_usage_errors() {
    let rec = |extra: &[&'static str]| {
        let mut v = vec!["--source", "scripted", "--sink", "folded"];
        v.extend_from_slice(extra);
        v.extend_from_slice(&["--", "true"]);
        v
    };
    usage_error(&rec(&["--duration", "10x"]), "invalid duration `10x`");
    usage_error(&rec(&["--delay", "0s"]), "must be above zero");
    usage_error(&rec(&["--every", "1s", "--duration", "2s"]), "longer than --every");
    usage_error(&rec(&["--every", "5s"]), "--duration");
    usage_error(&rec(&["--keep", "3"]), "--every");
    usage_error(&rec(&["--capture-range", "Bad Kind"]), "KIND:MESSAGE[@DOMAIN]");
    usage_error(&rec(&["--capture-range", "profiler-api", "--start-paused"]), "cannot be combined");
    usage_error(&rec(&["--capture-range-end", "again"]), "--capture-range");
    let attach = |extra: &[&'static str]| {
        let mut v = vec!["attach", "1", "--source", "scripted", "--sink", "folded"];
        v.extend_from_slice(extra);
        v
    };
    usage_error(&attach(&["--every", "1s", "--duration", "2s"]), "longer than --every");
    usage_error(&attach(&["--every", "5s"]), "--duration");
    usage_error(&attach(&["--keep", "3"]), "--every");
}

#[test]
fn a_source_that_cannot_pause_is_named_and_records_the_whole_run() {
    require_plugin("scripted");
    let (o, d) = run(&["--source", "scripted", "--sink", "folded", "--delay", "50ms", "--", "sleep", "0.5"]);
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(0), "{e}");
    assert!(e.contains("source `scripted` records the whole run"), "{e}");
    assert!(d.path().join("xpuprof-out/profile.folded").is_file(), "{e}");
}

#[test]
fn attach_without_a_source_that_can_attach_leaves_the_process_alone() {
    require_plugin("scripted");
    let mut target = std::process::Command::new("sleep").arg("20").spawn().unwrap();
    let pid = target.id().to_string();
    let (o, _d) = run(&["attach", &pid, "--source", "scripted", "--sink", "folded", "--duration", "1s"]);
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(125), "{e}");
    assert!(e.contains("no source could attach") && e.contains("cannot attach"), "{e}");
    assert!(target.try_wait().unwrap().is_none(), "the process did not survive: {e}");
    let _ = target.kill();
    let _ = target.wait();
    usage_error(&["attach", "4194303", "--source", "scripted", "--sink", "folded"], "no such process");
}

#[test]
fn trigger_names_what_it_cannot_find() {
    let o = run_in(std::path::Path::new("."), &["trigger", "4194303"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("no process 4194303 is running"), "{}", stderr(&o));
    let dir = tempfile::tempdir().unwrap();
    let o = run_in(dir.path(), &["trigger", dir.path().to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("no running xpuprof session writes to"), "{}", stderr(&o));
}

#[test]
fn attach_without_the_rights_names_the_fix_and_leaves_the_process_alone() {
    require_plugin("ebpf");
    if !require_root("attach_without_the_rights_names_the_fix_and_leaves_the_process_alone") {
        return;
    }
    use std::os::unix::fs::PermissionsExt;
    let tmp = tempfile::tempdir().unwrap();
    std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    let out = tmp.path().join("out");
    std::fs::create_dir(&out).unwrap();
    std::os::unix::fs::chown(&out, Some(NOBODY), Some(NOBODY)).unwrap();
    let mut target = std::process::Command::new("sleep").arg("20").spawn().unwrap();
    let pid = target.id().to_string();
    let o = as_nobody(
        tmp.path(),
        &["attach", &pid, "--source", "ebpf", "--sink", "folded", "-o", out.to_str().unwrap()],
    );
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(125), "{e}");
    assert!(e.contains("failed to attach to process") && e.contains("CAP_BPF"), "{e}");
    assert!(target.try_wait().unwrap().is_none(), "the process did not survive: {e}");
    let _ = target.kill();
    let _ = target.wait();
}
