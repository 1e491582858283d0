//! The plugin author's kit end to end, outside the workspace: `tests/plugin-kit/outside.sh`
//! installs this build into a temporary prefix with `scripts/install.sh`, builds the installed
//! C examples (two plugins and an agent on libxpuprof_agent) with `pkg-config`, generates C and
//! Rust sources and sinks with the installed `xpuprof new-plugin`, builds them against the
//! installed headers and SDK (the Rust ones run the conformance kit in their own `cargo test`),
//! and runs `xpuprof check-plugin` and a session on each.

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
    assert_eq!(out.matches("passes the conformance check (0 warnings)").count(), 6, "{out}");
    assert!(out.ends_with("2 C and 2 Rust plugins from the templates built, checked and run\n"), "{out}");
}
