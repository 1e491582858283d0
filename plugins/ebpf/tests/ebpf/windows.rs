//! Capture windows and attach through the real binary: `xpuprof record --delay/--duration`,
//! `--start-paused` + `xpuprof trigger`, and `xpuprof attach PID [--tree]` on a running
//! program, with real BPF programs.
//!
//! The workloads change phase by wall-clock time (`burn` then `jit`), so a window placed inside
//! one phase must show only that phase's functions. Deadlines are generous: the machine may be
//! a loaded 2-core CI runner.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::e2e::xpuprof;
use crate::common::{root_or_skip, workload};

/// Folded weights (ns) of lines whose frames include `name`.
fn weight_with(folded: &str, name: &str) -> u64 {
    folded
        .lines()
        .filter_map(|l| l.rsplit_once(' '))
        .filter(|(stack, _)| stack.split(';').any(|f| f == name))
        .filter_map(|(_, w)| w.parse::<u64>().ok())
        .sum()
}

fn total(folded: &str) -> u64 {
    folded.lines().filter_map(|l| l.rsplit_once(' ')?.1.parse::<u64>().ok()).sum()
}

fn read_folded(dir: &Path) -> String {
    std::fs::read_to_string(dir.join("profile.folded")).expect("profile.folded")
}

/// A config that samples often enough for short windows (outside the output directory, which
/// must hold only what xpuprof writes).
fn config(_out: &Path) -> std::path::PathBuf {
    static DIR: std::sync::OnceLock<tempfile::TempDir> = std::sync::OnceLock::new();
    let dir = DIR.get_or_init(|| tempfile::tempdir().unwrap());
    let cfg = dir.path().join("xpuprof.toml");
    std::fs::write(&cfg, "[source.ebpf]\nsample_hz = 499\n").unwrap();
    cfg
}

