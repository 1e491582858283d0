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

#[test]
fn kernel_stacks_are_added_below_the_user_stack_when_asked() {
    if !root_or_skip("kernel_stacks_are_added_below_the_user_stack_when_asked") {
        return;
    }
    let cfg = "offcpu = true\noffcpu_min_us = 5000\nsample_hz = 0\nkernel_stacks = true";
    let (records, status) = profile(cfg, &[&workload("block")]);
    assert!(status.success());
    let s = Session::new(records);
    let folded = s.folded(SampleKind::OffCpu);
    // Kernel frames are innermost: each blocked stack ends in kernel frames below the user ones.
    let sleep = folded.keys().find(|l| l.contains("sleep_path")).expect("a sleep_path stack");
    let leaf = sleep.rsplit(';').next().unwrap();
    assert!(leaf.starts_with("[k]"), "leaf of {sleep} is not a kernel frame");
}
