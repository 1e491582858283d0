//! Python frames in CPU samples: a pure-Python workload with known call paths in known
//! proportions (`tests/workloads/python/calls.py`) under CPython 3.11 (Debian's, which CI
//! installs), on-CPU and off-CPU; threads and processes that run no Python keep native frames.

use std::path::PathBuf;

use xpuprof_sdk::model::{Record, SampleKind};

use crate::common::{profile, root_or_skip, workload, Session};

/// The interpreter the tests run (CI installs it with scripts/install-deps.sh).
const PYTHON: &str = "/usr/bin/python3.11";

/// The absolute path of tests/workloads/python/`name` (as its code objects' file name will read).
fn workload_py(name: &str) -> String {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/workloads/python").join(name);
    p.canonicalize()
        .unwrap_or_else(|e| panic!("tests/workloads/python/{name}: {e}"))
        .to_string_lossy()
        .into_owned()
}

/// calls.py's absolute path.
fn calls_py() -> String {
    workload_py("calls.py")
}

/// `function (calls.py:LINE)` of the line marked `# CALL <callee>` in calls.py, in `function`.
fn call(function: &str, callee: &str) -> String {
    call_in(&calls_py(), function, callee)
}

/// `function (PATH:LINE)` of the line marked `# CALL <callee>` in the file at `path`.
fn call_in(path: &str, function: &str, callee: &str) -> String {
    let text = std::fs::read_to_string(path).unwrap();
    let marker = format!("# CALL {callee}");
    let line =
        text.lines().position(|l| l.trim_end().ends_with(&marker)).expect("marker in the workload") + 1;
    format!("{function} ({path}:{line})")
}

/// The Python path from the module's code down to `leaf`'s frame (its line left open).
fn path_to(via: &str, leaf: &str) -> String {
    [
        call("<module>", "main"),
        call("main", "cpu"),
        call("cpu", via),
        call(via, leaf),
        format!("{leaf} ({}:", calls_py()),
    ]
    .join(";")
}

fn python_or_fail() -> bool {
    assert!(std::path::Path::new(PYTHON).exists(), "{PYTHON} is missing: run scripts/install-deps.sh");
    true
}

/// Weight of the folded lines that contain `needle`.
fn weight(folded: &std::collections::HashMap<String, u64>, needle: &str) -> u64 {
    folded.iter().filter(|(l, _)| l.contains(needle)).map(|(_, w)| w).sum()
}

#[test]
fn python_samples_show_the_full_python_paths_in_their_ratio() {
    if !root_or_skip("python_samples_show_the_full_python_paths_in_their_ratio") || !python_or_fail() {
        return;
    }
    // About 2 s of CPU in 8 rounds of long calls (tens of ms: no aliasing with the period).
    let (records, status) = profile("sample_hz = 499", &[PYTHON, &calls_py(), "cpu", "8", "400000"]);
    assert!(status.success());
    let s = Session::new(records.clone());
    let folded = s.folded(SampleKind::OnCpu);
    let (a, b) = (path_to("outer_a", "hot_three"), path_to("outer_b", "hot_one"));
    // Each Python frame carries its function's first line (the code object's `co_firstlineno`).
    let source = std::fs::read_to_string(calls_py()).unwrap();
    for f in ["hot_three", "outer_a", "cpu"] {
        let def = source.lines().position(|l| l.starts_with(&format!("def {f}("))).unwrap() as u32 + 1;
        let starts: Vec<u32> = records
            .iter()
            .filter_map(|r| match r {
                Record::Frame(d) if s.string(d.name).starts_with(&format!("{f} (")) => Some(d.start_line),
                _ => None,
            })
            .collect();
        assert!(
            !starts.is_empty() && starts.iter().all(|&l| l == def),
            "{f} starts at line {def}: {starts:?}"
        );
    }
    let (three, one) = (weight(&folded, &a), weight(&folded, &b));
    let show = || {
        let mut v: Vec<_> = folded.iter().collect();
        v.sort_by(|x, y| y.1.cmp(x.1));
        v.iter().take(12).map(|(l, w)| format!("{w} {l}")).collect::<Vec<_>>().join("\n")
    };
    assert!(one > 0 && three > 0, "no sample under\n{a}\nor\n{b}\nin:\n{}", show());
    let ratio = three as f64 / one as f64;
    assert!((2.4..=3.6).contains(&ratio), "hot_three:hot_one = {ratio:.2}, expected 3 +-20%:\n{}", show());
    // Rooted at the interpreter's own start: _start ... Py_BytesMain ... then the Python frames where
    // the eval loop ran them (no _PyEval_EvalFrameDefault left between them).
    let total: u64 = folded.values().sum();
    let rooted: u64 = folded
        .iter()
        .filter(|(l, _)| l.contains(&a) || l.contains(&b))
        .filter(|(l, _)| l.starts_with("_start;__libc_start_main") && l.contains(";Py_BytesMain;"))
        .map(|(_, w)| w)
        .sum();
    eprintln!("hot_three:hot_one = {ratio:.2}; top stacks:\n{}", show());
    // A sample whose user stack BPF could not copy (counted as a loss) keeps its Python frames at
    // the outer end, unrooted: a few may happen on a busy machine.
    assert!(
        rooted as f64 >= 0.97 * (three + one) as f64,
        "{rooted} of {} ns of the two paths rooted at _start:\n{}",
        three + one,
        show()
    );
    assert!(
        (three + one) as f64 >= 0.9 * total as f64,
        "{} of {total} ns under the two paths:\n{}",
        three + one,
        show()
    );
    let eval_between = folded.keys().filter(|l| l.contains(&a)).any(|l| {
        let py = l.find("<module>").unwrap();
        l[py..].split(';').take(4).any(|f| f == "_PyEval_EvalFrameDefault")
    });
    assert!(!eval_between, "an eval-loop frame was left between Python frames:\n{}", show());
}

