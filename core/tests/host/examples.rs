//! The plugin examples under `examples/`, built as an author would and run by the real host:
//! the C source `acme` (a fictitious accelerator) into the C sink `kernel-csv` and the
//! built-in sinks.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::cabi::{compile, repo};
use super::common::*;

/// Builds the C example in `examples/<dir>/<file>` as `libxpuprof_plugin_<name>.so` in `out`,
/// with the flags its Makefile uses.
pub fn build_c_example(dir: &str, file: &str, name: &str, out: &Path) -> PathBuf {
    let lib = out.join(format!("libxpuprof_plugin_{name}.so"));
    let flags = [
        "-std=c99",
        "-Wall",
        "-Wextra",
        "-Werror",
        "-pedantic",
        "-fPIC",
        "-shared",
        "-fvisibility=hidden",
        "-pthread",
    ];
    compile("cc", &flags, &[repo().join("examples").join(dir).join(file)], &lib);
    lib
}

/// Both C examples in a fresh plugin directory.
pub fn c_examples() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    build_c_example("c-source-acme", "acme.c", "acme", dir.path());
    build_c_example("c-sink-csv", "kernel_csv.c", "kernel_csv", dir.path());
    dir
}

fn record(plugins: &Path, args: &[&str]) -> (std::process::Output, tempfile::TempDir) {
    let cwd = tempfile::tempdir().unwrap();
    let o = Command::new(xpuprof())
        .arg("--plugin-dir")
        .arg(plugins)
        .args(args)
        .current_dir(cwd.path())
        .env_remove("XPUPROF_PLUGIN_PATH")
        .output()
        .expect("failed to run xpuprof");
    (o, cwd)
}

#[test]
fn the_c_examples_load_and_run_in_the_host() {
    let plugins = c_examples();
    let (o, cwd) = record(
        plugins.path(),
        &["--source", "acme", "--sink", "kernel-csv,folded", "-o", "out", "--", "true"],
    );
    let err = stderr(&o);
    assert!(o.status.success(), "{err}");
    let csv = std::fs::read_to_string(cwd.path().join("out/kernels.csv")).unwrap();
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(
        lines,
        [
            "kernel,count,total_ns,mean_ns,min_ns,max_ns",
            "\"acme::gemm<float>\",5,600000,120000,120000,120000",
            "\"acme::relu\",3,90000,30000,30000,30000",
        ],
        "{csv}"
    );
    // The launch stacks, joined to the kernels across the device clock, and the copy (folded
    // shows short kernel names).
    let folded = std::fs::read_to_string(cwd.path().join("out/profile.folded")).unwrap();
    for line in [
        "main;train_step;forward;acmeLaunchKernel;[GPU_Kernel]acme::gemm 240",
        "main;train_step;backward;acmeLaunchKernel;[GPU_Kernel]acme::relu 30",
        "[no launch stack];acmeMemcpyAsync;[GPU_Memcpy]HtoD 40",
    ] {
        assert!(folded.lines().any(|l| l == line), "missing `{line}` in:\n{folded}");
    }
    assert!(err.contains("acme trace buffer full: 3"), "the loss is reported: {err}");
    assert!(err.contains("0 unmatched"), "{err}");
}

#[test]
fn a_c_source_brings_its_machine_checks_and_its_backends_name() {
    let plugins = c_examples();
    let (o, _cwd) = record(plugins.path(), &["doctor"]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("[ ok ] acme-npu") && out.contains("simulated Acme NPU"), "{out}");
    assert!(out.lines().any(|l| l.trim_start().starts_with("acme ") && l.contains("ready")), "{out}");
    let args = ["--source", "acme", "--sink", "summary", "-o", "out", "--", "true"];
    let (o, cwd) = record(plugins.path(), &args);
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    let json = std::fs::read_to_string(cwd.path().join("out/summary.json")).unwrap();
    let summary: serde_json::Value = serde_json::from_str(&json).unwrap();
    let by_backend = &summary["xpuprof"]["events_by_backend"];
    assert!(by_backend["acme"].as_u64().is_some_and(|n| n > 0), "{by_backend}");
}

#[test]
fn a_rust_source_of_another_vendor_brings_its_machine_check() {
    let plugins = tempfile::tempdir().unwrap();
    add_rust_examples(plugins.path());
    let (o, _cwd) = record(plugins.path(), &["doctor"]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("[ ok ] fakeacc-device simulated device"), "{out}");
    assert!(out.lines().any(|l| l.trim_start().starts_with("fakeacc ") && l.contains("ready")), "{out}");
}

