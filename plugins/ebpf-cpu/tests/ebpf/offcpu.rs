//! Off-CPU time: blocked paths and durations.

use xpuprof_sdk::model::SampleKind;

use crate::common::{profile, root_or_skip, workload, Session};

#[test]
fn offcpu_shows_the_blocking_paths_with_their_blocked_time() {
    if !root_or_skip("offcpu_shows_the_blocking_paths_with_their_blocked_time") {
        return;
    }
    let (records, status) =
        profile("offcpu = true\noffcpu_min_us = 5000\nsample_hz = 0", &[&workload("block")]);
    assert!(status.success());
    let s = Session::new(records);
    eprintln!("off-CPU folded: {:#?}", s.folded(SampleKind::OffCpu));
    // 20 waits of 25 ms on each path: 500 ms each.
    for path in ["sleep_path", "futex_path"] {
        let ms = s.weight_with(SampleKind::OffCpu, path) as f64 / 1e6;
        assert!((450.0..=700.0).contains(&ms), "{path}: {ms:.1} ms off-CPU, expected about 500");
    }
    assert_eq!(s.weight_with(SampleKind::OnCpu, "main"), 0, "sample_hz = 0 means no on-CPU samples");
}
