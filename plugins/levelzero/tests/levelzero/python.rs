//! Python frames in launch stacks: Debian's CPython 3.11 calls Level Zero through ctypes
//! (`launch.py` -> `libpylaunch.so`), and every kernel sits under the Python functions and the
//! exact lines that launched it, in place of the interpreter's eval-loop frames.

use std::path::Path;

use crate::harness::{run_program, sources, target_dir};

const SCRIPT: &str = "kernel.k_small=20000;kernel.k_big=50000";
const PYTHON: &str = "/usr/bin/python3.11";

fn launch(tag: &str, flags: &[&str]) -> crate::harness::Run {
    assert!(Path::new(PYTHON).exists(), "{PYTHON} is missing: run scripts/install-deps.sh");
    let script = sources().join("launch.py");
    let lib = target_dir().join("levelzero-workloads/libpylaunch.so");
    let args = [script.to_str().unwrap(), lib.to_str().unwrap()];
    run_program(tag, SCRIPT, Path::new(PYTHON), &args, flags)
}

/// The folded lines of one kernel, with their counts.
fn lines_of<'a>(folded: &'a [String], kernel: &str) -> Vec<&'a str> {
    folded.iter().filter(|l| l.contains(kernel)).map(String::as_str).collect()
}

#[test]
fn launch_stacks_show_the_python_functions_and_lines_that_launched() {
    let r = launch("python", &["-v"]);
    let folded = r.folded();
    let py = sources().join("launch.py").display().to_string();
    let module = format!("<module> ({py}:26);step ({py}:");
    for (kernel, caller, line) in [("k_small", "small", 11), ("k_big", "big", 15)] {
        let lines = lines_of(&folded, &format!("[GPU_Kernel]{kernel}"));
        assert_eq!(lines.len(), 1, "one stack per kernel: {folded:#?}");
        let l = lines[0];
        assert!(l.contains(&module), "{kernel} not under <module> -> step: {l}");
        let frame = format!(";{caller} ({py}:{line});");
        assert!(l.contains(&frame), "{kernel} not under {frame}: {l}");
        let after = &l[l.find(&frame).unwrap()..];
        assert!(
            after.contains("zeCommandListAppendLaunchKernel"),
            "the launch call is below the Python frame: {l}"
        );
        assert!(!l.contains("_PyEval_EvalFrameDefault"), "eval-loop frames are replaced: {l}");
    }
    // Proportions: 6 k_small launches of 20 µs, 2 k_big of 50 µs (folded values in µs).
    let value = |k: &str| -> u64 { lines_of(&folded, k)[0].rsplit(' ').next().unwrap().parse().unwrap() };
    assert_eq!((value("k_small"), value("k_big")), (120, 100), "{folded:#?}");
    assert!(r.stderr.contains("python frames on 8 of 8 launch stacks"), "{}", r.stderr);
    // Each launch's run of Python frames (one eval-loop call) was placed by its marker on the C
    // stack: none by the eval loop's symbol.
    assert!(!r.stderr.contains("placed by the eval loop's symbol"), "{}", r.stderr);
}

#[test]
fn python_off_leaves_native_stacks() {
    let config =
        std::env::temp_dir().join(format!("xpuprof-levelzero-python-off-{}.toml", std::process::id()));
    std::fs::write(&config, "[source.levelzero]\npython = \"off\"\n").unwrap();
    let r = launch("python-off", &["-v", "-c", config.to_str().unwrap()]);
    let _ = std::fs::remove_file(&config);
    let folded = r.folded();
    let l = lines_of(&folded, "[GPU_Kernel]k_small");
    assert!(!l.is_empty() && !l[0].contains("launch.py"), "{folded:#?}");
    assert!(!r.stderr.contains("python frames on"), "{}", r.stderr);
}

#[test]
fn autograd_engine_launches_sit_under_the_python_stack_of_the_backward_call() {
    let script = sources().join("autograd.py");
    let lib = target_dir().join("levelzero-workloads/libpylaunch.so");
    let args = [script.to_str().unwrap(), lib.to_str().unwrap()];
    let r = run_program("python-autograd", SCRIPT_AUTOGRAD, Path::new(PYTHON), &args, &["-v"]);
    let folded = r.folded();
    let py = script.display().to_string();
    let engine = lines_of(&folded, "[GPU_Kernel]k_engine");
    assert_eq!(engine.len(), 1, "{folded:#?}");
    let want = format!(
        "<module> ({py}:23);train ({py}:18);_engine_run_backward ({py}:14);[autograd engine thread, running the backward() above];"
    );
    assert!(
        engine[0].starts_with(&want),
        "k_engine not under the waiting thread's Python stack: {}",
        engine[0]
    );
    assert!(
        engine[0].contains("native_thread;pylaunch_launch;"),
        "the engine thread's own frames follow: {}",
        engine[0]
    );
    let other = lines_of(&folded, "[GPU_Kernel]k_other");
    assert!(
        other.len() == 1 && !other[0].contains(".py:"),
        "another native thread gets no Python frames: {other:?}"
    );
    assert!(
        r.stderr.contains(
            "autograd engine threads: 1 of 1 launches under the Python stack of the backward() they ran for"
        ),
        "{}",
        r.stderr
    );
}

const SCRIPT_AUTOGRAD: &str = "kernel.k_engine=20000;kernel.k_other=10000";