#[test]
fn c_plugins_are_listed_with_their_schema_and_header() {
    let plugins = c_examples();
    let (o, _cwd) = record(plugins.path(), &["plugins"]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("acme") && out.contains("(C header)"), "{out}");
    assert!(out.contains("file = \"kernels.csv\""), "{out}");
}

#[test]
fn a_c_plugins_config_is_checked_by_the_host_and_read_through_its_getters() {
    let plugins = c_examples();
    let cwd = tempfile::tempdir().unwrap();
    std::fs::write(cwd.path().join("xpuprof.toml"), "[source.acme]\nlaunches = -1\n").unwrap();
    let run = |cwd: &Path| {
        Command::new(xpuprof())
            .arg("--plugin-dir")
            .arg(plugins.path())
            .args(["--source", "acme", "--sink", "kernel-csv", "-o", "out", "--", "true"])
            .current_dir(cwd)
            .env_remove("XPUPROF_PLUGIN_PATH")
            .output()
            .unwrap()
    };
    let o = run(cwd.path());
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("launches"), "{}", stderr(&o));
    std::fs::write(
        cwd.path().join("xpuprof.toml"),
        "[source.acme]\nlaunches = 2\n[sink.kernel-csv]\nfile = \"k.csv\"\n",
    )
    .unwrap();
    let o = run(cwd.path());
    assert!(o.status.success(), "{}", stderr(&o));
    let csv = std::fs::read_to_string(cwd.path().join("out/k.csv")).unwrap();
    assert!(csv.contains("\"acme::relu\",1,") && csv.contains("\"acme::gemm<float>\",1,"), "{csv}");
    // The sink's own error, in its words, stops the session before the target runs.
    std::fs::write(cwd.path().join("xpuprof.toml"), "[sink.kernel-csv]\nfile = \"../k.csv\"\n").unwrap();
    let o = run(cwd.path());
    assert_eq!(o.status.code(), Some(125), "{}", stderr(&o));
    assert!(stderr(&o).contains("invalid `file` ../k.csv"), "{}", stderr(&o));
}

/// The Rust examples (workspace members built as `libxpuprof_example_*.so`), copied into `dir`
/// under the plugin file name rule.
pub fn add_rust_examples(dir: &Path) {
    for name in ["fakeacc", "speedscope"] {
        let built = plugin_dir().join(format!("libxpuprof_example_{name}.so"));
        assert!(built.exists(), "{} is missing: run `cargo build --workspace` first", built.display());
        std::fs::copy(&built, dir.join(format!("libxpuprof_plugin_{name}.so"))).unwrap();
    }
}

#[test]
fn the_rust_examples_run_in_the_host_and_mix_with_the_c_ones() {
    let plugins = c_examples();
    add_rust_examples(plugins.path());
    // Rust source into the C sink and the Rust sink.
    let (o, cwd) = record(
        plugins.path(),
        &["--source", "fakeacc", "--sink", "kernel-csv,speedscope", "-o", "out", "--", "true"],
    );
    let err = stderr(&o);
    assert!(o.status.success(), "{err}");
    let csv = std::fs::read_to_string(cwd.path().join("out/kernels.csv")).unwrap();
    assert!(csv.contains("\"fake::saxpy\",6,"), "{csv}");
    assert!(err.contains("fakeacc ring buffer full: 2"), "{err}");
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(cwd.path().join("out/profile.speedscope.json")).unwrap())
            .unwrap();
    let names: Vec<&str> =
        json["shared"]["frames"].as_array().unwrap().iter().map(|f| f["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["main", "step", "fakeLaunch", "[GPU] fake::saxpy"]);
    assert_eq!(json["profiles"][0]["samples"], serde_json::json!([[0, 1, 2, 3]]));
    // Six kernels of 50 µs each, through the device clock's 3 ns ticks.
    let w = json["profiles"][0]["weights"][0].as_u64().unwrap();
    assert!((299_000..=301_000).contains(&w), "{w}");
    // The C source into the Rust sink.
    let (o, cwd) =
        record(plugins.path(), &["--source", "acme", "--sink", "speedscope", "-o", "out", "--", "true"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = std::fs::read_to_string(cwd.path().join("out/profile.speedscope.json")).unwrap();
    assert!(text.contains("\"[GPU] acme::gemm<float>\"") && text.contains("\"backward\""), "{text}");
}
