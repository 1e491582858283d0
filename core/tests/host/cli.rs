//! The command-line contract: exit codes and one clear message for each kind of bad input.

use super::common::*;

#[test]
fn target_exit_code_is_xpuprofs() {
    require_plugin("scripted");
    let (o, _d) = run(&["--source", "scripted", "--sink", "folded", "--", "sh", "-c", "exit 7"]);
    assert_eq!(o.status.code(), Some(7), "{}", stderr(&o));
}

#[test]
fn killed_target_maps_to_128_plus_signal() {
    require_plugin("scripted");
    let (o, _d) = run(&["--source", "scripted", "--sink", "folded", "--", "sh", "-c", "kill -TERM $$"]);
    assert_eq!(o.status.code(), Some(128 + 15), "{}", stderr(&o));
}

#[test]
fn missing_command_is_127_with_message() {
    let (o, _d) = run(&["--source", "scripted", "--sink", "folded", "--", "/nonexistent"]);
    assert_eq!(o.status.code(), Some(127));
    let e = stderr(&o);
    assert!(e.contains("command not found: /nonexistent"), "{e}");
    assert!(!e.contains("panicked") && !e.contains("backtrace"), "{e}");
}

#[test]
fn a_script_whose_interpreter_is_missing_names_the_interpreter() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("job.sh");
    std::fs::write(&script, "#!/nonexistent/interp\necho hi\n").unwrap();
    std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let o = run_in(dir.path(), &["--source", "scripted", "--sink", "folded", "--", "./job.sh"]);
    assert_eq!(o.status.code(), Some(127), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(!e.contains("command not found"), "the file exists: {e}");
    assert!(e.contains("cannot execute ./job.sh: its interpreter /nonexistent/interp"), "{e}");
}

#[test]
fn report_errors_name_the_archive_once() {
    let (o, d) = run(&["report", "no-such-dir"]);
    assert_eq!(o.status.code(), Some(2));
    let e = stderr(&o);
    assert_eq!(e.matches("failed to open archive").count(), 1, "{e}");
    assert!(e.starts_with("xpuprof: failed to open archive no-such-dir"), "{e}");
    drop(d);
}

#[test]
fn command_not_in_path_is_127() {
    let (o, _d) = run(&["--source", "scripted", "--sink", "folded", "--", "no-such-command-xyz"]);
    assert_eq!(o.status.code(), Some(127), "{}", stderr(&o));
}

#[test]
fn directory_as_command_is_126() {
    let (o, _d) = run(&["--source", "scripted", "--sink", "folded", "--", "/tmp"]);
    assert_eq!(o.status.code(), Some(126));
    assert!(stderr(&o).contains("it is a directory"), "{}", stderr(&o));
}

#[test]
fn unknown_source_is_a_usage_error_listing_what_exists() {
    require_plugin("scripted");
    let (o, _d) = run(&["--source", "nosuch", "--sink", "folded", "--", "true"]);
    assert_eq!(o.status.code(), Some(2));
    let e = stderr(&o);
    assert!(e.contains("unknown source `nosuch`") && e.contains("scripted"), "{e}");
}

