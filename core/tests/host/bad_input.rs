//! Bad input stops `xpuprof` at once with a usage error (exit 2) that names what is wrong, before
//! the target runs: config files that are not regular files or are too large, values no key
//! means (`nan`, an empty `output`), and a plugin file that is refused while another file of the
//! same name could be used in its stead.

use std::os::unix::fs::{symlink, PermissionsExt};
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use super::common::*;

/// Longer than any of these runs needs (they stop before the target starts).
const HUNG: Duration = Duration::from_secs(15);

/// Runs xpuprof with `args` in `cwd` (test plugins on the search path) and kills it when it has
/// not exited after [`HUNG`]: a read that never ends fails the test instead of hanging it.
fn run_bounded(cwd: &Path, args: &[&str]) -> Output {
    let mut child = Command::new(xpuprof())
        .args(args)
        .current_dir(cwd)
        .env("XPUPROF_PLUGIN_PATH", test_plugin_path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("failed to run xpuprof");
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > HUNG {
            let _ = child.kill();
            let o = child.wait_with_output().unwrap();
            panic!("xpuprof {args:?} still ran after {HUNG:?}: {}", stderr(&o));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

/// A `sh -c` script that leaves `marker` behind when the target runs.
fn touch(marker: &Path) -> String {
    format!("touch {}", marker.display())
}

#[test]
fn a_config_file_that_is_no_regular_file_or_too_large_is_refused_at_once() {
    require_plugin("scripted");
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo.toml");
    assert!(Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    let big = dir.path().join("big.toml");
    std::fs::write(&big, format!("# {}\n", "x".repeat(2 << 20))).unwrap();
    let marker = dir.path().join("ran");
    let fifo_s = fifo.display().to_string();
    let big_s = big.display().to_string();
    for (config, why) in [
        ("/dev/zero", "not a regular file"),
        (fifo_s.as_str(), "not a regular file"),
        ("/tmp", "it is a directory"),
        (big_s.as_str(), "larger than 1 MiB"),
    ] {
        let args =
            ["-c", config, "--source", "scripted", "--sink", "folded", "--", "sh", "-c", &touch(&marker)];
        let o = run_bounded(dir.path(), &args);
        let e = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{config}: {e}");
        assert!(e.contains(&format!("failed to read config file {config}: ")) && e.contains(why), "{e}");
        assert!(e.contains("hint: give the path of a TOML file"), "{e}");
        assert!(!marker.exists(), "{config}: the target ran");
    }
}

#[test]
fn nan_and_infinite_numbers_are_located_config_errors() {
    require_plugin("summary");
    for value in ["nan", "+inf", "-inf", "-nan"] {
        let dir = tempfile::tempdir().unwrap();
        let text = format!("[sink.summary]\n  idle_gap_threshold_us = {value}\n");
        std::fs::write(dir.path().join("xpuprof.toml"), text).unwrap();
        let marker = dir.path().join("ran");
        let o = run_bounded(
            dir.path(),
            &["--source", "scripted", "--sink", "summary", "--", "sh", "-c", &touch(&marker)],
        );
        let e = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{value}: {e}");
        assert!(e.contains("xpuprof.toml:2:3"), "{value}: {e}");
        assert!(
            e.contains("`idle_gap_threshold_us` of sink `summary` is") && e.contains("a finite number"),
            "{e}"
        );
        assert!(!marker.exists(), "{value}: the target ran");
    }
}

#[test]
fn an_empty_output_directory_is_a_usage_error() {
    require_plugin("scripted");
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("xpuprof.toml"), "sinks = [\"folded\"]\noutput = \"\"\n").unwrap();
    let marker = dir.path().join("ran");
    let o = run_bounded(dir.path(), &["--source", "scripted", "--", "sh", "-c", &touch(&marker)]);
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{e}");
    assert!(
        e.contains("xpuprof.toml:2:1") && e.contains("`output` is empty, but must name a directory"),
        "{e}"
    );
    assert!(!marker.exists(), "the target ran");
    std::fs::remove_file(dir.path().join("xpuprof.toml")).unwrap();
    for args in [&["-o", ""][..], &["--output="][..]] {
        let mut all = args.to_vec();
        all.extend(["--source", "scripted", "--sink", "folded", "--", "sh", "-c"]);
        let script = touch(&marker);
        all.push(&script);
        let o = run_bounded(dir.path(), &all);
        let e = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {e}");
        assert!(e.contains("--output <DIR>") && e.contains("a value is required"), "{args:?}: {e}");
        assert!(!marker.exists(), "{args:?}: the target ran");
    }
}

/// Where `folded` is found first, a file that cannot be loaded: `record` stops with its reason
/// (exit 2) instead of using the `folded` next to the binary. `plugin_dir` is the value of
/// `--plugin-dir`: the file itself, or the directory holding it.
fn assert_refusal_stops_the_session(cwd: &Path, plugin_dir: &Path, file: &Path, why: &str) {
    let marker = cwd.join("ran");
    let dir_arg = plugin_dir.display().to_string();
    let o = run_bounded(
        cwd,
        &[
            "--plugin-dir",
            &dir_arg,
            "--source",
            "scripted",
            "--sink",
            "folded",
            "--",
            "sh",
            "-c",
            &touch(&marker),
        ],
    );
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{}: {e}", plugin_dir.display());
    let want = format!("sink `folded` was found at {} but cannot be loaded", file.display());
    assert!(e.contains(&want) && e.contains(why), "{}: {e}", plugin_dir.display());
    assert!(!marker.exists(), "{}: the target ran", plugin_dir.display());
    // `xpuprof plugins` lists the refused file and the one it shadows.
    let o = Command::new(xpuprof())
        .args(["plugins", "--plugin-dir", &dir_arg])
        .current_dir(cwd)
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains(&file.display().to_string()) && out.contains("shadowed"), "{out}");
}

#[test]
fn a_refused_plugin_file_is_not_replaced_by_an_installed_one_of_its_name() {
    require_plugin("scripted");
    require_plugin("folded");
    let tmp = tempfile::tempdir().unwrap();
    let text = tmp.path().join("libxpuprof_plugin_folded.so");
    std::fs::write(&text, "not a library\n").unwrap();
    // Named as a file, and found in a directory named on the search path.
    assert_refusal_stops_the_session(tmp.path(), &text, &text, "by the dynamic loader");
    assert_refusal_stops_the_session(tmp.path(), tmp.path(), &text, "by the dynamic loader");
    // Any file name that says `folded`.
    let other = tmp.path().join("folded.so");
    std::fs::write(&other, "not a library\n").unwrap();
    assert_refusal_stops_the_session(tmp.path(), &other, &other, "by the dynamic loader");
}

#[test]
fn as_root_a_refused_plugin_file_is_not_replaced_by_an_installed_one_of_its_name() {
    require_plugin("scripted");
    let folded = require_plugin("folded");
    if !require_root("as_root_a_refused_plugin_file_is_not_replaced_by_an_installed_one_of_its_name") {
        return;
    }
    // A real plugin owned by another user.
    let tmp = tempfile::tempdir().unwrap();
    let owned = tmp.path().join("owned");
    std::fs::create_dir(&owned).unwrap();
    let file = owned.join("libxpuprof_plugin_folded.so");
    std::fs::copy(&folded, &file).unwrap();
    std::os::unix::fs::chown(&file, Some(NOBODY), None).unwrap();
    assert_refusal_stops_the_session(tmp.path(), &file, &file, "owned by uid 65534");
    // A link into a directory another user can write.
    let open = tmp.path().join("open");
    std::fs::create_dir(&open).unwrap();
    std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
    let target = open.join("real.so");
    std::fs::copy(&folded, &target).unwrap();
    let link = tmp.path().join("libxpuprof_plugin_folded.so");
    symlink(&target, &link).unwrap();
    assert_refusal_stops_the_session(tmp.path(), &link, &link, "writable by group or others");
}
