//! Records reach the outputs while the target runs: the source flushes at least every 250 ms,
//! so `kill -9` of xpuprof leaves an archive that lacks at most the last second.

use std::os::unix::process::CommandExt;
use std::process::Command;
use std::time::Duration;

use xpuprof_sdk::codec::decode_all;
use xpuprof_sdk::model::Record;

use crate::common::{root_or_skip, workload};
use crate::e2e::xpuprof;

/// Session-clock times of the CPU samples in the archive under `out`, which is cut short (no
/// end marker; while xpuprof runs, maybe a chunk half written).
fn sample_times(out: &std::path::Path) -> Vec<u64> {
    let Ok(mut reader) = xpuprof_archive::open(out) else { return Vec::new() };
    let mut records = Vec::new();
    let stats = reader.replay(&mut |b| records.extend(decode_all(b).unwrap())).unwrap();
    assert_eq!(stats.skipped, 0, "{:?}", stats.corruption);
    records.iter().filter_map(|r| if let Record::CpuSample(s) = r { Some(s.time) } else { None }).collect()
}

#[test]
fn kill_9_of_xpuprof_loses_at_most_the_last_second() {
    if !root_or_skip("kill_9_of_xpuprof_loses_at_most_the_last_second") {
        return;
    }
    let Some(bin) = xpuprof() else { return };
    let out = tempfile::tempdir().unwrap();
    let cfg = out.path().join("xpuprof.toml");
    std::fs::write(&cfg, "[source.ebpf]\nsample_hz = 499\n").unwrap();
    // Burns CPU for a minute, so samples keep coming until the kill.
    let mut child = Command::new(&bin)
        .args(["--quiet", "--source", "ebpf", "--sink", "archive", "-c"])
        .arg(&cfg)
        .arg("-o")
        .arg(out.path())
        .args(["--", &workload("burn"), "60"])
        .process_group(0)
        .spawn()
        .expect("run xpuprof");
    let pgid = child.id() as i32;
    // Samples reach the archive while the target runs (loading the BPF programs can take a
    // few seconds on a busy machine); then two more seconds of recording.
    let started = std::time::Instant::now();
    while sample_times(out.path()).is_empty() {
        assert!(started.elapsed() < Duration::from_secs(30), "no sample reached the archive in 30 s");
        std::thread::sleep(Duration::from_millis(100));
    }
    std::thread::sleep(Duration::from_secs(2));
    child.kill().expect("kill -9 xpuprof");
    let killed_at = xpuprof_sdk::clock::now_ns();
    child.wait().unwrap();
    // The target, left behind by the killed xpuprof, is in xpuprof's process group.
    // SAFETY: killpg has no memory preconditions; the group is the one created for xpuprof.
    unsafe { libc::killpg(pgid, libc::SIGKILL) };
    let times = sample_times(out.path());
    let last = *times.iter().max().unwrap();
    let lost_ms = killed_at.saturating_sub(last) / 1_000_000;
    eprintln!("{} samples in the archive; the last one {lost_ms} ms before kill -9", times.len());
    assert!(
        lost_ms <= 1000,
        "the archive lacks the last {lost_ms} ms before kill -9 (at most 1000 promised)"
    );
}

/// Opens a pseudo-terminal: (controller, terminal) file descriptors.
fn pty() -> (std::fs::File, std::fs::File) {
    use std::os::fd::FromRawFd;
    let (mut controller, mut terminal) = (-1, -1);
    // SAFETY: openpty writes two new descriptors into the out-parameters; name, termios and
    // window size are optional (null).
    let r = unsafe {
        libc::openpty(
            &mut controller,
            &mut terminal,
            std::ptr::null_mut(),
            std::ptr::null(),
            std::ptr::null(),
        )
    };
    assert_eq!(r, 0, "openpty: {}", std::io::Error::last_os_error());
    // SAFETY: both descriptors were just opened and are owned by nobody else.
    unsafe { (std::fs::File::from_raw_fd(controller), std::fs::File::from_raw_fd(terminal)) }
}

/// The status lines xpuprof drew on a terminal: (seconds recorded, eBPF records) of each.
fn status_lines(terminal_output: &str) -> Vec<(f64, u64)> {
    terminal_output
        .split(['\r', '\n'])
        .filter_map(|l| {
            let l = l.trim_start_matches("\x1b[K");
            let rest = l.strip_prefix("xpuprof: recording ")?;
            let (secs, rest) = rest.split_once("s | ebpf: ")?;
            let (n, _) = rest.split_once(" records")?;
            let n = match n.strip_suffix('k') {
                Some(k) => (k.parse::<f64>().ok()? * 1e3) as u64,
                None => n
                    .strip_suffix('M')
                    .map_or_else(|| n.parse().ok(), |m| m.parse::<f64>().ok().map(|m| (m * 1e6) as u64))?,
            };
            Some((secs.parse().ok()?, n))
        })
        .collect()
}

#[test]
fn the_status_line_counts_ebpf_records_while_the_target_runs() {
    if !root_or_skip("the_status_line_counts_ebpf_records_while_the_target_runs") {
        return;
    }
    let Some(bin) = xpuprof() else { return };
    let out = tempfile::tempdir().unwrap();
    let cfg = out.path().join("xpuprof.toml");
    std::fs::write(&cfg, "[source.ebpf]\nsample_hz = 499\n").unwrap();
    // The status line is drawn only when stderr is a terminal: give xpuprof one.
    let (mut controller, terminal) = pty();
    let mut child = Command::new(&bin)
        .args(["--source", "ebpf", "--sink", "archive", "-c"])
        .arg(&cfg)
        .arg("-o")
        .arg(out.path())
        .args(["--", &workload("burn"), "4"])
        .stdout(std::process::Stdio::null())
        .stderr(terminal)
        .spawn()
        .expect("run xpuprof");
    let reader = std::thread::spawn(move || {
        use std::io::Read;
        let mut text = Vec::new();
        // Ends with EIO once xpuprof (the terminal's last holder) has exited.
        let _ = controller.read_to_end(&mut text);
        String::from_utf8_lossy(&text).into_owned()
    });
    assert!(child.wait().unwrap().success());
    let text = reader.join().unwrap();
    let lines = status_lines(&text);
    // Lines are drawn only while the target runs (it burns for 4 s, about 8 lines): at least three
    // of them must already count records, and the count must grow between them (the source
    // flushes every 250 ms). Before the fix the count stayed 0 until the last line.
    let counted: Vec<u64> = lines.iter().map(|&(_, n)| n).filter(|&n| n > 0).collect();
    let moving = counted.windows(2).filter(|w| w[1] > w[0]).count();
    assert!(
        counted.len() >= 3 && moving >= 2,
        "status lines while the target ran: {lines:?}\nterminal output: {text:?}"
    );
}