#[test]
fn unknown_sink_is_a_usage_error() {
    let (o, _d) = run(&["--source", "scripted", "--sink", "nosuch", "--", "true"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("unknown sink `nosuch`"), "{}", stderr(&o));
}

#[test]
fn empty_source_list_is_a_usage_error() {
    let (o, _d) = run(&["--source", "", "--sink", "folded", "--", "true"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--source needs"), "{}", stderr(&o));
}

#[test]
fn no_command_is_a_usage_error() {
    let (o, _d) = run(&["--source", "scripted"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("no command given"), "{}", stderr(&o));
}

#[test]
fn malformed_config_names_file_line_and_column() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("bad.toml"), "sources = [\"scripted\"\nsinks = 3\n").unwrap();
    let o = run_in(dir.path(), &["-c", "bad.toml", "--", "true"]);
    assert_eq!(o.status.code(), Some(2));
    let e = stderr(&o);
    assert!(e.contains("bad.toml:") && e.contains("invalid TOML"), "{e}");
}

#[test]
fn config_with_unknown_plugin_key_is_located() {
    require_plugin("scripted");
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("xpuprof.toml"),
        "sources = [\"scripted\"]\nsinks = [\"folded\"]\n\n[source.scripted]\nrepeat = 2\nbogus = true\n",
    )
    .unwrap();
    let o = run_in(dir.path(), &["--", "true"]);
    assert_eq!(o.status.code(), Some(2));
    let e = stderr(&o);
    assert!(e.contains("xpuprof.toml:6:1") && e.contains("unknown key `bogus`"), "{e}");
}

#[test]
fn config_picks_plugins_and_flags_override_it() {
    require_plugin("scripted");
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("xpuprof.toml"),
        "sources = [\"scripted\"]\nsinks = [\"folded\"]\noutput = \"from-config\"\n",
    )
    .unwrap();
    let o = run_in(dir.path(), &["--", "true"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(dir.path().join("from-config/profile.folded").exists());
    let o = run_in(dir.path(), &["-o", "from-flag", "--", "true"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(dir.path().join("from-flag/profile.folded").exists());
}

#[test]
fn missing_plugin_dir_is_reported() {
    let (o, _d) = run(&["--plugin-dir", "/nonexistent-plugins", "plugins"]);
    assert_eq!(o.status.code(), Some(0));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("/nonexistent-plugins") && out.contains("cannot be read"), "{out}");
}

#[test]
fn unreadable_plugin_file_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("libxpuprof_plugin_garbage.so");
    std::fs::write(&f, b"this is not an ELF file").unwrap();
    let (o, _d) = run(&["--plugin-dir", dir.path().to_str().unwrap(), "plugins"]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("libxpuprof_plugin_garbage.so: cannot be loaded by the dynamic loader"), "{out}");
}

#[test]
fn plugins_v_says_why_each_file_of_each_searched_folder_was_or_was_not_taken() {
    let dir = plugin_subset(&["scripted"]);
    std::fs::write(dir.path().join("libxpuprof_plugin_garbage.so"), b"not an ELF file").unwrap();
    std::fs::write(dir.path().join("libhelper.so"), b"").unwrap();
    std::fs::write(dir.path().join("README"), b"").unwrap();
    let (o, _d) = run(&["-v", "--plugin-dir", dir.path().to_str().unwrap(), "plugins"]);
    let out = String::from_utf8_lossy(&o.stdout);
    let folder = format!("{} (--plugin-dir)", dir.path().display());
    assert!(out.contains("searched, in this order:") && out.contains(&folder), "{out}");
    assert!(out.contains("libxpuprof_plugin_scripted.so: taken, source scripted"), "{out}");
    assert!(out.contains("libxpuprof_plugin_garbage.so: not taken, cannot be loaded"), "{out}");
    assert!(out.contains("libhelper.so: not taken, not named libxpuprof_plugin_<name>.so"), "{out}");
    assert!(out.contains("(1 other files: not taken, not shared libraries)"), "{out}");
    // Without -v the folders are not listed.
    let (o, _d) = run(&["--plugin-dir", dir.path().to_str().unwrap(), "plugins"]);
    assert!(!String::from_utf8_lossy(&o.stdout).contains("searched, in this order:"));
}

#[test]
fn plugins_says_when_a_plugin_dir_held_no_plugin() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("libxpuprof_example.so"), b"").unwrap();
    let (o, _d) = run(&["--plugin-dir", dir.path().to_str().unwrap(), "plugins"]);
    let out = String::from_utf8_lossy(&o.stdout);
    let note = format!("note: --plugin-dir {} holds no plugin", dir.path().display());
    assert!(out.contains(&note) && out.contains("`cargo build`"), "{out}");
}

#[test]
fn plugins_lists_the_test_plugin_with_abi_and_path() {
    let p = require_plugin("scripted");
    let (o, _d) = run(&["plugins"]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("scripted") && out.contains("ABI 1") && out.contains(p.to_str().unwrap()), "{out}");
}

#[test]
fn doctor_reports_every_capability() {
    let (o, _d) = run(&["doctor"]);
    assert_eq!(o.status.code(), Some(0));
    let out = String::from_utf8_lossy(&o.stdout);
    for cap in ["bpf-perf", "kernel-btf", "cuda", "rocm", "level-zero"] {
        assert!(out.contains(cap), "{cap} missing from:\n{out}");
    }
}

#[test]
fn end_summary_shows_sources_losses_and_files() {
    require_plugin("scripted");
    let (o, d) = run(&["--source", "scripted", "--sink", "folded", "-o", "out", "--", "true"]);
    assert_eq!(o.status.code(), Some(0));
    let e = stderr(&o);
    assert!(e.contains("scripted:"), "{e}");
    assert!(e.contains("scripted ring buffer full: 3"), "{e}");
    assert!(e.contains("wrote ") && e.contains("profile.folded"), "{e}");
    assert!(d.path().join("out/profile.folded").exists());
}

#[test]
fn example_config_documents_every_plugin_key() {
    // The committed example is generated from the plugins' declared keys; regenerate it with
    // XPUPROF_BLESS=1 (or `xpuprof plugins --config-example > xpuprof.toml.example`).
    for p in [
        "ebpf",
        "cupti",
        "folded",
        "chrome",
        "archive",
        "flamegraph",
        "summary",
        "perfetto",
        "pprof",
        "levelzero",
        "dump",
    ] {
        require_plugin(p);
    }
    let (o, _d) = run(&["plugins", "--config-example"]);
    let generated = String::from_utf8(o.stdout).unwrap();
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../xpuprof.toml.example");
    if std::env::var_os("XPUPROF_BLESS").is_some() {
        std::fs::write(&path, &generated).unwrap();
    }
    let committed = std::fs::read_to_string(&path).unwrap();
    assert_eq!(committed, generated, "xpuprof.toml.example is stale: regenerate it with XPUPROF_BLESS=1");
    // And it parses as a config xpuprof accepts.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("xpuprof.toml"), &committed).unwrap();
    let o = run_in(dir.path(), &["--source", "scripted", "--sink", "folded", "--", "true"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
}