#[test]
fn python_offcpu_time_sits_under_the_function_that_slept() {
    if !root_or_skip("python_offcpu_time_sits_under_the_function_that_slept") || !python_or_fail() {
        return;
    }
    let cfg = "offcpu = true\noffcpu_min_us = 5000\nsample_hz = 0";
    let (records, status) = profile(cfg, &[PYTHON, &calls_py(), "sleep", "20"]);
    assert!(status.success());
    let s = Session::new(records);
    let folded = s.folded(SampleKind::OffCpu);
    let path =
        [call("main", "wait_outer"), call("wait_outer", "sleeper"), call("sleeper", "sleep")].join(";");
    // 20 sleeps of 20 ms.
    let ms = weight(&folded, &path) as f64 / 1e6;
    assert!(
        (360.0..=600.0).contains(&ms),
        "{ms:.1} ms off-CPU under\n{path}\nexpected about 400 in:\n{folded:#?}"
    );
}

#[test]
fn threads_and_processes_without_python_keep_their_native_frames() {
    if !root_or_skip("threads_and_processes_without_python_keep_their_native_frames") || !python_or_fail() {
        return;
    }
    std::env::set_var("NATIVE_THREAD_LIB", workload("libnativethread.so"));
    let burn = workload("burn");
    let argv = [PYTHON, &calls_py(), "mixed", "4", "200000", &burn, "0.5"];
    let (records, status) = profile("sample_hz = 499", &argv);
    assert!(status.success());
    let s = Session::new(records);
    let folded = s.folded(SampleKind::OnCpu);
    let py_frame = |l: &str| l.contains(".py:");
    let native = |f: &str| -> (u64, u64) {
        let lines = folded.iter().filter(|(l, _)| l.split(';').any(|x| x == f));
        lines.fold((0, 0), |(all, py), (l, w)| (all + w, py + if py_frame(l) { *w } else { 0 }))
    };
    // The C thread (no Python thread state) and the child process (no CPython mapped).
    for (f, root) in [("native_spin", "start_thread"), ("burn_three", "_start")] {
        let (all, py) = native(f);
        assert!(all > 0, "no sample in {f}: {folded:#?}");
        assert_eq!(py, 0, "{f}: Python frames on a thread that runs no Python: {folded:#?}");
        let rooted = folded.iter().filter(|(l, _)| l.split(';').any(|x| x == f) && l.contains(root));
        assert!(
            rooted.map(|(_, w)| w).sum::<u64>() as f64 >= 0.9 * all as f64,
            "{f} not under {root}: {folded:#?}"
        );
    }
    // Meanwhile the main thread's samples have their Python frames.
    let path = [call("main", "cpu-mixed"), call("cpu", "outer_a"), call("outer_a", "hot_three")].join(";");
    assert!(weight(&folded, &path) > 0, "no Python path: {folded:#?}");
}

#[test]
fn python_off_leaves_the_interpreter_frames_native() {
    if !root_or_skip("python_off_leaves_the_interpreter_frames_native") || !python_or_fail() {
        return;
    }
    let (records, status) =
        profile("sample_hz = 499\npython = \"off\"", &[PYTHON, &calls_py(), "cpu", "2", "200000"]);
    assert!(status.success());
    let s = Session::new(records);
    let folded = s.folded(SampleKind::OnCpu);
    assert!(!folded.keys().any(|l| l.contains(".py:")), "Python frames with python = \"off\": {folded:#?}");
    assert!(s.weight_with(SampleKind::OnCpu, "_PyEval_EvalFrameDefault") > 0, "{folded:#?}");
}

