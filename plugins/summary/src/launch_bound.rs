//! Whether launching kernels is what keeps a device idle, with the evidence.
//!
//! A device is **launch-bound** when the threads that launch onto it spend at least as long
//! inside launch API calls as the device spends running kernels: the GPU finishes each kernel
//! before the next is issued, so it waits for the CPU. It is **GPU-bound** when it was busy at
//! least [`GPU_BOUND_PCT`] of the session, and **not launch-bound** when it is idle more but the
//! launch calls take less time than its kernels (the idle time is elsewhere: synchronisation,
//! data loading, other CPU work; the idle gaps show where). A thread that launches onto several
//! devices has its launch calls shared among them by its kernels on each; with one device, every
//! launch call counts.

use xpuprof_sdk::hash::IdMap;
use xpuprof_sdk::model::DeviceId;

use crate::collect::ThreadAgg;
use crate::fmt::ns;
use crate::report::{DeviceRow, LaunchBoundRow};

/// Busy share from which a device is GPU-bound, percent.
pub const GPU_BOUND_PCT: f64 = 80.0;

/// One row per device of `devices` (id and row), in the same order.
pub fn rows(
    devices: &[(DeviceId, &DeviceRow)],
    threads: &IdMap<(u32, u32), ThreadAgg>,
    launches: &IdMap<(u32, u32, DeviceId), u64>,
    session_ns: u64,
) -> Vec<LaunchBoundRow> {
    let mut per_thread: IdMap<(u32, u32), u64> = IdMap::default();
    for (&(pid, tid, _), n) in launches {
        *per_thread.entry((pid, tid)).or_default() += n;
    }
    devices
        .iter()
        .map(|&(id, d)| {
            let (mut calls, mut api_ns) = (0f64, 0f64);
            for (&(pid, tid), t) in threads {
                let share = if devices.len() == 1 {
                    1.0
                } else {
                    let on = launches.get(&(pid, tid, id)).copied().unwrap_or(0);
                    let all = per_thread.get(&(pid, tid)).copied().unwrap_or(0);
                    if all == 0 {
                        0.0
                    } else {
                        on as f64 / all as f64
                    }
                };
                calls += t.launch_api_calls as f64 * share;
                api_ns += t.launch_api_ns as f64 * share;
            }
            row(d, calls.round() as u64, api_ns.round() as u64, session_ns)
        })
        .collect()
}

