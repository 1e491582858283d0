//! Builds the host, the plugins, the agent, the test doubles (rocprofiler-sdk, roctracer, the
//! fake HIP runtime) and the C workloads once, and runs `xpuprof --source rocm` on a workload.
//! Missing prerequisites (a C compiler) fail with the fix: these tests must not pass by skipping.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use xpuprof_testkit::host::target_dir;
use xpuprof_testkit::outputs::Outputs;

const PACKAGES: &[&str] = &[
    "xpuprof-core",
    "xpuprof-plugin-rocm",
    "xpuprof-rocm-agent",
    "xpuprof-plugin-folded",
    "xpuprof-plugin-chrome",
    "xpuprof-plugin-summary",
    "xpuprof-plugin-ebpf",
];

/// Which tracing-library test double the fake HIP runtime is built against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lib {
    /// rocprofiler-sdk 1.x (the agent's `rocprofiler_configure` path).
    Sdk,
    /// roctracer 4.1 (the agent's `OnLoad` path).
    Roctracer,
}

impl Lib {
    fn dir(self) -> &'static str {
        match self {
            Lib::Sdk => "sdk",
            Lib::Roctracer => "roctracer",
        }
    }
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn cc(args: &[&str], what: &str) {
    let o = Command::new("cc")
        .args(args)
        .output()
        .expect("run cc: install a C compiler (scripts/install-deps.sh)");
    assert!(o.status.success(), "failed to compile {what}: {}", String::from_utf8_lossy(&o.stderr));
}

/// Builds everything once; the folder holding the test doubles and workloads.
fn prepare() -> &'static PathBuf {
    static READY: OnceLock<PathBuf> = OnceLock::new();
    READY.get_or_init(|| {
        let mut cmd = Command::new(option_env!("CARGO").unwrap_or("cargo"));
        cmd.arg("build").current_dir(repo());
        PACKAGES.iter().for_each(|p| {
            cmd.args(["-p", p]);
        });
        let o = cmd.output().expect("run cargo build");
        assert!(o.status.success(), "cargo build failed:\n{}", String::from_utf8_lossy(&o.stderr));
        let out = target_dir().join("rocm-test-doubles");
        let doubles = repo().join("plugins/rocm/tests/doubles");
        let workloads = repo().join("plugins/rocm/tests/workloads");
        let s = |p: &Path| p.display().to_string();
        let common = ["-O1", "-g", "-fno-omit-frame-pointer", "-fno-inline", "-Wall", "-Werror"];
        for (lib, double, soname, hip, flag, include) in [
            (
                Lib::Sdk,
                "rocprofiler_sdk_double.c",
                "librocprofiler-sdk.so.1",
                "libamdhip64.so.6",
                "-DXPT_SDK",
                "plugins/rocm/rocprofiler-sdk-sys/include",
            ),
            (
                Lib::Roctracer,
                "roctracer_double.c",
                "libroctracer64.so.4",
                "libamdhip64.so.5",
                "-DXPT_ROCTRACER",
                "plugins/rocm/roctracer-sys/include",
            ),
        ] {
            let d = out.join(lib.dir());
            std::fs::create_dir_all(&d).expect("create the test-double folder");
            let inc = repo().join(include);
            let mut a: Vec<String> = common.iter().map(|s| s.to_string()).collect();
            a.extend(["-shared", "-fPIC", "-I"].map(String::from));
            a.push(s(&inc));
            a.push(s(&doubles.join(double)));
            a.extend([
                "-o".into(),
                s(&d.join(soname)),
                format!("-Wl,-soname,{soname}"),
                "-ldl".into(),
                "-lpthread".into(),
            ]);
            cc(&a.iter().map(String::as_str).collect::<Vec<_>>(), double);
            let mut a: Vec<String> = common.iter().map(|s| s.to_string()).collect();
            a.extend(["-shared", "-fPIC", flag].map(String::from));
            a.push(s(&doubles.join("fake_hip.c")));
            a.extend([
                "-o".into(),
                s(&d.join(hip)),
                format!("-Wl,-soname,{hip}"),
                format!("-L{}", s(&d)),
                format!("-l:{soname}"),
                "-Wl,-rpath,$ORIGIN".into(),
                "-ldl".into(),
                "-lpthread".into(),
            ]);
            cc(&a.iter().map(String::as_str).collect::<Vec<_>>(), "fake_hip.c");
            let _ = std::fs::remove_file(d.join("libamdhip64.so"));
            std::os::unix::fs::symlink(hip, d.join("libamdhip64.so")).expect("link libamdhip64.so");
            let mut a: Vec<String> = common.iter().map(|s| s.to_string()).collect();
            a.extend([
                "-I".into(),
                s(&workloads),
                s(&workloads.join("app.c")),
                "-o".into(),
                s(&d.join("app")),
            ]);
            a.extend([
                format!("-L{}", s(&d)),
                "-lamdhip64".into(),
                "-Wl,-rpath,$ORIGIN".into(),
                "-lpthread".into(),
            ]);
            cc(&a.iter().map(String::as_str).collect::<Vec<_>>(), "app.c");
        }
        out
    })
}

/// The workload `app` built against `lib`'s test doubles.
pub fn app(lib: Lib) -> PathBuf {
    prepare().join(lib.dir()).join("app")
}

/// The probe workload, linked against Debian's real libamdhip64.
pub fn probe() -> PathBuf {
    let out = prepare().join("probe");
    let w = repo().join("plugins/rocm/tests/workloads");
    let o = Command::new("cc")
        .args(["-O1", "-g", "-fno-omit-frame-pointer", "-fno-inline", "-Wall", "-Werror", "-I"])
        .arg(&w)
        .arg(w.join("probe.c"))
        .arg("-o")
        .arg(&out)
        .arg("-lamdhip64")
        .output()
        .expect("run cc");
    assert!(
        o.status.success(),
        "failed to link probe.c against the real HIP runtime: {}\nhint: scripts/install-deps.sh installs libamdhip64-dev",
        String::from_utf8_lossy(&o.stderr)
    );
    out
}

/// What one profiled run left.
pub type Run = Outputs;

/// Runs `xpuprof <args> -- <program> <program_args>` with `env` set, and asserts it succeeded.
pub fn xpuprof(tag: &str, args: &[&str], program: &Path, program_args: &[&str], env: &[(&str, &str)]) -> Run {
    let dir = target_dir();
    let out = std::env::temp_dir().join(format!("xpuprof-rocm-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    let mut cmd = Command::new(dir.join("xpuprof"));
    cmd.arg("--plugin-dir")
        .arg(&dir)
        .args(args)
        .arg("-o")
        .arg(&out)
        .arg("--")
        .arg(program)
        .args(program_args);
    cmd.env_remove("XPUPROF_PLUGIN_PATH").env_remove("ROCP_TOOL_LIBRARIES").env_remove("HSA_TOOLS_LIB");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let o = cmd.output().expect("run xpuprof");
    let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(o.status.success(), "xpuprof on {} failed ({}):\n{stderr}", program.display(), o.status);
    Outputs { stderr, out }
}

/// Runs `xpuprof --source rocm --sink folded,chrome,summary -- app <mode>` on `lib`'s doubles.
pub fn run(tag: &str, lib: Lib, mode: &str, env: &[(&str, &str)]) -> Run {
    xpuprof(tag, &["--source", "rocm", "--sink", "folded,chrome,summary"], &app(lib), &[mode], env)
}
