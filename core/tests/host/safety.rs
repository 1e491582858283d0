//! Everything is checked before the target starts (config values, outputs), outputs never
//! follow planted symbolic links, and as root nothing another user could have written is used.

use std::os::unix::fs::{symlink, PermissionsExt};
use std::path::Path;
use std::process::Command;

use super::common::*;

/// A `sh -c` script that leaves `marker` behind when the target runs.
fn touch(marker: &Path) -> String {
    format!("touch {}", marker.display())
}

#[test]
fn bad_config_values_stop_before_the_target_runs() {
    for p in ["ebpf", "scripted", "folded"] {
        require_plugin(p);
    }
    let cases = [
        ("[source.ebpf]\nsample_hz = -5\n", "xpuprof.toml:2:1", "`sample_hz` of source `ebpf` is -5"),
        ("[source.ebpf]\nring_buffer_mib = 3\n", "xpuprof.toml:2:1", "one of 1, 2, 4, 8, 16"),
        ("\n[sink.folded]\n kernel_names = \"medium\"\n", "xpuprof.toml:3:2", "one of \"full\", \"short\""),
        ("[source.scripted]\nrepeat = 0\n", "xpuprof.toml:2:1", "at least 1"),
        (
            "[source.ebpf]\nlaunch_probes = [\"ok\", \"a b\"]\n",
            "xpuprof.toml:2:1",
            "\"a b\", which is not one word",
        ),
    ];
    for (toml, at, what) in cases {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("xpuprof.toml"), toml).unwrap();
        let marker = dir.path().join("ran");
        let o = run_in(
            dir.path(),
            &["--source", "scripted", "--sink", "folded", "--", "sh", "-c", &touch(&marker)],
        );
        let e = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{toml}: {e}");
        assert!(e.contains(at) && e.contains(what), "{toml}: {e}");
        assert!(!marker.exists(), "{toml}: the target ran");
    }
}

