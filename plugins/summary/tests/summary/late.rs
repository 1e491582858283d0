//! Device records that arrive late and out of order (streams, buffers and the correlator's wait
//! interleave them): busy time and idle gaps must be exactly those of the union of the kernel
//! intervals, computed here independently (sort everything, merge), whatever the order and
//! however small the merge map is.

use xpuprof_plugin_summary::config::SummaryConfig;
use xpuprof_plugin_summary::SummarySink;
use xpuprof_sdk::model::*;
use xpuprof_sdk::{Logger, SessionInfo};

/// Idle gap threshold of these runs, ns.
const THRESHOLD: u64 = 20_000;

/// Kernels of two devices (device, start, end): runs of back-to-back kernels on two streams
/// that overlap, with holes between runs from 1 µs to 2 ms.
fn kernels(n: u64, seed: u64) -> Vec<(u32, u64, u64)> {
    let mut x = seed;
    let mut rnd = move |m: u64| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x % m
    };
    let mut out = Vec::new();
    for device in 1..=2u32 {
        let mut t = 1_000_000u64;
        for _ in 0..n {
            let run = 1 + rnd(6);
            for _ in 0..run {
                let d = 500 + rnd(5_000);
                out.push((device, t, t + d));
                // A kernel of the other stream, overlapping this one now and then.
                if rnd(4) == 0 {
                    out.push((device, t + d / 2, t + d + rnd(3_000)));
                }
                t += d + rnd(300);
            }
            t += 1_000 + rnd(2_000_000);
        }
    }
    out
}

/// Moves every third record far from its place: late by up to the whole run.
fn scramble(v: &mut [(u32, u64, u64)], seed: u64) {
    let mut x = seed;
    for i in (0..v.len()).step_by(3) {
        x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        let j = (x >> 33) as usize % v.len();
        v.swap(i, j);
    }
}

/// The union of one device's intervals, the plain way.
fn union(kernels: &[(u32, u64, u64)], device: u32) -> Vec<(u64, u64)> {
    let mut v: Vec<(u64, u64)> = kernels.iter().filter(|k| k.0 == device).map(|k| (k.1, k.2)).collect();
    v.sort_unstable();
    let mut out: Vec<(u64, u64)> = Vec::new();
    for (s, e) in v {
        match out.last_mut() {
            Some(p) if s <= p.1 => p.1 = p.1.max(e),
            _ => out.push((s, e)),
        }
    }
    out
}

fn records(kernels: &[(u32, u64, u64)]) -> Vec<Record> {
    let mut r = vec![Record::Str(StrDef::default().id(StrId(1)).text("k".into()))];
    for d in 1..=2u32 {
        r.push(Record::Device(DeviceDef::default().id(DeviceId(d)).index(d - 1)));
    }
    r.extend(kernels.iter().map(|&(d, s, e)| {
        Record::DeviceOp(
            DeviceOp::default()
                .kind(DeviceOpKind::Kernel)
                .pid(1)
                .device(DeviceId(d))
                .start(s)
                .end(e)
                .name(StrId(1)),
        )
    }));
    r
}

fn report(kernels: &[(u32, u64, u64)], timeline_intervals: usize) -> xpuprof_plugin_summary::Summary {
    let cfg = SummaryConfig {
        idle_gap_threshold_ns: THRESHOLD,
        timeline_intervals,
        digest: false,
        ..SummaryConfig::default()
    };
    let mut s = SummarySink::new(cfg, SessionInfo::default(), Logger::stderr());
    for batch in records(kernels).chunks(777) {
        s.add(batch);
    }
    s.report()
}

#[test]
fn busy_time_and_gaps_are_those_of_the_exact_union_whatever_the_arrival_order() {
    let mut input = kernels(3_000, 0x5eed);
    scramble(&mut input, 42);
    for cap in [1_024, 65_536] {
        let r = report(&input, cap);
        for (i, d) in r.devices.iter().enumerate() {
            let pieces = union(&input, i as u32 + 1);
            let busy: u64 = pieces.iter().map(|(s, e)| e - s).sum();
            assert_eq!(d.kernel_busy_ns, busy, "cap {cap}, device {i}");
            assert_eq!(d.busy_intervals, pieces.len() as u64);
            let mut gaps: Vec<(u64, u64)> =
                pieces.windows(2).map(|w| (w[0].1, w[1].0)).filter(|(s, e)| e - s >= THRESHOLD).collect();
            assert_eq!(d.idle_gaps, gaps.len() as u64, "cap {cap}, device {i}");
            assert_eq!(d.idle_gap_total_ns, gaps.iter().map(|(s, e)| e - s).sum::<u64>());
            // The largest five, longest first (ties: the earlier).
            gaps.sort_by_key(|&(s, e)| (std::cmp::Reverse(e - s), s));
            let largest: Vec<(u64, u64)> = d.largest_gaps.iter().map(|g| (g.start_ns, g.end_ns)).collect();
            assert_eq!(largest, gaps[..5], "cap {cap}, device {i}");
            if cap == 1_024 {
                assert!(d.late_ops > 0, "the small map must have sent records to the late list");
            }
        }
    }
}

#[test]
fn idle_gaps_never_contain_a_kernel() {
    let mut input = kernels(2_000, 7);
    scramble(&mut input, 9);
    let r = report(&input, 1_024);
    for (i, d) in r.devices.iter().enumerate() {
        for g in &d.largest_gaps {
            let inside = input.iter().filter(|k| k.0 == i as u32 + 1).find(|k| {
                k.1 < g.end_ns && k.2 > g.start_ns || (k.1 == k.2 && k.1 > g.start_ns && k.1 < g.end_ns)
            });
            assert_eq!(inside, None, "gap {}..{} on device {i} holds a kernel", g.start_ns, g.end_ns);
        }
    }
}

#[test]
fn busy_time_inside_capture_windows_is_per_window_and_clipped() {
    // Two windows; a kernel across the first one's end and a hole between them.
    let kernels = [(1u32, 100, 200), (1, 900, 1_100), (1, 5_200, 5_300), (1, 5_500, 5_600)];
    let mut recs = records(&kernels);
    for (s, e) in [(0, 1_000), (5_000, 6_000)] {
        recs.push(Record::Window(CaptureWindow::default().start(s).end(e).opener(WindowOpener::Trigger)));
    }
    let cfg = SummaryConfig { idle_gap_threshold_ns: 100, digest: false, ..SummaryConfig::default() };
    let mut s = SummarySink::new(cfg, SessionInfo::default(), Logger::stderr());
    s.add(&recs);
    let r = s.report();
    assert_eq!(r.session.duration_ns, 2_000);
    let d = &r.devices[0];
    assert_eq!((d.kernel_busy_ns, d.busy_pct), (400, 20.0));
    let w: Vec<(u64, f64)> = d.windows.iter().map(|w| (w.busy_ns, w.busy_pct)).collect();
    assert_eq!(w, [(200, 20.0), (200, 20.0)]);
    // 1100..5200 lies between the windows: not watched, not a gap.
    let gaps: Vec<(u64, u64)> = d.largest_gaps.iter().map(|g| (g.start_ns, g.end_ns)).collect();
    assert_eq!(gaps, [(200, 900), (5_300, 5_500)]);
}
