//! Attach and capture windows with the cupti source, end to end without a GPU: programs run on a
//! test double of the CUDA driver and CUPTI (`plugins/cupti/tests/doubles/`, built here as `libcuda.so.1`
//! against the real CUPTI headers) with the real agent, injector, host and sinks.
//!
//! - A program started without xpuprof: `xpuprof attach` loads the agent into it, the agent
//!   subscribes late, records a window, detaches CUPTI (`cuptiFinalize`) and stays loaded; a
//!   second attach reuses it. A process without libcuda is refused by name.
//! - `xpuprof record --capture-range cuda-profiler-api | nvtx:step` selects exactly the kernels
//!   launched between the markers (first range, or every one with `repeat`).
//! - `xpuprof record --start-paused` + `xpuprof trigger`: only the triggered window is recorded,
//!   and CUPTI is detached before and after it.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

#[allow(dead_code)]
use xpuprof_testkit::host;

use super::double::build_program;

/// Builds the double and the program on it in `dir`; returns the program.
fn build(dir: &Path) -> PathBuf {
    build_program(dir, "app.c", "app", &["-O1", "-fno-omit-frame-pointer"], &[])
}

/// Runs `xpuprof attach PID --source cupti --sink folded --duration 1s -o OUT`; returns
/// (success, profile.folded, stderr).
fn attach(xpuprof: &Path, pid: u32, out: &Path) -> (bool, String, String) {
    let o = Command::new(xpuprof)
        .arg("attach")
        .arg(pid.to_string())
        .arg("--plugin-dir")
        .arg(host::target_dir())
        .args(["--source", "cupti", "--sink", "folded", "--duration", "1s", "-v", "-o"])
        .arg(out)
        .output()
        .expect("run xpuprof attach");
    let folded = std::fs::read_to_string(out.join("profile.folded")).unwrap_or_default();
    (o.status.success(), folded, String::from_utf8_lossy(&o.stderr).into_owned())
}

