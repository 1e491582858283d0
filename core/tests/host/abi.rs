//! ABI negative tests: each bad plugin gets a clear message and the session keeps running.

use super::common::*;

#[test]
fn library_that_is_not_a_plugin_is_named_as_such() {
    let dir = plugin_subset(&["not-a-plugin"]);
    let (o, _d) = run(&["--plugin-dir", dir.path().to_str().unwrap(), "plugins"]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("not an xpuprof plugin: it exports no plugin root module"), "{out}");
}

#[test]
fn plugin_for_another_abi_names_both_versions() {
    let dir = plugin_subset(&["wrong-abi"]);
    let (o, _d) = run(&["--plugin-dir", dir.path().to_str().unwrap(), "plugins"]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("built for plugin ABI 999, this xpuprof speaks ABI 1"), "{out}");
}

#[test]
fn selecting_an_unloadable_plugin_explains_why() {
    let dir = plugin_subset(&["wrong-abi"]);
    let (o, _d) = run(&[
        "--plugin-dir",
        dir.path().to_str().unwrap(),
        "--source",
        "wrong_abi",
        "--sink",
        "folded",
        "--",
        "true",
    ]);
    assert_eq!(o.status.code(), Some(2));
    let e = stderr(&o);
    assert!(e.contains("cannot be loaded") && e.contains("ABI 999"), "{e}");
}

#[test]
fn plugin_panicking_in_create_is_contained_and_session_goes_on() {
    require_plugin("panicky");
    let (o, d) =
        run(&["--source", "panicky,scripted", "--sink", "folded", "-o", "out", "--", "sh", "-c", "exit 0"]);
    let e = stderr(&o);
    assert!(
        e.contains("plugin `panicky` panicked in create: panicky plugin panics in create on purpose"),
        "{e}"
    );
    assert!(e.contains("(at tests/plugins/panicky/src/lib.rs:"), "{e}");
    // The session went on: the other source's data was written, and the exit code says a
    // plugin failed.
    let folded = std::fs::read_to_string(d.path().join("out/profile.folded")).unwrap();
    assert!(folded.contains("[GPU_Kernel]graph_node_a"), "{folded}");
    assert_eq!(o.status.code(), Some(125));
}

#[test]
fn plugin_panicking_in_each_later_entry_point_is_contained() {
    require_plugin("panicky");
    for entry in ["prepare", "start", "stop"] {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("xpuprof.toml"),
            format!("[source.panicky]\npanic_in = [\"{entry}\"]\n"),
        )
        .unwrap();
        let o = run_in(
            dir.path(),
            &["--source", "panicky,scripted", "--sink", "folded", "--", "sh", "-c", "exit 3"],
        );
        let e = stderr(&o);
        assert!(e.contains(&format!("plugin `panicky` panicked in {entry}")), "{entry}: {e}");
        assert_eq!(o.status.code(), Some(3), "{entry}: the target's own code wins: {e}");
        assert!(dir.path().join("xpuprof-out/profile.folded").exists(), "{entry}");
    }
}

// ---- compatibility across SDK versions of one ABI (see tests/abi/README.md) ----

/// The `scripted` source as it was at SDK 0.1.0, built against the frozen SDK 0.1.0.
fn sdk_0_1_plugin() -> std::path::PathBuf {
    let p = plugin_dir().join("libxpuprof_test_scripted_sdk_0_1.so");
    assert!(p.exists(), "{} is missing: run `cargo build --workspace` before the tests", p.display());
    p
}

/// A directory holding the SDK 0.1.0 plugin under a plugin file name.
fn sdk_0_1_plugin_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(sdk_0_1_plugin(), dir.path().join("libxpuprof_plugin_frozen_scripted.so")).unwrap();
    dir
}

#[test]
fn plugin_built_with_sdk_0_1_is_listed_with_its_abi_and_sdk() {
    let dir = sdk_0_1_plugin_dir();
    let (o, _d) = run(&["--plugin-dir", dir.path().to_str().unwrap(), "plugins"]);
    let out = String::from_utf8_lossy(&o.stdout);
    let line =
        out.lines().find(|l| l.contains("frozen-scripted")).unwrap_or_else(|| panic!("not listed:\n{out}"));
    assert!(line.contains("ABI 1") && line.contains("SDK 0.1 "), "{line}");
    assert!(!out.contains("libxpuprof_plugin_frozen_scripted.so:"), "listed as not loadable: {out}");
}