fn row(d: &DeviceRow, calls: u64, api_ns: u64, session_ns: u64) -> LaunchBoundRow {
    let busy = d.kernel_busy_ns;
    let per_s = if session_ns == 0 { 0.0 } else { (calls as f64 * 1e9 / session_ns as f64).round() };
    let mean = api_ns.checked_div(calls).unwrap_or(0);
    let per_launch = busy.checked_div(calls).unwrap_or(0);
    let (verdict, evidence) = if calls == 0 {
        ("unknown", "no launch API calls were recorded for this device's kernels".to_owned())
    } else if d.busy_pct >= GPU_BOUND_PCT {
        (
            "gpu-bound",
            format!(
                "the GPU was busy {:.1}% of the session: its kernels, not launching, set the pace",
                d.busy_pct
            ),
        )
    } else if api_ns >= busy {
        (
            "launch-bound",
            format!(
                "launch calls took {} on the CPU against {} of GPU busy time ({calls} calls, {per_s}/s, {} each \
                 against {} of kernel time per launch): the GPU waits for launches; fewer, larger kernels \
                 (fusion, graphs) would shorten the run",
                ns(api_ns),
                ns(busy),
                ns(mean),
                ns(per_launch)
            ),
        )
    } else {
        (
            "not-launch-bound",
            format!(
                "launch calls took {} against {} of GPU busy time: launching does not explain the GPU's {:.1}% idle \
                 time; see the largest idle gaps and synchronisation",
                ns(api_ns),
                ns(busy),
                100.0 - d.busy_pct
            ),
        )
    };
    LaunchBoundRow {
        device_index: d.device_index,
        device: d.device.clone(),
        verdict,
        launch_api_calls: calls,
        launch_api_ns: api_ns,
        kernels: d.kernels,
        kernel_busy_ns: busy,
        busy_pct: d.busy_pct,
        launch_calls_per_s: per_s,
        mean_launch_api_ns: mean,
        busy_ns_per_launch: per_launch,
        evidence,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn device(index: i64, busy: u64, session: u64) -> DeviceRow {
        DeviceRow {
            device_index: index,
            device: format!("GPU {index}"),
            kernels: 1000,
            kernel_busy_ns: busy,
            busy_intervals: 1,
            session_ns: session,
            busy_pct: crate::assemble::pct(busy, session),
            idle_gap_threshold_ns: 0,
            idle_gaps: 0,
            idle_gap_total_ns: 0,
            largest_gaps: Vec::new(),
            late_ops: 0,
            windows: Vec::new(),
        }
    }

    fn thread(calls: u64, ns: u64) -> ThreadAgg {
        ThreadAgg { launch_api_calls: calls, launch_api_ns: ns, ..ThreadAgg::default() }
    }

    #[test]
    fn launch_calls_longer_than_gpu_work_make_a_device_launch_bound() {
        // The Qwen decoding run: 330k launches, 2.86 s in launch calls, 0.69 s of GPU busy time.
        let d = device(0, 690_000_000, 4_000_000_000);
        let threads: IdMap<(u32, u32), ThreadAgg> =
            [((1, 1), thread(330_000, 2_860_000_000))].into_iter().collect();
        let r = &rows(&[(DeviceId(1), &d)], &threads, &IdMap::default(), 4_000_000_000)[0];
        assert_eq!(r.verdict, "launch-bound");
        assert_eq!(
            (r.launch_api_calls, r.mean_launch_api_ns, r.launch_calls_per_s),
            (330_000, 8_666, 82_500.0)
        );
        assert!(
            r.evidence.starts_with("launch calls took 2.860 s on the CPU against 690.00 ms of GPU busy time"),
            "{}",
            r.evidence
        );
    }

    #[test]
    fn busy_devices_and_idle_ones_with_quick_launches_are_not() {
        let threads: IdMap<(u32, u32), ThreadAgg> = [((1, 1), thread(100, 1_000_000))].into_iter().collect();
        let busy = device(0, 900, 1000);
        assert_eq!(rows(&[(DeviceId(1), &busy)], &threads, &IdMap::default(), 1000)[0].verdict, "gpu-bound");
        let idle = device(0, 300_000_000, 1_000_000_000);
        assert_eq!(
            rows(&[(DeviceId(1), &idle)], &threads, &IdMap::default(), 1_000_000_000)[0].verdict,
            "not-launch-bound"
        );
        assert_eq!(
            rows(&[(DeviceId(1), &idle)], &IdMap::default(), &IdMap::default(), 1)[0].verdict,
            "unknown"
        );
    }

    #[test]
    fn a_threads_launch_calls_are_shared_among_its_devices_by_its_kernels() {
        let (a, b) = (device(0, 10, 1_000_000), device(1, 10, 1_000_000));
        let threads: IdMap<(u32, u32), ThreadAgg> = [((1, 1), thread(400, 4_000))].into_iter().collect();
        let launches: IdMap<(u32, u32, DeviceId), u64> =
            [((1, 1, DeviceId(1)), 300), ((1, 1, DeviceId(2)), 100)].into_iter().collect();
        let r = rows(&[(DeviceId(1), &a), (DeviceId(2), &b)], &threads, &launches, 1_000_000);
        assert_eq!((r[0].launch_api_calls, r[0].launch_api_ns), (300, 3_000));
        assert_eq!((r[1].launch_api_calls, r[1].launch_api_ns), (100, 1_000));
    }
}
