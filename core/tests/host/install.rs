//! Installing: `xpuprof --version`, and the release tarball (`scripts/package.sh`) unpacked and
//! installed into a temporary prefix with its `install.sh`, then used as a user would: its
//! plugins found next to it, no test plugin among them, the plugin author's kit in place (headers,
//! agent kit, pkg-config file, SDK sources, examples; `xpuprof new-plugin` takes it by default),
//! and the CPU demo profiled from there. (tests/plugin-kit/outside.sh, run by kit.rs, builds
//! plugins and an agent against such an installation.)

use std::path::{Path, PathBuf};
use std::process::Command;

use super::common::*;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").canonicalize().unwrap()
}

fn sh(cmd: &mut Command) -> String {
    let o = cmd.output().unwrap_or_else(|e| panic!("failed to run {cmd:?}: {e}"));
    let text = format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    assert!(o.status.success(), "{cmd:?} failed ({}):\n{text}", o.status);
    text
}

#[test]
fn version_says_the_version_the_abi_and_where_plugins_are_loaded_from() {
    let o = run_shipped(&["--version"]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{out}");
    assert!(out.starts_with(&format!("xpuprof {}\n", env!("CARGO_PKG_VERSION"))), "{out}");
    assert!(out.contains(&format!("plugin ABI {}", xpuprof_sdk::abi::ABI_VERSION)), "{out}");
    assert!(out.contains(&format!("{} (install directory)", plugin_dir().display())), "{out}");
}

/// Packages the build the tests run against (`target/debug`: the same files as a release,
/// without a second build of the workspace in CI), unpacks the tarball, installs it into a
/// prefix and profiles the CPU demo with the installed xpuprof.
#[test]
fn the_tarball_installs_into_a_prefix_and_profiles_the_cpu_demo() {
    for p in ["ebpf", "folded", "flamegraph", "summary"] {
        require_plugin(p);
    }
    let profile = plugin_dir().file_name().unwrap().to_str().unwrap().to_owned();
    let out = sh(Command::new(repo().join("scripts/package.sh")).args(["--profile", &profile, "--no-build"]));
    let tarball = repo().join(out.lines().last().unwrap().trim());
    let name = tarball.file_name().unwrap().to_str().unwrap();
    assert!(name.starts_with(&format!("xpuprof-{}-", env!("CARGO_PKG_VERSION"))), "{name}");
    assert!(name.ends_with("-linux.tar.gz"), "{name}");

    let tmp = tempfile::tempdir().unwrap();
    sh(Command::new("tar").arg("-xzf").arg(&tarball).arg("-C").arg(tmp.path()));
    // CI's disk is small: the tarball (~80 MB of a debug build) is of no use once unpacked.
    std::fs::remove_file(&tarball).unwrap();
    let unpacked = tmp.path().join(name.trim_end_matches(".tar.gz"));
    // Canonical: the installed xpuprof names its kit by its own canonical path.
    let prefix = tmp.path().canonicalize().unwrap().join("prefix");
    sh(Command::new(unpacked.join("install.sh")).arg("--prefix").arg(&prefix));

    let xpuprof = prefix.join("bin/xpuprof");
    let plugins = prefix.join("lib/xpuprof/plugins");
    let installed: Vec<String> = std::fs::read_dir(&plugins)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(installed.iter().all(|f| !f.contains("test")), "test plugins installed: {installed:?}");
    for f in ["libxpuprof_plugin_ebpf.so", "libxpuprof_plugin_flamegraph.so", "libxpuprof_cupti_agent.so"] {
        assert!(installed.iter().any(|i| i == f), "{f} not installed: {installed:?}");
    }
    the_authors_kit_is_installed(&prefix);
    let version = sh(Command::new(&xpuprof).arg("--version").env_remove("XPUPROF_PLUGIN_PATH"));
    assert!(version.contains(&format!("{} (install directory)", plugins.display())), "{version}");
    let listed = sh(Command::new(&xpuprof).arg("plugins").env_remove("XPUPROF_PLUGIN_PATH"));
    assert!(listed.contains(&plugins.join("libxpuprof_plugin_folded.so").display().to_string()), "{listed}");

    if !xpuprof_testkit::skip::require_root("the CPU demo is profiled with the eBPF source") {
        return;
    }
    let demo = tmp.path().join("cpu_demo");
    sh(Command::new("cc")
        .args(["-O1", "-g", "-fno-omit-frame-pointer", "-o"])
        .arg(&demo)
        .arg(repo().join("plugins/ebpf/tests/workloads/burn.c")));
    let o = Command::new(&xpuprof)
        .args(["--source", "ebpf", "--sink", "folded,flamegraph,summary", "-o", "out", "--"])
        .arg(&demo)
        .current_dir(tmp.path())
        .env_remove("XPUPROF_PLUGIN_PATH")
        .output()
        .unwrap();
    let err = stderr(&o);
    assert!(o.status.success(), "the installed xpuprof failed on the CPU demo:\n{err}");
    let cpu = std::fs::read_to_string(tmp.path().join("out/profile.cpu.folded")).unwrap();
    assert!(cpu.contains("burn_three"), "the CPU demo's hot function is not in the profile:\n{cpu}");
    let svg = std::fs::read_to_string(tmp.path().join("out/flamegraph.cpu.svg")).unwrap();
    assert!(svg.contains("<title>burn_three "), "the CPU flame graph misses the demo's frames");
    assert!(
        err.contains("flamegraph.svg: no GPU work was recorded"),
        "the end of the run says what each file shows:\n{err}"
    );
}

/// The plugin author's kit of an installation at `prefix`: the headers as in the repository,
/// the C agent kit, a pkg-config file that points into the prefix, the SDK's and the
/// conformance kit's sources, the examples; and a C plugin generated by the installed xpuprof
/// builds on them and passes the check.
fn the_authors_kit_is_installed(prefix: &Path) {
    for h in ["plugin.h", "records.h", "agent.h"] {
        let installed = std::fs::read(prefix.join("include/xpuprof").join(h)).unwrap();
        assert!(
            installed == std::fs::read(repo().join("sdk/include/xpuprof").join(h)).unwrap(),
            "{h} differs"
        );
    }
    let share = prefix.join("share/xpuprof");
    for f in [
        "lib/libxpuprof_agent.so",
        "lib/libxpuprof_agent.a",
        "share/xpuprof/sdk/Cargo.toml",
        "share/xpuprof/sdk/src/lib.rs",
        "share/xpuprof/sdk/build.rs",
        "share/xpuprof/plugin-test/Cargo.toml",
        "share/xpuprof/plugin-test/src/lib.rs",
        "share/xpuprof/Cargo.lock",
        "share/xpuprof/examples/c-source-acme/acme.c",
        "share/xpuprof/examples/c-sink-csv/Makefile",
        "share/xpuprof/examples/c-agent-acme/acme_agent.c",
        "share/xpuprof/examples/rust-source-acme-agent/Cargo.toml",
        "share/xpuprof/examples/rust-source-acme-agent/src/decode.rs",
        "share/xpuprof/sdk/wire/Cargo.toml",
        "share/xpuprof/sdk/wire/src/stream.rs",
        "share/xpuprof/plugin-tutorial.md",
        "share/xpuprof/agent-stream.md",
        "share/xpuprof/stability.md",
    ] {
        assert!(prefix.join(f).is_file(), "{f} is not installed");
    }
    let sdk_toml = std::fs::read_to_string(share.join("sdk/Cargo.toml")).unwrap();
    let inherits =
        sdk_toml.lines().any(|l| !l.trim_start().starts_with('#') && l.contains("workspace = true"));
    assert!(!inherits, "the installed SDK needs xpuprof's workspace:\n{sdk_toml}");
    let wire_toml = std::fs::read_to_string(share.join("sdk/wire/Cargo.toml")).unwrap();
    let inherits =
        wire_toml.lines().any(|l| !l.trim_start().starts_with('#') && l.contains("workspace = true"));
    assert!(!inherits, "the installed agent stream crate needs xpuprof's workspace:\n{wire_toml}");
    let pc = |args: &[&str]| {
        sh(Command::new("pkg-config")
            .args(args)
            .arg("xpuprof")
            .env("PKG_CONFIG_PATH", prefix.join("lib/pkgconfig")))
    };
    let include = pc(&["--variable=includedir"]);
    assert!(Path::new(include.trim()).canonicalize().unwrap() == prefix.join("include"), "{include}");
    let libs = pc(&["--libs"]);
    assert!(libs.contains("-lxpuprof_agent"), "{libs}");

    let dir = prefix.join("../c-plugin");
    let xpuprof = prefix.join("bin/xpuprof");
    sh(Command::new(&xpuprof)
        .args(["new-plugin", "--kind", "sink", "--lang", "c", "--dir"])
        .arg(&dir)
        .arg("c-snk"));
    let makefile = std::fs::read_to_string(dir.join("Makefile")).unwrap();
    let pc_file = prefix.join("lib/pkgconfig/xpuprof.pc");
    assert!(makefile.contains(&format!("pkg-config --cflags {}", pc_file.display())), "{makefile}");
    assert!(makefile.contains(&format!("XPUPROF ?= {}", xpuprof.display())), "{makefile}");
    let out = sh(Command::new("make").arg("-s").arg("-C").arg(&dir).arg("check"));
    assert!(out.contains("passes the conformance check"), "{out}");
}