#[test]
fn a_duplicated_plugin_name_is_a_usage_error() {
    require_plugin("scripted");
    let (o, _d) = run(&["--source", "scripted,scripted", "--sink", "folded", "--", "true"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("source `scripted` is named twice"), "{}", stderr(&o));
    let (o, _d) = run(&["--source", "scripted", "--sink", "folded,folded", "--", "true"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
}

#[test]
fn an_output_directory_that_cannot_be_written_stops_before_the_target_runs() {
    require_plugin("scripted");
    let tmp = tempfile::tempdir().unwrap();
    let marker = tmp.path().join("ran");
    let o = run_in(
        tmp.path(),
        &["--source", "scripted", "--sink", "folded", "-o", "/sys/kernel", "--", "sh", "-c", &touch(&marker)],
    );
    assert_eq!(o.status.code(), Some(125), "{}", stderr(&o));
    assert!(stderr(&o).contains("/sys/kernel"), "{}", stderr(&o));
    assert!(!marker.exists(), "the target ran");
}

#[test]
fn a_read_only_output_directory_stops_an_ordinary_user_before_the_target_runs() {
    require_plugin("scripted");
    if !require_root("a_read_only_output_directory_stops_an_ordinary_user_before_the_target_runs") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    let out = tmp.path().join("ro");
    std::fs::create_dir(&out).unwrap();
    std::os::unix::fs::chown(&out, Some(NOBODY), Some(NOBODY)).unwrap();
    std::fs::set_permissions(&out, std::fs::Permissions::from_mode(0o555)).unwrap();
    let marker = tmp.path().join("ran");
    let o = as_nobody(
        tmp.path(),
        &[
            "--source",
            "scripted",
            "--sink",
            "folded",
            "-o",
            out.to_str().unwrap(),
            "--",
            "sh",
            "-c",
            &touch(&marker),
        ],
    );
    assert_eq!(o.status.code(), Some(125), "{}", stderr(&o));
    assert!(stderr(&o).contains("Permission denied"), "{}", stderr(&o));
    assert!(!marker.exists(), "the target ran");
}

#[test]
fn planted_symlinks_never_make_root_overwrite_their_targets() {
    for p in ["scripted", "folded", "chrome", "archive"] {
        require_plugin(p);
    }
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    std::fs::create_dir_all(out.join("archive")).unwrap();
    let victims: Vec<_> = (0..3).map(|i| tmp.path().join(format!("victim{i}"))).collect();
    for (v, name) in victims.iter().zip(["profile.folded", "trace.json", "archive/trace.xpa"]) {
        std::fs::write(v, "precious").unwrap();
        symlink(v, out.join(name)).unwrap();
    }
    let o = run_in(
        tmp.path(),
        &["--source", "scripted", "--sink", "folded,chrome,archive", "-o", "out", "--", "true"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    for v in &victims {
        assert_eq!(std::fs::read_to_string(v).unwrap(), "precious", "{} was overwritten", v.display());
    }
    for name in ["profile.folded", "trace.json", "archive/trace.xpa"] {
        let m = std::fs::symlink_metadata(out.join(name)).unwrap();
        assert!(m.is_file() && m.len() > 0, "{name} is not a fresh output file");
    }
}

#[test]
fn a_symlinked_archive_directory_is_refused_before_the_target_runs() {
    require_plugin("archive");
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    std::fs::create_dir_all(&out).unwrap();
    let elsewhere = tmp.path().join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    symlink(&elsewhere, out.join("archive")).unwrap();
    let marker = tmp.path().join("ran");
    let o = run_in(
        tmp.path(),
        &["--source", "scripted", "--sink", "archive", "-o", "out", "--", "sh", "-c", &touch(&marker)],
    );
    assert_eq!(o.status.code(), Some(125), "{}", stderr(&o));
    assert!(stderr(&o).contains("symbolic link"), "{}", stderr(&o));
    assert!(!marker.exists() && std::fs::read_dir(&elsewhere).unwrap().next().is_none());
}

#[test]
fn as_root_an_output_directory_writable_by_others_is_refused() {
    if !require_root("as_root_an_output_directory_writable_by_others_is_refused") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("shared");
    std::fs::create_dir(&out).unwrap();
    std::fs::set_permissions(&out, std::fs::Permissions::from_mode(0o777)).unwrap();
    let marker = tmp.path().join("ran");
    let o = run_in(
        tmp.path(),
        &["--source", "scripted", "--sink", "folded", "-o", "shared", "--", "sh", "-c", &touch(&marker)],
    );
    assert_eq!(o.status.code(), Some(125), "{}", stderr(&o));
    assert!(stderr(&o).contains("output directory") && stderr(&o).contains("writable by group or others"));
    assert!(!marker.exists(), "the target ran");
}

#[test]
fn as_root_a_config_file_of_another_user_is_refused() {
    require_plugin("scripted");
    if !require_root("as_root_a_config_file_of_another_user_is_refused") {
        return;
    }
    for (owner, mode, why) in
        [(NOBODY, 0o644, "owned by uid 65534"), (0, 0o666, "writable by group or others")]
    {
        let dir = tempfile::tempdir().unwrap();
        let cfg = dir.path().join("xpuprof.toml");
        std::fs::write(&cfg, "sources = [\"scripted\"]\nsinks = [\"folded\"]\n").unwrap();
        std::os::unix::fs::chown(&cfg, Some(owner), None).unwrap();
        std::fs::set_permissions(&cfg, std::fs::Permissions::from_mode(mode)).unwrap();
        let marker = dir.path().join("ran");
        let o = run_in(dir.path(), &["--", "sh", "-c", &touch(&marker)]);
        let e = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{e}");
        assert!(e.contains("config file") && e.contains(why), "{e}");
        assert!(!marker.exists(), "the target ran");
    }
}

#[test]
fn as_root_a_world_writable_agent_library_is_refused() {
    require_plugin("cupti");
    if !require_root("as_root_a_world_writable_agent_library_is_refused") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let agent = dir.path().join("libevil.so");
    std::fs::write(&agent, b"not a library").unwrap();
    std::fs::set_permissions(&agent, std::fs::Permissions::from_mode(0o666)).unwrap();
    let show = "echo \"INJECTED=$CUDA_INJECTION64_PATH\"";
    // From the config file, then from the environment.
    std::fs::write(dir.path().join("xpuprof.toml"), format!("[source.cupti]\nagent = {:?}\n", agent))
        .unwrap();
    let o = run_in(dir.path(), &["--source", "cupti,scripted", "--sink", "folded", "--", "sh", "-c", show]);
    let e = stderr(&o);
    assert!(e.contains("agent library") && e.contains("writable by group or others"), "{e}");
    assert!(String::from_utf8_lossy(&o.stdout).contains("INJECTED=\n"), "the target got the library");
    std::fs::remove_file(dir.path().join("xpuprof.toml")).unwrap();
    let o = Command::new(xpuprof())
        .args(["--source", "cupti,scripted", "--sink", "folded", "--", "sh", "-c", show])
        .current_dir(dir.path())
        .env("XPUPROF_PLUGIN_PATH", test_plugin_path())
        .env("XPUPROF_CUPTI_AGENT", &agent)
        .output()
        .unwrap();
    let e = stderr(&o);
    assert!(e.contains("XPUPROF_CUPTI_AGENT") && e.contains("writable by group or others"), "{e}");
    assert!(String::from_utf8_lossy(&o.stdout).contains("INJECTED=\n"), "the target got the library");
}

#[test]
fn under_sudo_the_target_runs_as_the_invoking_user_unless_asked_to_keep_root() {
    require_plugin("scripted");
    if !require_root("under_sudo_the_target_runs_as_the_invoking_user_unless_asked_to_keep_root") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let sudo = |extra: &[&str]| {
        let mut args = vec!["--source", "scripted", "--sink", "folded"];
        args.extend_from_slice(extra);
        args.extend(["--", "sh", "-c", "echo \"$(id -u):$(id -g):$HOME\""]);
        let o = Command::new(xpuprof())
            .args(&args)
            .current_dir(dir.path())
            .env("XPUPROF_PLUGIN_PATH", test_plugin_path())
            .env("SUDO_UID", NOBODY.to_string())
            .env("SUDO_GID", NOBODY.to_string())
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        String::from_utf8_lossy(&o.stdout).trim().to_owned()
    };
    assert_eq!(sudo(&[]), format!("{NOBODY}:{NOBODY}:{}", home_of(NOBODY)));
    assert!(sudo(&["--keep-root"]).starts_with("0:0:"));
}

#[test]
fn a_reused_output_directory_holds_only_the_new_runs_files() {
    for p in ["scripted", "folded", "chrome"] {
        require_plugin(p);
    }
    let dir = tempfile::tempdir().unwrap();
    let o =
        run_in(dir.path(), &["--source", "scripted", "--sink", "folded,chrome", "-o", "out", "--", "true"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(dir.path().join("out/trace.json").exists());
    std::fs::write(dir.path().join("out/notes.txt"), "mine").unwrap();
    let o = run_in(dir.path(), &["--source", "scripted", "--sink", "folded", "-o", "out", "--", "true"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(!dir.path().join("out/trace.json").exists(), "the earlier run's trace.json was left behind");
    assert!(dir.path().join("out/profile.folded").exists());
    assert_eq!(std::fs::read_to_string(dir.path().join("out/notes.txt")).unwrap(), "mine");
    let e = stderr(&o);
    assert!(e.contains("also holds files this run did not write") && e.contains("notes.txt"), "{e}");
}