#[test]
fn xpuprof_folded_shows_python_paths_of_a_child_started_by_a_shell() {
    if !root_or_skip("xpuprof_folded_shows_python_paths_of_a_child_started_by_a_shell") || !python_or_fail() {
        return;
    }
    let Some(bin) = crate::e2e::xpuprof() else { return };
    let out = tempfile::tempdir().unwrap();
    let cfg = out.path().join("xpuprof.toml");
    std::fs::write(&cfg, "[source.ebpf]\nsample_hz = 499\n").unwrap();
    // The interpreter is a child of the shell, found when it execs.
    let cmd = format!("{PYTHON} {} cpu 4 400000; true", calls_py());
    let run = std::process::Command::new(&bin)
        .args(["-v", "--source", "ebpf", "--sink", "folded", "-c"])
        .arg(&cfg)
        .arg("-o")
        .arg(out.path())
        .args(["--", "/bin/sh", "-c", &cmd])
        .output()
        .expect("run xpuprof");
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success(), "stderr:\n{stderr}");
    let folded = std::fs::read_to_string(out.path().join("profile.folded")).expect("profile.folded");
    let path = |via, leaf| {
        let w: u64 = folded
            .lines()
            .filter(|l| l.contains(&path_to(via, leaf)))
            .filter_map(|l| l.rsplit_once(' ')?.1.parse::<u64>().ok())
            .sum();
        w
    };
    let (three, one) = (path("outer_a", "hot_three"), path("outer_b", "hot_one"));
    assert!(one > 0, "no hot_one path in:\n{folded}");
    let ratio = three as f64 / one as f64;
    assert!((2.4..=3.6).contains(&ratio), "hot_three:hot_one = {ratio:.2} in:\n{folded}");
    // The session says how many stacks had Python frames.
    let line = stderr.lines().find(|l| l.contains("python frames on")).unwrap_or_default();
    let with: u64 =
        line.split("python frames on ").nth(1).and_then(|r| r.split(' ').next()?.parse().ok()).unwrap_or(0);
    assert!(with > 0, "no count of Python stacks in stderr:\n{stderr}");
}

/// The launch stacks of `calls.py launch 5 [extra]` under a `testLaunchKernel` probe.
fn python_launch_stacks(extra: &[&str]) -> Vec<String> {
    std::env::set_var("LAUNCH_LIB", workload("liblaunchtest.so"));
    let cfg = "sample_hz = 0\nlaunch_probes = [\"testLaunchKernel\"]";
    let script = calls_py();
    let argv: Vec<&str> = [PYTHON, &script, "launch", "5"].into_iter().chain(extra.iter().copied()).collect();
    let (records, status) = profile(cfg, &argv);
    assert!(status.success());
    let s = Session::new(records);
    let stacks: Vec<String> = s.launch_sites().iter().map(|l| s.names(l.stack).join(";")).collect();
    assert_eq!(stacks.len(), 5, "one launch stack per call: {stacks:#?}");
    for l in &stacks {
        assert!(l.starts_with("_start;") && l.ends_with(";testLaunchKernel"), "{l}");
        assert!(!l.contains("_PyEval_EvalFrameDefault"), "an eval-loop frame left in {l}");
    }
    stacks
}

/// `<module>;main;launcher` with the lines of their calls.
fn launch_path() -> String {
    [call("<module>", "main"), call("main", "launcher"), call("launcher", "testLaunchKernel")].join(";")
}

#[test]
fn launch_stacks_from_python_carry_the_python_frames_of_the_call() {
    if !root_or_skip("launch_stacks_from_python_carry_the_python_frames_of_the_call") || !python_or_fail() {
        return;
    }
    let path = launch_path();
    for l in python_launch_stacks(&[]) {
        assert!(l.contains(&path), "launch stack without\n{path}\n: {l}");
    }
}

#[test]
fn python_frames_of_a_process_gone_before_they_were_read_keep_their_place() {
    if !root_or_skip("python_frames_of_a_process_gone_before_they_were_read_keep_their_place")
        || !python_or_fail()
    {
        return;
    }
    // The process exits right after its last launch: the host may read its code objects too
    // late, after the process is gone or while the interpreter's shutdown frees them. Each
    // Python frame is then still in its place, named or unnamed — never dropped with the eval
    // frame, never named after what took its code object's place.
    let want = [call("<module>", "main"), call("main", "launcher"), call("launcher", "testLaunchKernel")];
    let unnamed = [
        "[python frame: the process exited before it was read]",
        "[python frame: its code was freed before it was read]",
    ];
    for l in python_launch_stacks(&["exit"]) {
        let frames: Vec<&str> = l.split(';').collect();
        let Some(at) = frames.iter().position(|f| *f == want[0] || unnamed.contains(f)) else {
            panic!("no Python frame in {l}");
        };
        let py = &frames[at..(at + 3).min(frames.len())];
        assert!(
            py.len() == 3 && py.iter().zip(&want).all(|(f, w)| f == w || unnamed.contains(f)),
            "the three Python frames, named or unnamed, not in their place in {l}"
        );
    }
}

