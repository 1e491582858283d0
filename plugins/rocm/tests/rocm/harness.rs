//! Builds the host, the plugins, the agent, the test doubles (rocprofiler-sdk, roctracer, the
//! fake HIP runtime) and the C workloads once, and runs `xpuprof --source rocm` on a workload.
//! Missing prerequisites (a C compiler) fail with the fix: these tests must not pass by skipping.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

const PACKAGES: &[&str] = &[
    "xpuprof-core",
    "xpuprof-plugin-rocm",
    "xpuprof-rocm-agent",
    "xpuprof-plugin-folded",
    "xpuprof-plugin-chrome",
    "xpuprof-plugin-summary",
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

/// `target/<profile>/`.
pub fn target_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("test binary path");
    exe.parent().and_then(Path::parent).expect("target/<profile>/deps").to_owned()
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
        let doubles = repo().join("tests/rocm/doubles");
        let workloads = repo().join("tests/rocm/workloads");
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
    let w = repo().join("tests/rocm/workloads");
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
#[derive(Debug)]
pub struct Run {
    /// xpuprof's stderr.
    pub stderr: String,
    /// The output folder.
    pub out: PathBuf,
}

impl Drop for Run {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.out);
    }
}

impl Run {
    /// An output file's text.
    pub fn file(&self, name: &str) -> String {
        std::fs::read_to_string(self.out.join(name))
            .unwrap_or_else(|e| panic!("read {name}: {e}\n{}", self.stderr))
    }

    /// The folded profile's lines, sorted.
    pub fn folded(&self) -> Vec<String> {
        let mut l: Vec<String> = self.file("profile.folded").lines().map(str::to_owned).collect();
        l.sort();
        l
    }

    /// The Chrome trace's events.
    pub fn chrome(&self) -> Vec<serde_json::Value> {
        let v: serde_json::Value =
            serde_json::from_str(&self.file("trace.json")).expect("trace.json is JSON");
        let events = if v.is_array() { v } else { v["traceEvents"].clone() };
        events.as_array().expect("an event array").clone()
    }

    /// `summary.json`.
    pub fn summary(&self) -> serde_json::Value {
        serde_json::from_str(&self.file("summary.json")).expect("summary.json")
    }
}

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
    Run { stderr, out }
}

/// Runs `xpuprof --source rocm --sink folded,chrome,summary -- app <mode>` on `lib`'s doubles.
pub fn run(tag: &str, lib: Lib, mode: &str, env: &[(&str, &str)]) -> Run {
    xpuprof(tag, &["--source", "rocm", "--sink", "folded,chrome,summary"], &app(lib), &[mode], env)
}

/// Device operations of the Chrome trace as sorted `cat name dur=µs bytes=` lines (the timeless
/// part of the trace, compared with a golden file), durations rounded to 0.1 µs.
pub fn device_lines(events: &[serde_json::Value]) -> String {
    let mut l: Vec<String> = events
        .iter()
        .filter(|e| e["ph"] == "X" && e["cat"] != "api")
        .map(|e| {
            let dur = e["dur"].as_f64().unwrap_or(-1.0);
            format!("{} {} dur={dur:.1} bytes={}", e["cat"], e["name"], e["args"]["bytes"])
        })
        .collect();
    l.sort();
    l.join("\n") + "\n"
}