/// Waits for `child` at most `limit`; kills it and panics when it takes longer.
fn wait_at_most(child: &mut Child, limit: Duration, what: &str) -> std::process::ExitStatus {
    let t = Instant::now();
    loop {
        if let Some(st) = child.try_wait().unwrap() {
            return st;
        }
        if t.elapsed() > limit {
            let _ = child.kill();
            panic!("{what} did not finish within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The BPF program and map ids `pid` holds open (from its fdinfo).
fn bpf_ids_of(pid: u32) -> (Vec<u32>, Vec<u32>) {
    let (mut progs, mut maps) = (Vec::new(), Vec::new());
    let Ok(dir) = std::fs::read_dir(format!("/proc/{pid}/fdinfo")) else { return (progs, maps) };
    for e in dir.flatten() {
        let text = std::fs::read_to_string(e.path()).unwrap_or_default();
        for line in text.lines() {
            let id = |p: &str| line.strip_prefix(p).and_then(|v| v.trim().parse::<u32>().ok());
            if let Some(i) = id("prog_id:") {
                progs.push(i);
            }
            if let Some(i) = id("map_id:") {
                maps.push(i);
            }
        }
    }
    (progs, maps)
}

/// Whether the kernel still has the BPF program (`map == false`) or map with this id.
fn bpf_object_exists(id: u32, map: bool) -> bool {
    // BPF_PROG_GET_FD_BY_ID = 13, BPF_MAP_GET_FD_BY_ID = 14; the attribute starts with the id.
    let cmd = if map { 14 } else { 13 };
    let attr = [id, 0, 0, 0];
    // SAFETY: bpf(2) reads `size_of_val(&attr)` bytes of the attribute we pass.
    let fd = unsafe { libc::syscall(libc::SYS_bpf, cmd, attr.as_ptr(), std::mem::size_of_val(&attr)) };
    if fd >= 0 {
        // SAFETY: closing the descriptor the call just returned.
        unsafe { libc::close(fd as i32) };
        return true;
    }
    std::io::Error::last_os_error().raw_os_error() != Some(libc::ENOENT)
}

/// Those of `ids` still there after up to 10 s: the kernel frees a map or program whose last
/// descriptor closed in deferred work (after an RCU grace period for programs, then their
/// maps), which a loaded machine runs late; one that stays is held by someone.
fn still_there(ids: &[u32], map: bool) -> Vec<u32> {
    let t = Instant::now();
    loop {
        let left: Vec<u32> = ids.iter().copied().filter(|id| bpf_object_exists(*id, map)).collect();
        if left.is_empty() || t.elapsed() > Duration::from_secs(10) {
            return left;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn record_with_delay_and_duration_samples_only_inside_the_window() {
    if !root_or_skip("record_with_delay_and_duration_samples_only_inside_the_window") {
        return;
    }
    let Some(bin) = xpuprof() else { return };
    let out = tempfile::tempdir().unwrap();
    // burn for 2 s, then the JIT workload for 5 s: the window [3 s, 4.5 s] lies inside the second.
    let cmd = format!("{} 2; {} 5; exit 3", workload("burn"), workload("jit"));
    let status = Command::new(&bin)
        .args([
            "--quiet",
            "--source",
            "ebpf",
            "--sink",
            "folded,summary",
            "--delay",
            "3s",
            "--duration",
            "1500ms",
            "-c",
        ])
        .arg(config(out.path()))
        .arg("-o")
        .arg(out.path())
        .args(["--", "/bin/sh", "-c", &cmd])
        .status()
        .expect("run xpuprof");
    assert_eq!(status.code(), Some(3), "xpuprof exits with the target's own code");
    let folded = read_folded(out.path());
    assert!(weight_with(&folded, "jit_burn_loop") > 0, "nothing sampled inside the window:\n{folded}");
    assert_eq!(weight_with(&folded, "burn_three"), 0, "samples from before the window:\n{folded}");
    // One busy thread for 1.5 s: at most 1.5 s of CPU time (plus a sampling period or two).
    assert!(total(&folded) <= 1_700_000_000, "more CPU time than the window holds:\n{folded}");
    // The summary says which window it covers; its session time is the window's, not the run's.
    let summary = std::fs::read_to_string(out.path().join("summary.txt")).expect("summary.txt");
    let windows: Vec<&str> = summary.lines().filter(|l| l.starts_with("window ")).collect();
    assert_eq!(windows.len(), 1, "{summary}");
    assert!(windows[0].ends_with("(opened by delay)"), "{summary}");
    let session = summary.lines().find(|l| l.starts_with("session:")).unwrap_or_default();
    assert!(session.starts_with("session:  1.5") || session.starts_with("session:  1.6"), "{summary}");
}

#[test]
fn trigger_opens_a_window_in_a_session_started_paused() {
    if !root_or_skip("trigger_opens_a_window_in_a_session_started_paused") {
        return;
    }
    let Some(bin) = xpuprof() else { return };
    let out = tempfile::tempdir().unwrap();
    let cmd = format!("{} 1; {} 9", workload("burn"), workload("jit"));
    let mut session = Command::new(&bin)
        .args(["--quiet", "--source", "ebpf", "--sink", "folded", "--start-paused", "-c"])
        .arg(config(out.path()))
        .arg("-o")
        .arg(out.path())
        .args(["--", "/bin/sh", "-c", &cmd])
        .spawn()
        .expect("run xpuprof");
    // The burn phase is over 1 s after the target started (xpuprof needs a moment to load).
    std::thread::sleep(Duration::from_secs(4));
    let t = Instant::now();
    loop {
        let o =
            Command::new(&bin).arg("trigger").arg(out.path()).args(["--duration", "1s"]).output().unwrap();
        if o.status.success() {
            break;
        }
        assert!(
            t.elapsed() < Duration::from_secs(3),
            "trigger failed: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let status = wait_at_most(&mut session, Duration::from_secs(60), "the session");
    assert!(status.success(), "xpuprof exited with {status}");
    let folded = read_folded(out.path());
    assert!(weight_with(&folded, "jit_burn_loop") > 0, "nothing sampled in the triggered window:\n{folded}");
    assert_eq!(weight_with(&folded, "burn_three"), 0, "samples while dormant:\n{folded}");
    assert!(total(&folded) <= 1_300_000_000, "more CPU time than the 1 s window holds:\n{folded}");
}

#[test]
fn attach_tree_records_running_children_and_leaves_the_target_untouched() {
    if !root_or_skip("attach_tree_records_running_children_and_leaves_the_target_untouched") {
        return;
    }
    let Some(bin) = xpuprof() else { return };
    let out = tempfile::tempdir().unwrap();
    // A launcher with a child already running (burn) and one it starts later (jit), that exits
    // with its own code once both are done.
    let cmd = format!("{} 10 & sleep 2; {} 7 & wait; exit 7", workload("burn"), workload("jit"));
    let mut target = Command::new("/bin/sh").args(["-c", &cmd]).spawn().unwrap();
    std::thread::sleep(Duration::from_millis(500));
    let mut session = Command::new(&bin)
        .arg("attach")
        .arg(target.id().to_string())
        .args(["--tree", "--duration", "4s", "--source", "ebpf", "--sink", "folded", "-c"])
        .arg(config(out.path()))
        .arg("-o")
        .arg(out.path())
        .stdout(Stdio::null())
        .spawn()
        .expect("run xpuprof attach");
    let (mut progs, mut maps) = (Vec::new(), Vec::new());
    let t = Instant::now();
    let status = loop {
        let (p, m) = bpf_ids_of(session.id());
        progs.extend(p);
        maps.extend(m);
        if let Some(st) = session.try_wait().unwrap() {
            break st;
        }
        assert!(t.elapsed() < Duration::from_secs(60), "xpuprof attach did not end after its duration");
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(status.success(), "xpuprof attach exited with {status}");
    assert!(target.try_wait().unwrap().is_none(), "the target did not keep running after the detach");
    assert!(!progs.is_empty() && !maps.is_empty(), "xpuprof held no BPF program or map while attached");
    progs.sort_unstable();
    progs.dedup();
    maps.sort_unstable();
    maps.dedup();
    let left = still_there(&progs, false);
    assert!(left.is_empty(), "BPF programs {left:?} of xpuprof are still loaded after the detach");
    let left = still_there(&maps, true);
    assert!(left.is_empty(), "BPF maps {left:?} of xpuprof are still there after the detach");
    let folded = read_folded(out.path());
    assert!(weight_with(&folded, "burn_three") > 0, "the running child is missing:\n{folded}");
    assert!(
        weight_with(&folded, "jit_burn_loop") > 0,
        "the child started during the window is missing:\n{folded}"
    );
    assert!(folded.lines().any(|l| l.contains(";main;burn_three;")), "call paths not symbolised:\n{folded}");
    // Two busy processes for at most 4 s (the whole run would hold about 17 s).
    assert!(total(&folded) <= 9_000_000_000, "more CPU time than the window holds:\n{folded}");
    let status = wait_at_most(&mut target, Duration::from_secs(60), "the target");
    assert_eq!(status.code(), Some(7), "the target exits with its own code");
}

#[test]
fn attach_refuses_a_missing_process_and_a_process_already_attached() {
    if !root_or_skip("attach_refuses_a_missing_process_and_a_process_already_attached") {
        return;
    }
    let Some(bin) = xpuprof() else { return };
    let out = tempfile::tempdir().unwrap();
    let run = |pid: &str, dir: &str| {
        Command::new(&bin)
            .args(["attach", pid, "--source", "ebpf", "--sink", "folded", "-o"])
            .arg(out.path().join(dir))
            .output()
            .unwrap()
    };
    let o = run("4194303", "none");
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("no such process"), "{o:?}");

    let mut target = Command::new("sleep").arg("30").spawn().unwrap();
    let pid = target.id().to_string();
    let mut first = Command::new(&bin)
        .args(["attach", &pid, "--duration", "20s", "--source", "ebpf", "--sink", "folded", "-o"])
        .arg(out.path().join("first"))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The first session holds the target from its start; give it time to get there.
    // Its lock file: xpuprof-attach-PID-START.lock (START: the target's start time).
    let lock = || {
        let prefix = format!("xpuprof-attach-{pid}-");
        std::fs::read_dir(std::env::temp_dir()).ok()?.flatten().map(|e| e.path()).find(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(&prefix) && n.ends_with(".lock"))
        })
    };
    let t = Instant::now();
    while lock().and_then(|l| std::fs::read_to_string(l).ok()).unwrap_or_default().trim()
        != first.id().to_string()
    {
        assert!(t.elapsed() < Duration::from_secs(20), "the first attach never took its lock");
        std::thread::sleep(Duration::from_millis(50));
    }
    let o = run(&pid, "second");
    // SAFETY: asking our own child to end its session (it detaches on SIGINT).
    unsafe { libc::kill(first.id() as i32, libc::SIGINT) };
    let st = wait_at_most(&mut first, Duration::from_secs(30), "the first attach");
    assert_eq!(o.status.code(), Some(2), "{o:?}");
    assert!(String::from_utf8_lossy(&o.stderr).contains("already being profiled"), "{o:?}");
    assert!(st.success(), "the first attach failed after Ctrl+C: {st}");
    assert!(target.try_wait().unwrap().is_none(), "the target did not survive the detach");
    let _ = target.kill();
    let _ = target.wait();
}

#[test]
fn every_writes_one_complete_directory_per_window_and_keeps_the_newest() {
    if !root_or_skip("every_writes_one_complete_directory_per_window_and_keeps_the_newest") {
        return;
    }
    let Some(bin) = xpuprof() else { return };
    let out = tempfile::tempdir().unwrap();
    // Windows of 1 s at 0, 2, 4 and 6 s of a 7.5 s run: four (or five) written, two kept.
    let cmd = format!("{} 7.5; exit 4", workload("jit"));
    let status = Command::new(&bin)
        .args(["--quiet", "--source", "ebpf", "--sink", "folded,summary"])
        .args(["--every", "2s", "--duration", "1s", "--keep", "2", "-c"])
        .arg(config(out.path()))
        .arg("-o")
        .arg(out.path())
        .args(["--", "/bin/sh", "-c", &cmd])
        .status()
        .expect("run xpuprof");
    assert_eq!(status.code(), Some(4), "xpuprof exits with the target's own code");
    let mut dirs: Vec<String> = std::fs::read_dir(out.path())
        .unwrap()
        .flatten()
        .filter(|e| e.path().is_dir())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    dirs.sort();
    assert_eq!(dirs.len(), 2, "not the newest two windows: {dirs:?}");
    let index = std::fs::read_to_string(out.path().join("windows.json")).expect("windows.json");
    // The newest window may have opened just as the program ended (a loaded machine runs late).
    let mut sampled = 0;
    for d in &dirs {
        assert!(d.ends_with('Z') && d.contains('T'), "{d} is not named by its UTC start");
        assert!(index.contains(&format!("\"dir\": \"{d}\"")), "{d} missing from the index:\n{index}");
        let folded = read_folded(&out.path().join(d));
        sampled += usize::from(weight_with(&folded, "jit_burn_loop") > 0);
        assert!(total(&folded) <= 1_300_000_000, "{d} holds more than its 1 s window:\n{folded}");
        let summary = std::fs::read_to_string(out.path().join(d).join("summary.txt")).unwrap();
        assert_eq!(summary.lines().filter(|l| l.starts_with("window ")).count(), 1, "{summary}");
    }
    assert!(sampled >= 1, "no kept window holds the program's samples: {dirs:?}");
}

#[test]
fn ebpf_follows_the_marker_windows_another_source_opens() {
    if !root_or_skip("ebpf_follows_the_marker_windows_another_source_opens") {
        return;
    }
    let Some(bin) = xpuprof() else { return };
    // The scripted test double reports a marker window from 2.5 s to 4 s, as a GPU agent does
    // at cudaProfilerStart/Stop; the eBPF source must sample inside it only.
    let scripted = bin.parent().unwrap().join("libxpuprof_test_scripted.so");
    if !scripted.is_file() {
        xpuprof_testkit::skip::missing(&format!("{} is not built", scripted.display()));
        return;
    }
    let out = tempfile::tempdir().unwrap();
    let cfg_dir = tempfile::tempdir().unwrap();
    let cfg = cfg_dir.path().join("xpuprof.toml");
    std::fs::write(
        &cfg,
        "[source.ebpf]\nsample_hz = 499\n[source.scripted]\nwindow_open_ms = 2500\nwindow_close_ms = 4000\n",
    )
    .unwrap();
    let cmd = format!("{} 2; {} 3", workload("burn"), workload("jit"));
    let status = Command::new(&bin)
        .args(["--quiet", "--source", "ebpf,scripted", "--sink", "folded,summary"])
        .args(["--capture-range", "profiler-api", "-c"])
        .arg(&cfg)
        .arg("-o")
        .arg(out.path())
        .args(["--", "/bin/sh", "-c", &cmd])
        .env("XPUPROF_PLUGIN_PATH", &scripted)
        .status()
        .expect("run xpuprof");
    assert!(status.success(), "xpuprof exited with {status}");
    let folded = std::fs::read_to_string(out.path().join("profile.cpu.folded")).expect("profile.cpu.folded");
    assert!(weight_with(&folded, "jit_burn_loop") > 0, "nothing sampled inside the marker window:\n{folded}");
    assert_eq!(weight_with(&folded, "burn_three"), 0, "samples before the marker window:\n{folded}");
    let summary = std::fs::read_to_string(out.path().join("summary.txt")).expect("summary.txt");
    let windows: Vec<&str> = summary.lines().filter(|l| l.starts_with("window ")).collect();
    assert_eq!(windows.len(), 1, "{summary}");
    assert!(windows[0].ends_with("(opened by nvtx)"), "{summary}");
}

#[test]
fn sigusr2_opens_a_window_of_the_sessions_duration() {
    if !root_or_skip("sigusr2_opens_a_window_of_the_sessions_duration") {
        return;
    }
    let Some(bin) = xpuprof() else { return };
    let out = tempfile::tempdir().unwrap();
    let cmd = format!("{} 1; {} 9", workload("burn"), workload("jit"));
    let mut session = Command::new(&bin)
        .args(["--quiet", "--source", "ebpf", "--sink", "folded", "--start-paused", "--duration", "1s", "-c"])
        .arg(config(out.path()))
        .arg("-o")
        .arg(out.path())
        .args(["--", "/bin/sh", "-c", &cmd])
        .spawn()
        .expect("run xpuprof");
    std::thread::sleep(Duration::from_secs(4));
    // SAFETY: signalling our own child.
    assert_eq!(unsafe { libc::kill(session.id() as i32, libc::SIGUSR2) }, 0);
    let status = wait_at_most(&mut session, Duration::from_secs(60), "the session");
    assert!(status.success(), "xpuprof exited with {status}");
    let folded = read_folded(out.path());
    assert!(weight_with(&folded, "jit_burn_loop") > 0, "nothing sampled after SIGUSR2:\n{folded}");
    assert_eq!(weight_with(&folded, "burn_three"), 0, "samples while dormant:\n{folded}");
    assert!(total(&folded) <= 1_300_000_000, "more CPU time than the 1 s window holds:\n{folded}");
}

#[test]
fn attach_every_writes_one_directory_per_window_and_detaches_between_and_after() {
    if !root_or_skip("attach_every_writes_one_directory_per_window_and_detaches_between_and_after") {
        return;
    }
    let Some(bin) = xpuprof() else { return };
    let out = tempfile::tempdir().unwrap();
    // A program xpuprof did not start: burn for 1 s (before the attach), then the JIT workload.
    let cmd = format!("{} 1; {} 8; exit 5", workload("burn"), workload("jit"));
    let mut target = Command::new("/bin/sh").args(["-c", &cmd]).spawn().unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    // Windows of 1 s every 2 s until the program ends (about four), the newest two kept.
    let mut session = Command::new(&bin)
        .arg("attach")
        .arg(target.id().to_string())
        .args(["--tree", "--every", "2s", "--duration", "1s", "--keep", "2", "--source", "ebpf"])
        .args(["--sink", "folded,summary", "-c"])
        .arg(config(out.path()))
        .arg("-o")
        .arg(out.path())
        .stdout(Stdio::null())
        .spawn()
        .expect("run xpuprof attach --every");
    let (mut progs, mut maps) = (Vec::new(), Vec::new());
    let t = Instant::now();
    let status = loop {
        let (p, m) = bpf_ids_of(session.id());
        progs.extend(p);
        maps.extend(m);
        if let Some(st) = session.try_wait().unwrap() {
            break st;
        }
        assert!(t.elapsed() < Duration::from_secs(90), "xpuprof attach --every did not end with the program");
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(status.success(), "xpuprof attach --every exited with {status}");
    let code = wait_at_most(&mut target, Duration::from_secs(30), "the target").code();
    assert_eq!(code, Some(5), "the program exits with its own code");
    progs.sort_unstable();
    progs.dedup();
    maps.sort_unstable();
    maps.dedup();
    assert!(!progs.is_empty(), "xpuprof held no BPF program while attached");
    let left = still_there(&progs, false);
    assert!(left.is_empty(), "BPF programs {left:?} of xpuprof are still loaded after the detach");
    let left = still_there(&maps, true);
    assert!(left.is_empty(), "BPF maps {left:?} of xpuprof are still there after the detach");
    let mut dirs: Vec<String> = std::fs::read_dir(out.path())
        .unwrap()
        .flatten()
        .filter(|e| e.path().is_dir())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    dirs.sort();
    assert_eq!(dirs.len(), 2, "not the newest two windows: {dirs:?}");
    let index = std::fs::read_to_string(out.path().join("windows.json")).expect("windows.json");
    let mut sampled = 0;
    for d in &dirs {
        assert!(index.contains(&format!("\"dir\": \"{d}\"")), "{d} missing from the index:\n{index}");
        let folded = read_folded(&out.path().join(d));
        sampled += usize::from(weight_with(&folded, "jit_burn_loop") > 0);
        assert_eq!(weight_with(&folded, "burn_three"), 0, "{d}: samples from before the attach:\n{folded}");
        assert!(total(&folded) <= 1_300_000_000, "{d} holds more than its 1 s window:\n{folded}");
        let summary = std::fs::read_to_string(out.path().join(d).join("summary.txt")).unwrap();
        assert_eq!(summary.lines().filter(|l| l.starts_with("window ")).count(), 1, "{summary}");
    }
    assert!(sampled >= 1, "no kept window holds the program's samples: {dirs:?}");
}