/// Imports nested this deep in `imports.py`.
const DEPTH: usize = 12;

/// The Python frames (outermost first) of a sample in `burn` of `imports.py DEPTH`: the script's
/// own calls down to `importlib.import_module`, then per level the import machinery and the
/// imported module's code, then `leaf` and `burn` (called by `sorted`). Frames of importlib
/// (frozen) are matched by function name, the others with file and line.
fn import_path() -> Vec<String> {
    let script = workload_py("imports.py");
    let mut want = vec![
        call_in(&script, "<module>", "main"),
        call_in(&script, "main", "run"),
        call_in(&script, "run", "import_module"),
        "import_module (".to_owned(),
        "_gcd_import (<frozen importlib._bootstrap>:".to_owned(),
    ];
    for i in 0..DEPTH {
        for f in ["_find_and_load", "_find_and_load_unlocked", "_load_unlocked"] {
            want.push(format!("{f} (<frozen importlib._bootstrap>:"));
        }
        want.push("_LoaderBasics.exec_module (<frozen importlib._bootstrap_external>:".to_owned());
        want.push("_call_with_frames_removed (<frozen importlib._bootstrap>:".to_owned());
        // deep_i.py: line 3 imports the next module; the last one calls leaf on line 4.
        want.push(format!("<module> (/deep_{i}.py:{})", if i + 1 < DEPTH { 3 } else { 4 }));
    }
    want.push(call_in(&script, "leaf", "burn"));
    want.push(format!("burn ({script}:"));
    want
}

/// True when `frame` is the frame `want` describes (a prefix, or `<module> (/deep_N.py:L)`
/// for a module in the workload's temporary directory).
fn is_frame(frame: &str, want: &str) -> bool {
    match want.strip_prefix("<module> (/") {
        Some(tail) => frame.starts_with("<module> (/") && frame.ends_with(&format!("/{tail}")),
        None => frame.starts_with(want),
    }
}

#[test]
fn python_frames_deep_in_nested_imports_sit_in_the_native_frame_of_their_eval_call() {
    if !root_or_skip("python_frames_deep_in_nested_imports_sit_in_the_native_frame_of_their_eval_call")
        || !python_or_fail()
    {
        return;
    }
    // `import torch`'s shape: 12 nested imports, each through builtins.__import__/exec and the
    // frozen importlib (about 6 Python frames a level, 26 eval-loop calls separated by C
    // frames), the CPU time spent under the deepest one, in a function that `sorted` calls.
    let script = workload_py("imports.py");
    let (records, status) =
        profile("sample_hz = 499", &[PYTHON, &script, &DEPTH.to_string(), "60", "200000"]);
    assert!(status.success());
    let s = Session::new(records);
    let folded = s.folded(SampleKind::OnCpu);
    let want = import_path();
    let is_py = |f: &str| f.ends_with(')') && (f.contains(".py:") || f.contains("(<frozen "));
    let (mut burn, mut exact, mut all, mut rooted) = (0, 0, 0, 0);
    let mut wrong = Vec::new();
    for (line, &w) in &folded {
        let frames: Vec<&str> = line.split(';').collect();
        let py: Vec<&str> = frames.iter().copied().filter(|f| is_py(f)).collect();
        if py.is_empty() && frames[0] != "_start" {
            continue; // not the interpreter (the test's own start of the process)
        }
        all += w;
        let root = line.starts_with("_start;") && line.contains(";Py_BytesMain;");
        rooted += w * u64::from(root && py.first().is_some_and(|f| is_frame(f, &want[0])));
        if !py.last().is_some_and(|f| f.starts_with("burn (")) {
            continue;
        }
        burn += w;
        // Every Python frame of the chain, in order, none left over, in a stack rooted at the
        // interpreter's start with no eval-loop frame left.
        let right = root
            && py.len() == want.len()
            && py.iter().zip(&want).all(|(f, w)| is_frame(f, w))
            && !frames.contains(&"_PyEval_EvalFrameDefault");
        if right {
            exact += w;
        } else {
            wrong.push(format!("{w} {line}"));
        }
    }
    wrong.sort();
    let show = || wrong.iter().take(3).cloned().collect::<Vec<_>>().join("\n");
    assert!(burn > 0, "no sample in burn: {folded:#?}");
    // A sample whose user stack BPF could not copy (counted) loses its place: a few on a busy machine.
    assert!(
        exact as f64 >= 0.95 * burn as f64,
        "{exact} of {burn} ns in burn on the exact path; expected (outermost first):\n{}\nwrong ones:\n{}",
        want.join(";"),
        show()
    );
    assert!(rooted as f64 >= 0.9 * all as f64, "{rooted} of {all} ns under the script's <module>, rooted");
}
