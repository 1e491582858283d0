//! The output directory under attack or in use (issue 28): links on the output path, a
//! manifest naming files through a link, a directory removed while the target runs, and two
//! sessions into one directory.

use std::os::unix::fs::{lchown, symlink, MetadataExt, PermissionsExt};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::common::*;

fn touch(marker: &Path) -> String {
    format!("touch {}", marker.display())
}

#[test]
fn as_root_a_link_of_another_user_on_the_output_path_is_never_written_through() {
    require_plugin("scripted");
    if !require_root("as_root_a_link_of_another_user_on_the_output_path_is_never_written_through") {
        return;
    }
    // `pub` is like /tmp (sticky, writable by all); `nobody` owns links there and here.
    let tmp = tempfile::tempdir().unwrap();
    let (public, victim) = (tmp.path().join("pub"), tmp.path().join("victim"));
    std::fs::create_dir(&public).unwrap();
    std::fs::set_permissions(&public, std::fs::Permissions::from_mode(0o1777)).unwrap();
    std::fs::create_dir(&victim).unwrap();
    for link in [public.join("out2"), tmp.path().join("link")] {
        symlink(&victim, &link).unwrap();
        lchown(&link, Some(NOBODY), Some(NOBODY)).unwrap();
    }
    let marker = tmp.path().join("ran");
    for out in ["pub/out2", "pub/out2/", "pub/out2/.", "pub/out2/newsub", "link/", "link/newsub/"] {
        let args = ["--source", "scripted", "--sink", "folded", "-o", out, "--", "sh", "-c", &touch(&marker)];
        let o = run_in(tmp.path(), &args);
        let e = stderr(&o);
        assert_eq!(o.status.code(), Some(125), "-o {out}: {e}");
        assert!(e.contains("refused while running as root") && e.contains("symbolic link"), "-o {out}: {e}");
        assert!(!marker.exists(), "-o {out}: the target ran");
        let written: Vec<_> = std::fs::read_dir(&victim).unwrap().flatten().map(|e| e.file_name()).collect();
        assert!(written.is_empty(), "-o {out}: root wrote through the link: {written:?}");
    }
}

#[test]
fn the_manifest_never_deletes_through_a_linked_subdirectory() {
    require_plugin("scripted");
    let tmp = tempfile::tempdir().unwrap();
    let (out, elsewhere) = (tmp.path().join("out"), tmp.path().join("root-only"));
    std::fs::create_dir(&out).unwrap();
    std::fs::create_dir(&elsewhere).unwrap();
    std::fs::write(elsewhere.join("f5"), "keep").unwrap();
    symlink(&elsewhere, out.join("sub")).unwrap();
    std::fs::write(out.join(".xpuprof-files"), "sub/f5\n").unwrap();
    let o = run_in(tmp.path(), &["--source", "scripted", "--sink", "folded", "-o", "out", "--", "true"]);
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(0), "{e}");
    assert_eq!(std::fs::read_to_string(elsewhere.join("f5")).unwrap(), "keep", "deleted through the link");
    assert!(e.contains("not removing") && e.contains("`sub` is a symbolic link"), "{e}");
}

#[test]
fn outputs_removed_while_the_target_runs_are_a_failure_not_a_wrote_line() {
    for p in ["scripted", "folded", "chrome"] {
        require_plugin(p);
    }
    // The whole directory, then one file of it.
    let cases =
        [("rm -rf out", "the directory was removed or replaced"), ("rm out/trace.json", "out/trace.json")];
    for (script, named) in cases {
        let tmp = tempfile::tempdir().unwrap();
        let args = ["--source", "scripted", "--sink", "folded,chrome", "-o", "out", "--", "sh", "-c", script];
        let o = run_in(tmp.path(), &args);
        let e = stderr(&o);
        assert_eq!(o.status.code(), Some(125), "{script}: {e}");
        assert!(e.contains("FAILED: failed to write") && e.contains(named), "{script}: {e}");
        assert!(!e.contains("wrote out/trace.json"), "{script}: a lost file is said to be written: {e}");
        for line in e.lines().filter_map(|l| l.trim().strip_prefix("wrote ")) {
            assert!(tmp.path().join(line).is_file(), "{script}: `wrote {line}` but it is not there");
        }
    }
}

#[test]
fn a_second_session_into_a_live_sessions_directory_is_refused() {
    for p in ["scripted", "folded"] {
        require_plugin(p);
    }
    let tmp = tempfile::tempdir().unwrap();
    let (running, release) = (tmp.path().join("a-running"), tmp.path().join("release"));
    let wait =
        format!("touch {}; while [ ! -e {} ]; do sleep 0.05; done", running.display(), release.display());
    let first = Command::new(xpuprof())
        .args(["--source", "scripted", "--sink", "folded", "-o", "out", "--", "sh", "-c", &wait])
        .current_dir(tmp.path())
        .env("XPUPROF_PLUGIN_PATH", test_plugin_path())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let first_pid = first.id();
    let since = Instant::now();
    while !running.exists() {
        assert!(since.elapsed() < Duration::from_secs(30), "the first session's target never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    let folded = tmp.path().join("out/profile.folded");
    let created = std::fs::metadata(&folded).unwrap().ino();
    let second = run_in(tmp.path(), &["--source", "scripted", "--sink", "folded", "-o", "out", "--", "true"]);
    std::fs::write(&release, "").unwrap();
    let first = first.wait_with_output().unwrap();
    let e = stderr(&second);
    assert_eq!(second.status.code(), Some(125), "{e}");
    let pid = format!("another xpuprof session (pid {first_pid})");
    assert!(e.contains(&pid) && e.contains("give another directory with -o"), "{e}");
    assert_eq!(first.status.code(), Some(0), "{}", stderr(&first));
    assert_eq!(std::fs::metadata(&folded).unwrap().ino(), created, "the first session's file was replaced");
    assert!(std::fs::metadata(&folded).unwrap().len() > 0, "the first session's profile is empty");
    // Once it is over, replacing its outputs is the default.
    let third = run_in(tmp.path(), &["--source", "scripted", "--sink", "folded", "-o", "out", "--", "true"]);
    assert_eq!(third.status.code(), Some(0), "{}", stderr(&third));
}
