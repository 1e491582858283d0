//! Builds the host, the plugins, the agent, the test-double driver and the C workloads once,
//! and runs `xpuprof --source levelzero` on a workload. Missing prerequisites (a C compiler,
//! `libze-dev`) fail with the fix: these tests must not pass by skipping.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

const PACKAGES: &[&str] = &[
    "xpuprof-core",
    "xpuprof-plugin-levelzero",
    "xpuprof-levelzero-agent",
    "xpuprof-test-double-ze-driver",
    "xpuprof-plugin-folded",
    "xpuprof-plugin-chrome",
    "xpuprof-plugin-summary",
];

const WORKLOADS: &[&str] = &["immediate", "regular", "dlopen", "threads", "child", "with_args"];

/// `target/<profile>/`.
pub fn target_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("test binary path");
    exe.parent().and_then(Path::parent).expect("target/<profile>/deps").to_owned()
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Builds everything once; the folder holding the compiled workloads.
fn prepare() -> &'static PathBuf {
    static READY: OnceLock<PathBuf> = OnceLock::new();
    READY.get_or_init(|| {
        let mut cmd = Command::new(option_env!("CARGO").unwrap_or("cargo"));
        cmd.arg("build").current_dir(repo());
        if target_dir().ends_with("release") {
            cmd.arg("--release");
        }
        PACKAGES.iter().for_each(|p| {
            cmd.args(["-p", p]);
        });
        let o = cmd.output().expect("run cargo build");
        assert!(o.status.success(), "cargo build failed:\n{}", String::from_utf8_lossy(&o.stderr));
        let out = target_dir().join("levelzero-workloads");
        std::fs::create_dir_all(&out).expect("create the workloads folder");
        let src = repo().join("plugins/levelzero/tests/workloads");
        for w in WORKLOADS {
            let o = Command::new("cc")
                .args(["-O1", "-g", "-fno-omit-frame-pointer", "-fno-inline", "-Wall", "-Werror", "-I"])
                .arg(&src)
                .arg(src.join(format!("{w}.c")))
                .arg("-o")
                .arg(out.join(w))
                .args(["-lze_loader", "-lpthread", "-ldl"])
                .output()
                .expect("run cc: install a C compiler (scripts/install-deps.sh)");
            assert!(
                o.status.success(),
                "failed to compile {w}.c: {}\nhint: scripts/install-deps.sh installs libze-dev (the Level Zero headers and loader)",
                String::from_utf8_lossy(&o.stderr)
            );
        }
        let o = Command::new("cc")
            .args(["-O1", "-g", "-fno-omit-frame-pointer", "-fno-inline", "-Wall", "-Werror", "-shared", "-fPIC", "-I"])
            .arg(&src)
            .arg(src.join("pylaunch.c"))
            .arg("-o")
            .arg(out.join("libpylaunch.so"))
            .arg("-lze_loader")
            .output()
            .expect("run cc");
        assert!(o.status.success(), "failed to compile pylaunch.c: {}", String::from_utf8_lossy(&o.stderr));
        out
    })
}

/// The folder of the workload sources.
pub fn sources() -> PathBuf {
    repo().join("plugins/levelzero/tests/workloads")
}

/// The path of a compiled workload.
pub fn workload(name: &str) -> PathBuf {
    prepare().join(name)
}

/// What one profiled run left (the testkit's reader of an output folder).
pub use xpuprof_testkit::outputs::{device_lines, Outputs as Run};

/// Runs `xpuprof --source levelzero --sink folded,chrome,summary -- <workload> args` with the
/// test-double driver scripted by `script`.
pub fn run(tag: &str, script: &str, workload_name: &str, args: &[&str]) -> Run {
    run_program(tag, script, &workload(workload_name), args, &[])
}

/// Runs `xpuprof <flags> --source levelzero --sink folded,chrome,summary -- <exe> args` with the
/// test-double driver scripted by `script`.
pub fn run_program(tag: &str, script: &str, exe: &Path, args: &[&str], flags: &[&str]) -> Run {
    prepare();
    let workload_name = exe.display();
    let dir = target_dir();
    let out = std::env::temp_dir().join(format!("xpuprof-levelzero-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    let o = Command::new(dir.join("xpuprof"))
        .args(flags)
        .arg("--plugin-dir")
        .arg(&dir)
        .args(["--source", "levelzero", "--sink", "folded,chrome,summary", "-o"])
        .arg(&out)
        .arg("--")
        .arg(exe)
        .args(args)
        .env_remove("XPUPROF_PLUGIN_PATH")
        .env("ZE_ENABLE_ALT_DRIVERS", dir.join("libxpuprof_test_double_ze_driver.so"))
        .env("XPUPROF_TEST_ZE_DRIVER", script)
        .output()
        .expect("run xpuprof");
    let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(o.status.success(), "xpuprof on {workload_name} failed ({}):\n{stderr}", o.status);
    Run { stderr, out }
}