#[test]
fn plugin_built_with_sdk_0_1_loads_and_runs_in_this_host() {
    let dir = sdk_0_1_plugin_dir();
    let (o, d) = run(&[
        "--plugin-dir",
        dir.path().to_str().unwrap(),
        "--source",
        "frozen-scripted",
        "--sink",
        "folded",
        "-o",
        "out",
        "--",
        "true",
    ]);
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(0), "{e}");
    // Every record the 0.1 codec encoded was decoded by this host.
    assert!(e.contains("records: frozen-scripted: 110"), "{e}");
    let folded = std::fs::read_to_string(d.path().join("out/profile.folded")).unwrap();
    assert!(folded.contains("launch_gemm;cudaLaunchKernel;[GPU_Kernel]"), "{folded}");
    assert!(folded.contains("[GPU_Kernel]graph_node_a"), "{folded}");
}

/// Runs the host built with the frozen SDK 0.1.0 on `plugin`.
fn run_host_0_1(plugin: &std::path::Path) -> (std::process::Output, String) {
    let host = plugin_dir().join("xpuprof-abi-host-0-1");
    assert!(host.exists(), "{} is missing: run `cargo build --workspace` before the tests", host.display());
    let o = std::process::Command::new(host).arg(plugin).output().unwrap();
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    (o, out)
}

#[test]
fn host_built_with_sdk_0_1_loads_and_runs_a_source_of_this_sdk() {
    let (o, out) = run_host_0_1(&require_plugin("scripted"));
    assert!(o.status.success(), "{out}{}", stderr(&o));
    assert!(out.contains("name: scripted\nkind: source") && out.contains("lifecycle: ok"), "{out}");
    let count = |key: &str| -> u64 {
        let line = out.lines().find(|l| l.starts_with(key)).unwrap_or_else(|| panic!("{key} missing: {out}"));
        line[key.len()..].trim().parse().unwrap()
    };
    // Every batch this SDK's emitter sent decodes with the 0.1 codec.
    assert!(count("records:") > 0 && count("device_ops:") > 0, "{out}");
}

#[test]
fn host_built_with_sdk_0_1_loads_and_runs_a_sink_of_this_sdk() {
    let (o, out) = run_host_0_1(&require_plugin("folded"));
    assert!(o.status.success(), "{out}{}", stderr(&o));
    assert!(out.contains("name: folded\nkind: sink") && out.contains("lifecycle: ok"), "{out}");
}

#[test]
fn plugins_shows_the_sdk_version_of_plugins_of_this_sdk() {
    let p = require_plugin("folded");
    let (o, _d) = run(&["plugins"]);
    let out = String::from_utf8_lossy(&o.stdout);
    let line = out.lines().find(|l| l.contains(p.to_str().unwrap())).unwrap_or_else(|| panic!("{out}"));
    assert!(line.contains(&format!("ABI 1  SDK {}", xpuprof_sdk::abi::SDK_VERSION)), "{line}");
}

// ---- what a build ships, and files that must not take xpuprof down ----

#[test]
fn plugins_and_doctor_of_a_build_list_no_test_plugin() {
    // The test libraries are in the build directory, next to the binary...
    for p in TEST_PLUGINS {
        require_plugin(p);
    }
    sdk_0_1_plugin();
    // ...and still not part of what xpuprof finds there.
    for cmd in ["plugins", "doctor"] {
        let o = run_shipped(&[cmd]);
        let out = String::from_utf8_lossy(&o.stdout);
        assert_eq!(o.status.code(), Some(0), "{cmd}: {out}");
        assert!(out.contains("ebpf"), "{cmd} lists the shipped plugins: {out}");
        for name in ["scripted", "panicky", "wrong_abi", "wrong-abi", "not_a_plugin", "libxpuprof_test_"] {
            assert!(!out.contains(name), "{cmd} lists test plugin `{name}`:\n{out}");
        }
    }
}

