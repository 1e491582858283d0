//! Overhead of the eBPF source, measured side by side in one run (needs root):
//!
//! - on-CPU sampling at 99 Hz on a CPU-bound workload (fixed work): profiled / plain time;
//! - cost of one launch uprobe hit: (probed - plain) / calls, for every hit captured, for
//!   `launch_sample_every = 100`, and for the correlation trampoline.
//!
//! Run: `sudo cargo bench -p xpuprof-plugin-ebpf --bench overhead` (figures in docs/ebpf.md).

#[allow(dead_code)]
#[path = "../tests/ebpf/common.rs"]
mod common;

use std::process::Command;

use common::{profile, workload};

const RUNS: usize = 7;
const BURN_ROUNDS: &str = "400";
const LAUNCH_CALLS: u64 = 200_000;

/// Runs `argv` (plain, or under the source configured by `cfg`) and reads the nanoseconds the
/// workload wrote to $WORKLOAD_RESULT.
fn timed(cfg: Option<&str>, argv: &[&str]) -> f64 {
    let out = tempfile::NamedTempFile::new().unwrap();
    std::env::set_var("WORKLOAD_RESULT", out.path());
    match cfg {
        Some(cfg) => assert!(profile(cfg, argv).1.success()),
        None => assert!(Command::new(argv[0]).args(&argv[1..]).status().unwrap().success()),
    }
    std::fs::read_to_string(out.path()).unwrap().trim().parse().unwrap()
}

/// Minimum over alternating runs of each configuration (the least disturbed run of each).
fn side_by_side(cfgs: &[Option<&str>], argv: &[&str]) -> Vec<f64> {
    let mut best = vec![f64::INFINITY; cfgs.len()];
    for _ in 0..RUNS {
        for (i, cfg) in cfgs.iter().enumerate() {
            best[i] = best[i].min(timed(*cfg, argv));
        }
    }
    best
}

fn main() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("SKIPPED overhead benchmark: needs root");
        return;
    }
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let burn = workload("burn");
    let t =
        side_by_side(&[None, Some("sample_hz = 99"), Some("sample_hz = 999")], &[&burn, "-n", BURN_ROUNDS]);
    eprintln!("on-CPU sampling, CPU-bound workload ({BURN_ROUNDS} rounds, min of {RUNS} alternating runs):");
    eprintln!("  plain {:>8.1} ms", t[0] / 1e6);
    eprintln!("  99 Hz {:>8.1} ms   ratio {:.4}", t[1] / 1e6, t[1] / t[0]);
    eprintln!("  999 Hz{:>8.1} ms   ratio {:.4}", t[2] / 1e6, t[2] / t[0]);

    let lp = workload("launch_loop");
    let n = LAUNCH_CALLS.to_string();
    let probe = "sample_hz = 0\nlaunch_probes = [\"testLaunchKernel\"]";
    let sampled = "sample_hz = 0\nlaunch_probes = [\"testLaunchKernel\"]\nlaunch_sample_every = 100";
    let t = side_by_side(&[None, Some(probe), Some(sampled)], &[&lp, &n]);
    let per = |x: f64| x / LAUNCH_CALLS as f64;
    eprintln!("launch uprobe, {LAUNCH_CALLS} calls (min of {RUNS} alternating runs):");
    eprintln!("  plain                {:>8.1} ns/call", per(t[0]));
    eprintln!(
        "  every hit captured   {:>8.1} ns/call   cost per hit {:.2} us",
        per(t[1]),
        (per(t[1]) - per(t[0])) / 1e3
    );
    eprintln!(
        "  launch_sample_every=100 {:>5.1} ns/call   cost per hit {:.2} us",
        per(t[2]),
        (per(t[2]) - per(t[0])) / 1e3
    );
}