/// Runs `xpuprof record --source cupti --sink folded ARGS -- APP MODE` with the double as
/// CUPTI; returns (xpuprof's child, the output directory).
fn record(xpuprof: &Path, dir: &Path, args: &[&str], mode: &str) -> (Child, PathBuf) {
    let out = dir.join(format!("rec-{}", args.join("-").replace([':', '/'], "_")));
    let child = Command::new(xpuprof)
        .arg("record")
        .arg("--plugin-dir")
        .arg(host::target_dir())
        .args(["--source", "cupti", "--sink", "folded", "-o"])
        .arg(&out)
        .args(args)
        .arg("--")
        .arg(dir.join("app"))
        .arg(mode)
        .env("XPUPROF_CUPTI_LIB", dir.join("libcuda.so.1"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run xpuprof record");
    (child, out)
}

fn start(app: &Path, dir: &Path, args: &[&str]) -> Child {
    let mut child = Command::new(app)
        .args(args)
        .env("XPUPROF_CUPTI_LIB", dir.join("libcuda.so.1"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.as_mut().unwrap()).read_line(&mut line).unwrap();
    assert_eq!(line, "ready\n");
    child
}

/// Kernel lines of a folded profile, and how many of them sit under the program's `train_step`.
fn kernel_lines(folded: &str) -> (usize, usize) {
    let lines: Vec<&str> = folded.lines().filter(|l| l.contains("[GPU_Kernel]step_kernel")).collect();
    (lines.len(), lines.iter().filter(|l| l.contains(";main;train_step;cuLaunchKernel;")).count())
}

/// `device ops: N (M with launch stack` of xpuprof's end summary.
fn device_ops(err: &str) -> (u64, u64) {
    let rest = err.split("device ops: ").nth(1).unwrap_or_default();
    let n = rest.split_whitespace().next().and_then(|v| v.parse().ok()).unwrap_or(0);
    let m = rest
        .split('(')
        .nth(1)
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    (n, m)
}

#[test]
fn attaches_twice_to_a_running_cuda_program_which_goes_on_unharmed() {
    let Some(xpuprof) = host::xpuprof(&["cupti", "folded"]) else { return };
    if !host::target_dir().join("libxpuprof_cupti_agent.so").exists() {
        xpuprof_testkit::skip::missing("libxpuprof_cupti_agent.so not built");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let app = build(dir.path());
    let child = start(&app, dir.path(), &["10"]);
    let pid = child.id();
    for (round, how) in [(1, "loaded the agent into"), (2, "reused the agent already loaded in")] {
        let (ok, folded, err) = attach(&xpuprof, pid, &dir.path().join(format!("out{round}")));
        assert!(ok, "attach {round} failed: {err}");
        assert!(err.contains(&format!("{how} process {pid}")), "attach {round}: {err}");
        let (ops, with_stack) = device_ops(&err);
        assert!(ops > 50, "attach {round}: a 1 s window of launches every 2 ms: {ops}\n{err}");
        assert_eq!(with_stack, ops, "attach {round}: every kernel with its launch stack: {err}");
        let (lines, under_step) = kernel_lines(&folded);
        assert!(lines > 0 && under_step == lines, "attach {round}: kernels under train_step:\n{folded}");
    }
    let o = child.wait_with_output().unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(
        o.status.code(),
        Some(3),
        "the program exits with its own code: {out} {}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(
        out.contains("subscribed 2 finalized 2"),
        "each window subscribed CUPTI and each detach finalized it, leaving the agent dormant: {out}"
    );
}

#[test]
fn a_process_without_cuda_is_refused_by_name() {
    let Some(xpuprof) = host::xpuprof(&["cupti", "folded"]) else { return };
    let mut sleeper = Command::new("sleep").arg("10").spawn().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (ok, _, err) = attach(&xpuprof, sleeper.id(), &dir.path().join("out"));
    assert!(!ok, "{err}");
    assert!(err.contains(&format!("process {} has no libcuda loaded", sleeper.id())), "{err}");
    assert!(sleeper.try_wait().unwrap().is_none(), "the process runs on");
    sleeper.kill().unwrap();
    sleeper.wait().unwrap();
}

#[test]
fn marker_ranges_select_exactly_the_kernels_between_the_markers() {
    let Some(xpuprof) = host::xpuprof(&["cupti", "folded"]) else { return };
    let dir = tempfile::tempdir().unwrap();
    build(dir.path());
    for (range, end, mode, want) in [
        ("cuda-profiler-api", "stop", "markers", 7),
        ("cuda-profiler-api", "repeat", "markers", 11),
        ("nvtx:step", "stop", "nvtx", 7),
        ("nvtx:step", "repeat", "nvtx", 11),
    ] {
        let (child, out) =
            record(&xpuprof, dir.path(), &["--capture-range", range, "--capture-range-end", end], mode);
        let o = child.wait_with_output().unwrap();
        let (stdout, err) = (String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
        assert_eq!(o.status.code(), Some(3), "{range} {end}: the program's own code: {stdout} {err}");
        assert!(stdout.contains("launches 19 "), "{stdout}");
        assert_eq!(device_ops(&err), (want, want), "{range} {end}: {err}");
        let folded = std::fs::read_to_string(out.join("profile.folded")).unwrap();
        assert!(!folded.contains("outside_kernel"), "{range} {end}: nothing outside the markers:\n{folded}");
    }
}

#[test]
fn a_paused_session_records_only_its_triggered_window_and_detaches_cupti_outside_it() {
    let Some(xpuprof) = host::xpuprof(&["cupti", "folded"]) else { return };
    let dir = tempfile::tempdir().unwrap();
    build(dir.path());
    let (child, _) = record(&xpuprof, dir.path(), &["--start-paused"], "6");
    std::thread::sleep(std::time::Duration::from_millis(1500));
    let t = Command::new(&xpuprof)
        .args(["trigger", &child.id().to_string(), "--duration", "1s"])
        .output()
        .expect("run xpuprof trigger");
    assert!(t.status.success(), "{}", String::from_utf8_lossy(&t.stderr));
    let o = child.wait_with_output().unwrap();
    let (stdout, err) = (String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    assert_eq!(o.status.code(), Some(3), "{stdout} {err}");
    let launches: u64 =
        stdout.split("launches ").nth(1).and_then(|v| v.split_whitespace().next()?.parse().ok()).unwrap();
    let (ops, with_stack) = device_ops(&err);
    assert!(ops > 50 && ops < launches / 2, "a 1 s window of a 6 s run: {ops} of {launches}: {err}");
    assert_eq!(with_stack, ops, "{err}");
    assert!(
        stdout.contains("subscribed 2 finalized 2"),
        "CUPTI detached while paused, attached for the window, detached after it: {stdout}"
    );
}

#[test]
fn a_process_another_profiler_injected_is_refused_before_anything_is_loaded() {
    let Some(xpuprof) = host::xpuprof(&["cupti", "folded"]) else { return };
    let dir = tempfile::tempdir().unwrap();
    let app = build(dir.path());
    // As Nsight Systems starts a program: its injection library in CUDA_INJECTION64_PATH (a path
    // that does not exist here: the double's cuInit fails to load it and goes on).
    let tool = "/opt/nvidia/nsight-systems/target-linux-x64/libToolsInjection64.so";
    let mut child = Command::new(&app)
        .arg("3")
        .env("XPUPROF_CUPTI_LIB", dir.path().join("libcuda.so.1"))
        .env("CUDA_INJECTION64_PATH", tool)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.as_mut().unwrap()).read_line(&mut line).unwrap();
    assert_eq!(line, "ready\n");
    let (ok, _, err) = attach(&xpuprof, child.id(), &dir.path().join("out"));
    assert!(!ok, "{err}");
    assert!(err.contains(&format!("CUDA_INJECTION64_PATH={tool}")) && err.contains("owns CUPTI"), "{err}");
    assert!(!xpuprof_inject::is_loaded(child.id(), &host::target_dir().join("libxpuprof_cupti_agent.so"))
        .unwrap());
    let o = child.wait_with_output().unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(3), "the program goes on and exits with its own code: {out}");
    assert!(out.contains("subscribed 0 finalized 0"), "CUPTI never touched: {out}");
}

#[test]
fn a_process_that_has_not_initialised_cuda_is_refused_by_the_agent() {
    let Some(xpuprof) = host::xpuprof(&["cupti", "folded"]) else { return };
    let dir = tempfile::tempdir().unwrap();
    let app = build(dir.path());
    let child = start(&app, dir.path(), &["3", "noinit"]);
    let (_, _, err) = attach(&xpuprof, child.id(), &dir.path().join("out"));
    assert!(err.contains("CUDA is not initialised in this process yet"), "{err}");
    let o = child.wait_with_output().unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(3), "{out}");
    assert!(out.contains("subscribed 0 finalized 0"), "CUPTI never touched: {out}");
}

/// `xpuprof attach SH --tree` on a launcher (`sh`) that starts `app ARGS` only once the session
/// is attached (it waits for a file the test creates then) and exits 7 after it; returns
/// (xpuprof's success, profile.folded, xpuprof's stderr, the launcher's stdout and exit code).
fn attach_tree_to_launcher(
    xpuprof: &Path,
    dir: &Path,
    app_args: &str,
) -> (bool, String, String, String, i32) {
    let go = dir.join(format!("go-{}", app_args.replace(' ', "-")));
    let script = format!(
        "while [ ! -e '{}' ]; do sleep 0.05; done; '{}' {app_args}; exit 7",
        go.display(),
        dir.join("app").display()
    );
    let launcher = Command::new("/bin/sh")
        .args(["-c", &script])
        .env("XPUPROF_CUPTI_LIB", dir.join("libcuda.so.1"))
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let out = dir.join(format!("tree-{}", app_args.replace(' ', "-")));
    let mut session = Command::new(xpuprof)
        .arg("attach")
        .arg(launcher.id().to_string())
        .arg("--plugin-dir")
        .arg(host::target_dir())
        .args(["--tree", "--source", "cupti", "--sink", "folded", "--duration", "60s", "-v", "-o"])
        .arg(&out)
        .stderr(Stdio::piped())
        .spawn()
        .expect("run xpuprof attach --tree");
    let mut err = String::new();
    let mut reader = BufReader::new(session.stderr.take().unwrap());
    let mut line = String::new();
    while reader.read_line(&mut line).unwrap_or(0) > 0 {
        err.push_str(&line);
        let attached = line.contains("xpuprof: attached to process");
        line.clear();
        if attached {
            std::fs::write(&go, "").unwrap();
            break;
        }
    }
    std::io::Read::read_to_string(&mut reader, &mut err).unwrap();
    let ok = session.wait().unwrap().success();
    let o = launcher.wait_with_output().unwrap();
    let folded = std::fs::read_to_string(out.join("profile.folded")).unwrap_or_default();
    (ok, folded, err, String::from_utf8_lossy(&o.stdout).into_owned(), o.status.code().unwrap_or(-1))
}

/// `launches N` of the program's last line.
fn launches(stdout: &str) -> u64 {
    stdout.split("launches ").nth(1).and_then(|v| v.split_whitespace().next()?.parse().ok()).unwrap_or(0)
}

#[test]
fn attach_tree_records_every_launch_of_a_cuda_child_started_after_the_attach() {
    let Some(xpuprof) = host::xpuprof(&["cupti", "folded"]) else { return };
    let dir = tempfile::tempdir().unwrap();
    build(dir.path());
    // The child maps the driver at once and initialises CUDA a second later (as a framework's
    // import does): the follower arms it before, so the driver starts the agent at its cuInit.
    let (ok, folded, err, stdout, code) = attach_tree_to_launcher(&xpuprof, dir.path(), "3 late");
    assert!(ok, "{err}");
    assert_eq!(code, 7, "the launcher exits with its own code: {stdout}");
    assert!(err.contains("uses CUDA yet: following"), "{err}");
    assert!(err.contains("started after the attach"), "the child was not followed: {err}");
    let n = launches(&stdout);
    assert!(n > 50, "{stdout}");
    assert_eq!(device_ops(&err), (n, n), "every launch of the child, each with its stack: {stdout}\n{err}");
    let (lines, under_step) = kernel_lines(&folded);
    assert!(lines > 0 && under_step == lines, "kernels under train_step:\n{folded}");
}

#[test]
fn attach_tree_attaches_late_to_a_child_that_initialised_cuda_before_it_was_seen() {
    let Some(xpuprof) = host::xpuprof(&["cupti", "folded"]) else { return };
    let dir = tempfile::tempdir().unwrap();
    build(dir.path());
    let (ok, folded, err, stdout, code) = attach_tree_to_launcher(&xpuprof, dir.path(), "3");
    assert!(ok, "{err}");
    assert_eq!(code, 7, "{stdout}");
    assert!(err.contains("started after the attach"), "the child was not followed: {err}");
    let n = launches(&stdout);
    let (ops, with_stack) = device_ops(&err);
    assert!(ops > 50 && ops <= n, "a late attach records from then on: {ops} of {n}\n{err}");
    assert_eq!(with_stack, ops, "{err}");
    let (lines, under_step) = kernel_lines(&folded);
    assert!(lines > 0 && under_step == lines, "kernels under train_step:\n{folded}");
}

/// The newest two windows' directories of `--every 1500ms --duration 500ms --keep 2` in `out`
/// (`err`: xpuprof's stderr): each holds its own kernels, each with its launch stack, on the
/// device named `device` in its trace, and no second device 0.
fn every_windows(out: &Path, err: &str, device: &str) {
    let mut dirs: Vec<PathBuf> =
        std::fs::read_dir(out).unwrap().flatten().map(|e| e.path()).filter(|p| p.is_dir()).collect();
    dirs.sort();
    assert_eq!(dirs.len(), 2, "the newest two windows: {dirs:?}\n{err}");
    assert!(out.join("windows.json").is_file());
    for d in &dirs {
        let folded = std::fs::read_to_string(d.join("profile.folded")).unwrap_or_default();
        let (lines, under_step) = kernel_lines(&folded);
        assert!(lines > 0 && under_step == lines, "{}: kernels under train_step:\n{folded}", d.display());
        // Every launch call the window recorded has its kernel in the same window's outputs (the
        // window's records reach them before its sinks finish, not only at the connection's
        // end); a launch at each edge may fall between its call's record and its kernel's.
        let trace = std::fs::read_to_string(d.join("trace.json")).unwrap();
        let calls = trace.matches(r#""cat":"api","name":"cuLaunchKernel""#).count();
        let kernels = trace.matches(r#""cat":"kernel""#).count();
        assert!(
            calls > 50 && kernels.abs_diff(calls) <= 2,
            "{}: {kernels} kernels for {calls} launch calls\n{err}",
            d.display()
        );
        assert!(trace.contains(device), "{}: the kernels' device is {device}\n{err}", d.display());
        assert_eq!(trace.matches("\"GPU 0 (").count(), 1, "{}: one device 0\n{err}", d.display());
    }
}

/// `xpuprof attach --every 1500ms --duration 500ms --keep 2` (and `extra`) on a program on the
/// double that launches for 7 s: [`every_windows`]; CUPTI is subscribed for each window and
/// finalized after each.
fn attach_every(extra: &[&str], device: &str) {
    let Some(xpuprof) = host::xpuprof(&["cupti", "folded"]) else { return };
    let dir = tempfile::tempdir().unwrap();
    let app = build(dir.path());
    let child = start(&app, dir.path(), &["7"]);
    let out = dir.path().join("every");
    // Windows of 0.5 s every 1.5 s until the program ends (about four), the newest two kept.
    let o = Command::new(&xpuprof)
        .arg("attach")
        .arg(child.id().to_string())
        .arg("--plugin-dir")
        .arg(host::target_dir())
        .args(["--every", "1500ms", "--duration", "500ms", "--keep", "2", "--source", "cupti"])
        .args(extra)
        .args(["--sink", "folded,chrome", "-v", "-o"])
        .arg(&out)
        .output()
        .expect("run xpuprof attach --every");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    every_windows(&out, &err, device);
    let o = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(3), "the program exits with its own code: {stdout}");
    // Subscribed for each window and finalized after each: dormant between them.
    let counts: Vec<u64> = ["subscribed ", "finalized "]
        .iter()
        .map(|k| stdout.split(k).nth(1).and_then(|v| v.split_whitespace().next()?.parse().ok()).unwrap_or(0))
        .collect();
    // The program prints its counts as it exits; a window open then (a loaded machine can
    // start the last one late) has subscribed without its detach yet.
    assert!(
        counts[0] >= 3 && (counts[0] == counts[1] || counts[0] == counts[1] + 1),
        "CUPTI attached per window, detached after each: {stdout}"
    );
}

/// The double hands CUPTI's device record over only at the program's end, as CUPTI did on the
/// H200: the agent describes the device from the driver when the session begins.
#[test]
fn attach_every_records_windows_with_cupti_detached_between_them() {
    attach_every(&[], "GPU 0 (CUDA double)");
}

/// Without device records (`devices = false`) no description of the device comes at all: each
/// window's kernels still reach its own outputs, released at the window's end under an
/// ordinal-only device.
#[test]
fn attach_every_without_device_records_releases_each_windows_kernels_at_its_end() {
    attach_every(&["--set", "source.cupti.devices=false"], "GPU 0 (CUDA device 0)");
}

/// `xpuprof record --every` on the double: the driver starts the agent inside `cuInit`, where it
/// cannot ask the driver; its window thread describes the device once `cuInit` returned.
#[test]
fn record_every_records_each_windows_kernels_on_the_device_the_driver_describes() {
    let Some(xpuprof) = host::xpuprof(&["cupti", "folded"]) else { return };
    let dir = tempfile::tempdir().unwrap();
    build(dir.path());
    let out = dir.path().join("every");
    let o = Command::new(&xpuprof)
        .arg("record")
        .arg("--plugin-dir")
        .arg(host::target_dir())
        .args(["--every", "1500ms", "--duration", "500ms", "--keep", "2", "--source", "cupti"])
        .args(["--sink", "folded,chrome", "-v", "-o"])
        .arg(&out)
        .arg("--")
        .arg(dir.path().join("app"))
        .arg("7")
        .env("XPUPROF_CUPTI_LIB", dir.path().join("libcuda.so.1"))
        .output()
        .expect("run xpuprof record --every");
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(3), "xpuprof exits with the program's code: {err}");
    every_windows(&out, &err, "GPU 0 (CUDA double)");
}