#[test]
fn a_truncated_plugin_file_is_reported_like_any_unloadable_file() {
    let whole = std::fs::read(require_plugin("folded")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    // Cut inside the first loadable segment: mapping it raises SIGBUS in the dynamic loader.
    std::fs::write(dir.path().join("libxpuprof_plugin_cut.so"), &whole[..100_000]).unwrap();
    let (o, _d) = run(&["--plugin-dir", dir.path().to_str().unwrap(), "plugins"]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{out}{}", stderr(&o));
    assert!(out.contains("libxpuprof_plugin_cut.so: cannot be loaded: the file is truncated"), "{out}");
}

/// True when running as root; otherwise a failure in CI, a counted skip elsewhere.
fn root_or_skip(why: &str) -> bool {
    xpuprof_testkit::skip::require_root(why)
}

#[test]
fn as_root_a_plugin_in_a_world_writable_directory_of_another_user_is_refused() {
    if !root_or_skip("the directory check only applies when xpuprof runs as root") {
        return;
    }
    use std::os::unix::fs::PermissionsExt;
    let dir = plugin_subset(&["scripted"]);
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    std::os::unix::fs::chown(dir.path(), Some(65534), Some(65534)).unwrap();
    let o = std::process::Command::new(xpuprof())
        .args(["--plugin-dir", dir.path().to_str().unwrap(), "plugins"])
        .env_remove("XPUPROF_PLUGIN_PATH")
        .env_remove("SUDO_UID")
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    let line =
        out.lines().find(|l| l.contains("libxpuprof_plugin_scripted.so:")).unwrap_or_else(|| panic!("{out}"));
    assert!(line.contains("refused while running as root: its directory"), "{line}");
    assert!(line.contains("owned by uid 65534"), "{line}");
    // The same directory, owned by root and sticky like /tmp, is fine.
    std::os::unix::fs::chown(dir.path(), Some(0), Some(0)).unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o1777)).unwrap();
    let o = std::process::Command::new(xpuprof())
        .args(["--plugin-dir", dir.path().to_str().unwrap(), "plugins"])
        .env_remove("XPUPROF_PLUGIN_PATH")
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(!out.contains("libxpuprof_plugin_scripted.so:") && out.contains("scripted "), "{out}");
}

// ---- panics ----

#[test]
fn a_plugin_built_with_panic_abort_is_refused_before_it_is_loaded() {
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/abi/abort-plugin/lib.rs");
    let dir = tempfile::tempdir().unwrap();
    let lib = dir.path().join("libxpuprof_plugin_abort.so");
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let o = std::process::Command::new(rustc)
        .args(["--edition", "2021", "--crate-type", "cdylib", "-C", "panic=abort", "-o"])
        .arg(&lib)
        .arg(&src)
        .output()
        .expect("run rustc");
    assert!(o.status.success(), "rustc failed: {}", stderr(&o));
    let (o, _d) = run(&["--plugin-dir", dir.path().to_str().unwrap(), "plugins"]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{out}{}", stderr(&o));
    assert!(
        out.contains("libxpuprof_plugin_abort.so: refused: it was built with `panic = \"abort\"`"),
        "{out}"
    );
}

#[test]
fn a_panic_in_a_thread_the_plugin_started_is_reported_by_plugin_name() {
    require_plugin("panicky");
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("xpuprof.toml"), "[source.panicky]\npanic_in = [\"thread\"]\n").unwrap();
    let o = run_in(dir.path(), &["--source", "panicky,scripted", "--sink", "folded", "--", "true"]);
    let e = stderr(&o);
    assert!(
        e.contains("panicky: panicked in a thread it started (`panicky-worker`): panicky plugin panics in its own thread on purpose (at tests/plugins/panicky/src/lib.rs:"),
        "{e}"
    );
    assert!(dir.path().join("xpuprof-out/profile.folded").exists(), "{e}");
}

#[test]
fn oversized_texts_from_a_plugin_are_cut_before_they_are_printed_or_stored() {
    require_plugin("panicky");
    let dir = tempfile::tempdir().unwrap();
    let huge = 64 << 20;
    std::fs::write(
        dir.path().join("xpuprof.toml"),
        format!("[source.panicky]\npanic_in = []\nhuge_text_bytes = {huge}\n"),
    )
    .unwrap();
    let o = run_in(dir.path(), &["--source", "panicky", "--sink", "folded,summary", "--", "true"]);
    let e = stderr(&o);
    // A log message, an error and a loss cause of 64 MiB each: all printed, all cut.
    assert!(e.len() < 512 << 10, "{} bytes on stderr", e.len());
    assert!(e.contains("more bytes cut by xpuprof]"), "{}", &e[..e.len().min(2000)]);
    assert!(e.contains("failed in stop: yyyy"), "the error is still shown");
    let summary = std::fs::read(dir.path().join("xpuprof-out/summary.json")).unwrap();
    assert!(summary.len() < 512 << 10, "the stored loss cause is cut: {} bytes", summary.len());
}

// ---- the SDK on its own ----

#[test]
fn sdk_builds_outside_the_workspace() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    // target/<profile>/ -> target/sdk-standalone, kept between runs like any build directory.
    let target = plugin_dir().parent().unwrap().join("sdk-standalone");
    let o =
        std::process::Command::new(root.join("tests/abi/sdk-standalone.sh")).arg(&target).output().unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "the SDK does not build on its own:\n{out}{}", stderr(&o));
    assert!(out.contains("xpuprof-sdk built outside the workspace"), "{out}");
    eprintln!("{out}");
}
