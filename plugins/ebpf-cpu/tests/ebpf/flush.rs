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
