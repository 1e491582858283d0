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
    require_plugin("wrong-abi");
    let (o, _d) = run(&["--source", "wrong_abi", "--sink", "folded", "--", "true"]);
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
