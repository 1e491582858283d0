//! The plugin author's kit end to end, outside the workspace: `tests/plugin-kit/outside.sh`
//! installs this build into a temporary prefix with `scripts/install.sh`, builds the installed
//! C examples (two plugins and an agent on libxpuprof_agent) with `pkg-config`, generates C and
//! Rust sources and sinks with the installed `xpuprof new-plugin`, builds them against the
//! installed headers and SDK (the Rust ones run the conformance kit in their own `cargo test`),
//! and runs `xpuprof check-plugin` and a session on each. Inside the repository, a fifth
//! backend from `xpuprof new-plugin --agent` (agent and host plugin) is built and recorded with.

use super::cabi::repo;
use super::common::*;

#[test]
fn plugins_built_outside_the_workspace_pass_the_check_and_run() {
    // target/<profile>/ -> target/sdk-standalone, shared with the SDK's standalone build test.
    let target = plugin_dir().parent().unwrap().join("sdk-standalone");
    let o = std::process::Command::new(repo().join("tests/plugin-kit/outside.sh"))
        .arg(xpuprof())
        .arg(&target)
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{out}\n{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(out.matches("passes the conformance check (0 warnings)").count(), 7, "{out}");
    assert!(out.ends_with("2 C and 2 Rust plugins from the templates built, checked and run\n"), "{out}");
}

/// A fifth backend as a newcomer adds one (docs/architecture.md, "Adding a backend"): `xpuprof
/// new-plugin --agent` writes an agent on the kit and a host plugin on the toolbox's
/// `AgentSource`, in a cargo workspace of its own that path-depends on this repository's SDK
/// crates; cargo builds it, and the real host lists it and records a program with it (the agent
/// preloaded, its stream decoded into a marker every sink gets). Nothing of core or the sinks is
/// touched. It builds in the repository's target directory, with the repository's profiles and
/// lock file, so the dependencies are the ones already built (about 3 s here; a target directory
/// of its own built every dependency again: 45 s on a 2-core machine), and under test names, so
/// the build directory never offers the plugin to other tests nor the agent to `install.sh`.
#[test]
fn a_fifth_backend_from_the_agent_template_builds_loads_and_records() {
    let tmp =
        tempfile::Builder::new().prefix("fifth-backend").tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let dir = tmp.path().join("npu5");
    let o = run_in(
        tmp.path(),
        &[
            "new-plugin",
            "npu5",
            "--kind",
            "source",
            "--lang",
            "rust",
            "--agent",
            "--dir",
            dir.to_str().unwrap(),
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let manifest = dir.join("Cargo.toml");
    let text = std::fs::read_to_string(&manifest).unwrap();
    let root = std::fs::read_to_string(repo().join("Cargo.toml")).unwrap();
    let profiles = &root[root.find("[profile.").expect("the workspace's profiles")..];
    let text = text.replace("name = \"xpuprof_plugin_npu5\"", "name = \"xpuprof_test_npu5\"");
    std::fs::write(&manifest, format!("{text}\n{profiles}")).unwrap();
    // Its agent too, out of install.sh's `libxpuprof_*_agent.so`: the host is told where it is.
    let agent_manifest = dir.join("agent/Cargo.toml");
    let agent_text = std::fs::read_to_string(&agent_manifest).unwrap();
    let agent_text =
        agent_text.replace("name = \"xpuprof_npu5_agent\"", "name = \"xpuprof_test_npu5_agentlib\"");
    std::fs::write(&agent_manifest, agent_text).unwrap();

    let target = plugin_dir().parent().unwrap().to_path_buf();
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let b = std::process::Command::new(cargo)
        .args(["build", "--offline", "--quiet"])
        .current_dir(&dir)
        .env("CARGO_TARGET_DIR", &target)
        .output()
        .unwrap();
    assert!(b.status.success(), "cargo build of the generated backend failed:\n{}", stderr(&b));

    let plugin = plugin_dir().join("libxpuprof_test_npu5.so");
    let agent = plugin_dir().join("libxpuprof_test_npu5_agentlib.so");
    assert!(agent.is_file(), "the agent is built next to the plugin");
    let with_npu5 = |args: &[&str]| {
        std::process::Command::new(xpuprof())
            .args(args)
            .current_dir(tmp.path())
            .env("XPUPROF_PLUGIN_PATH", &plugin)
            .env("XPUPROF_NPU5_AGENT", &agent)
            .output()
            .unwrap()
    };
    let listed = with_npu5(&["plugins"]);
    let listed_text = String::from_utf8_lossy(&listed.stdout);
    assert!(
        listed.status.success() && listed_text.contains("npu5: describe what it records"),
        "{listed_text}"
    );

    let out = tmp.path().join("out");
    let r = with_npu5(&[
        "record",
        "--source",
        "npu5",
        "--sink",
        "summary",
        "-o",
        out.to_str().unwrap(),
        "--",
        "true",
    ]);
    assert!(r.status.success(), "{}", stderr(&r));
    let summary = std::fs::read_to_string(out.join("summary.txt")).unwrap();
    assert!(summary.contains("marker 1"), "the agent's tick reached the sinks:\n{summary}\n{}", stderr(&r));
}
