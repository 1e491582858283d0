//! On-CPU sampling: known functions in a known ratio; short-lived children.

use xpuprof_sdk::model::{Record, SampleKind};

use crate::common::{profile, profile_with_cpu_time, root_or_skip, workload, Session};

#[test]
fn cpu_samples_show_known_functions_in_their_ratio() {
    if !root_or_skip("cpu_samples_show_known_functions_in_their_ratio") {
        return;
    }
    let burn = workload("burn");
    // Fixed work (about 2 s of CPU on an idle machine), so the number of samples does not depend
    // on how busy the machine is; 8 long rounds (each call tens of ms), so the sampling period
    // cannot alias with a round and favour one function (a 3 ms round once gave 6.2:1).
    let steal_before = steal_ms();
    let (records, status, cpu_ns) = profile_with_cpu_time("sample_hz = 499", &[&burn, "-n", "8", "60"]);
    let steal = steal_ms().saturating_sub(steal_before);
    assert!(status.success());
    let s = Session::new(records);
    let three = s.weight_with(SampleKind::OnCpu, "burn_three");
    let one = s.weight_with(SampleKind::OnCpu, "burn_one");
    let folded = s.folded(SampleKind::OnCpu);
    eprintln!("folded: {folded:#?}");
    // About 2 s of CPU at 499 Hz: ~1000 samples, ~750 vs ~250. Accept 3:1 within +-30%.
    assert!(one > 0, "no samples in burn_one");
    let ratio = three as f64 / one as f64;
    assert!((2.1..=3.9).contains(&ratio), "burn_three:burn_one = {ratio:.2}, expected about 3");
    // The samples have the full call path: main calls both.
    assert!(folded.keys().any(|l| l.ends_with("main;burn_three")), "no main;burn_three stack");
    // Weights are the sampling period in ns; their sum is the CPU time the kernel accounted.
    let total = folded.values().sum::<u64>() as f64;
    let cpu = cpu_ns as f64;
    eprintln!("on-CPU weight / CPU time: {:.3}", total / cpu);
    // What a loaded machine can do to the sampler, named when the weight misses: the kernel's
    // sample-rate ceiling (lowered when perf interrupts take long; samples above it in a tick
    // are throttled, uncounted) and the time the hypervisor took the virtual CPUs away.
    let rate = std::fs::read_to_string("/proc/sys/kernel/perf_event_max_sample_rate").unwrap_or_default();
    assert!(
        (0.75 * cpu..=1.25 * cpu).contains(&total),
        "on-CPU weight {total} ns vs CPU time {cpu} ns; losses: {:?}; kernel.perf_event_max_sample_rate {}; \
         steal time during the run {steal} ms",
        s.losses(),
        rate.trim()
    );
}

/// Time the hypervisor ran something else on this machine's virtual CPUs, all CPUs (`steal` of
/// /proc/stat, in ms); 0 where it is not reported.
fn steal_ms() -> u64 {
    let stat = std::fs::read_to_string("/proc/stat").unwrap_or_default();
    let cpu = stat.lines().next().unwrap_or_default();
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as u64;
    cpu.split_whitespace().nth(8).and_then(|t| t.parse::<u64>().ok()).map_or(0, |t| t * 1000 / hz)
}

#[test]
fn code_without_frame_pointers_shows_its_full_paths_in_their_ratio() {
    if !root_or_skip("code_without_frame_pointers_shows_its_full_paths_in_their_ratio") {
        return;
    }
    // main -> path_a1..a4 -> spin_three (3x) and main -> path_b1..b4 -> spin_one (1x), built with
    // -O2 -fomit-frame-pointer (rbp is a general register there): ~2 s of CPU in 8 rounds.
    let (records, status) = profile("sample_hz = 499", &[&workload("frameless"), "8", "60"]);
    assert!(status.success());
    let s = Session::new(records);
    let folded = s.folded(SampleKind::OnCpu);
    eprintln!("folded: {folded:#?}");
    let a = "_start;__libc_start_main_impl;__libc_start_call_main;main;path_a1;path_a2;path_a3;path_a4;spin_three";
    let b =
        "_start;__libc_start_main_impl;__libc_start_call_main;main;path_b1;path_b2;path_b3;path_b4;spin_one";
    let (three, one) = (folded.get(a).copied().unwrap_or(0), folded.get(b).copied().unwrap_or(0));
    assert!(one > 0 && three > 0, "the full paths are missing: {folded:#?}");
    let ratio = three as f64 / one as f64;
    assert!((2.1..=3.9).contains(&ratio), "spin_three:spin_one = {ratio:.2}, expected about 3");
    // Nearly every sample has one of the two full paths (a few land in main's loop or exit).
    let total = folded.values().sum::<u64>() as f64;
    assert!((three + one) as f64 >= 0.95 * total, "full paths: {} of {total} ns: {folded:#?}", three + one);
}

#[test]
fn short_lived_child_of_a_shell_is_sampled_and_symbolised() {
    if !root_or_skip("short_lived_child_of_a_shell_is_sampled_and_symbolised") {
        return;
    }
    let cmd = format!("{} 0.5; true", workload("burn"));
    let (records, status) = profile("sample_hz = 199", &["/bin/sh", "-c", &cmd]);
    assert!(status.success());
    let s = Session::new(records);
    let child_pids: Vec<u32> = s
        .records
        .iter()
        .filter_map(|r| if let Record::Process(p) = r { Some(p.pid) } else { None })
        .collect();
    let three = s.weight_with(SampleKind::OnCpu, "burn_three");
    assert!(three > 0, "the child was not sampled; processes seen: {child_pids:?}");
    let burn_proc =
        s.records.iter().any(|r| matches!(r, Record::Process(p) if s.string(p.command).contains("burn")));
    assert!(burn_proc, "no ProcessDef names the burn child");
}

#[test]
fn every_thread_is_sampled_with_its_own_name_and_stack() {
    if !root_or_skip("every_thread_is_sampled_with_its_own_name_and_stack") {
        return;
    }
    let (records, status) = profile("sample_hz = 199", &[&workload("threads"), "1"]);
    assert!(status.success());
    let s = Session::new(records);
    let tids_in = |f: &str| -> std::collections::HashSet<u32> {
        let has = |r: &&Record| matches!(r, Record::CpuSample(c) if s.names(c.stack).iter().any(|n| n == f));
        s.records.iter().filter(has).map(|r| if let Record::CpuSample(c) = r { c.tid } else { 0 }).collect()
    };
    let (a, b) = (tids_in("worker_a"), tids_in("worker_b"));
    assert_eq!((a.len(), b.len()), (1, 1), "each worker runs on its own thread: {a:?} {b:?}");
    assert_ne!(a, b);
    let defined: Vec<u32> =
        s.records.iter().filter_map(|r| if let Record::Thread(t) = r { Some(t.tid) } else { None }).collect();
    assert!(a.union(&b).all(|t| defined.contains(t)), "ThreadDef for each sampled thread");
}
