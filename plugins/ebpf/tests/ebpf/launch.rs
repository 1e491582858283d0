//! Launch-site uprobes: exact stacks once per call; the trampoline's exact ids.

use xpuprof_sdk::model::backend;

use crate::common::{profile, profile_in_session, root_or_skip, workload, Session};

/// The workload calls at once and exits about a millisecond after exec, before any maps rescan:
/// its frames normalise from the mappings the kernel sends at its exit.
const LIVE_MS: &str = "0";

#[test]
fn uprobe_captures_each_launch_with_its_call_path() {
    if !root_or_skip("uprobe_captures_each_launch_with_its_call_path") {
        return;
    }
    let cfg = "sample_hz = 0\nlaunch_probes = [\"testLaunchKernel\"]";
    let (records, status) = profile(cfg, &[&workload("launch"), LIVE_MS]);
    assert!(status.success());
    let s = Session::new(records);
    let sites = s.launch_sites();
    let stacks: Vec<String> = sites.iter().map(|l| s.names(l.stack).join(";")).collect();
    eprintln!("launch stacks: {stacks:#?}");
    assert_eq!(sites.len(), 5, "one launch site per call");
    let count = |tail: &str| stacks.iter().filter(|l| l.ends_with(tail)).count();
    assert_eq!(count("main;path_a;testLaunchKernel"), 3);
    assert_eq!(count("main;path_b;testLaunchKernel"), 2);
    for l in &sites {
        assert_eq!(l.correlation.backend, backend::UNCORRELATED);
        assert_eq!(s.string(l.api), "testLaunchKernel");
    }
    assert!(s.losses().is_empty(), "losses: {:?}", s.losses());
    let mut ids: Vec<u64> = sites.iter().map(|l| l.correlation.id).collect();
    ids.dedup();
    assert_eq!(ids.len(), 5, "each uncorrelated launch gets its own id");
}

#[test]
fn trampoline_returns_the_exact_correlation_ids() {
    if !root_or_skip("trampoline_returns_the_exact_correlation_ids") {
        return;
    }
    let cfg = "sample_hz = 0\nlaunch_stacks_from_trampoline = true";
    let (records, status) = profile(cfg, &[&workload("launch"), LIVE_MS]);
    assert!(status.success());
    let s = Session::new(records);
    let sites = s.launch_sites();
    let got: Vec<(u32, u64)> = sites.iter().map(|l| (l.correlation.backend, l.correlation.id)).collect();
    assert_eq!(got, [(0x1234, 1001), (0x1234, 1002), (0x1234, 1003)]);
    for l in &sites {
        let stack = s.names(l.stack).join(";");
        assert!(stack.ends_with("main;agent_api_entry;xpuprof_agent_launch"), "stack {stack}");
    }
    assert!(s.losses().is_empty(), "losses: {:?}", s.losses());
}

/// The correlation ids of the trampoline's launch sites when `launch_agent` (trampoline in
/// `libxpuprof_testagent.so`) or `launch` (in `liblaunchtest.so`) runs in a session of `sources`.
fn trampoline_ids(cfg: &str, sources: &[&str], program: &str) -> Vec<u64> {
    let (records, status, _) = profile_in_session(cfg, sources, &[&workload(program), LIVE_MS]);
    assert!(status.success());
    let s = Session::new(records);
    assert!(s.losses().is_empty(), "losses: {:?}", s.losses());
    s.launch_sites().iter().filter(|l| l.correlation.backend == 0x1234).map(|l| l.correlation.id).collect()
}

#[test]
fn trampoline_unset_probes_xpuprofs_agent_libraries_when_another_source_runs() {
    if !root_or_skip("trampoline_unset_probes_xpuprofs_agent_libraries_when_another_source_runs") {
        return;
    }
    // docs/ebpf.md: unset = on whenever another source is in the session, in libxpuprof_* only.
    let cfg = "sample_hz = 0";
    assert_eq!(trampoline_ids(cfg, &["ebpf", "cupti"], "launch_agent"), [1001, 1002, 1003]);
    assert_eq!(trampoline_ids(cfg, &["ebpf", "cupti"], "launch"), [0u64; 0], "not an agent library");
}

#[test]
fn trampoline_unset_is_off_when_ebpf_runs_alone_and_false_is_off() {
    if !root_or_skip("trampoline_unset_is_off_when_ebpf_runs_alone_and_false_is_off") {
        return;
    }
    assert_eq!(trampoline_ids("sample_hz = 0", &["ebpf"], "launch_agent"), [0u64; 0]);
    let off = "sample_hz = 0\nlaunch_stacks_from_trampoline = false";
    assert_eq!(trampoline_ids(off, &["ebpf", "cupti"], "launch_agent"), [0u64; 0]);
    let everywhere = "sample_hz = 0\nlaunch_stacks_from_trampoline = true";
    assert_eq!(trampoline_ids(everywhere, &["ebpf"], "launch"), [1001, 1002, 1003]);
}

#[test]
fn launch_sampling_reports_what_it_skipped() {
    if !root_or_skip("launch_sampling_reports_what_it_skipped") {
        return;
    }
    let cfg = "sample_hz = 0\nlaunch_probes = [\"testLaunchKernel\"]\nlaunch_sample_every = 2";
    let (records, status) = profile(cfg, &[&workload("launch"), LIVE_MS]);
    assert!(status.success());
    let s = Session::new(records);
    // 5 calls on one thread, every 2nd kept: calls 0, 2, 4.
    assert_eq!(s.launch_sites().len(), 3);
    let skipped: u64 =
        s.losses().iter().filter(|(c, _)| c == "launch stacks skipped by sampling").map(|(_, n)| n).sum();
    assert_eq!(skipped, 2, "losses: {:?}", s.losses());
}

#[test]
fn uprobe_finds_the_symbol_in_the_executable_itself() {
    if !root_or_skip("uprobe_finds_the_symbol_in_the_executable_itself") {
        return;
    }
    // launch_static has testLaunchKernel linked in (no shared library), like a program that
    // links the CUDA runtime statically.
    let cfg = "sample_hz = 0\nlaunch_probes = [\"testLaunchKernel\"]";
    let (records, status) = profile(cfg, &[&workload("launch_static"), LIVE_MS]);
    assert!(status.success());
    let s = Session::new(records);
    let stacks: Vec<String> = s.launch_sites().iter().map(|l| s.names(l.stack).join(";")).collect();
    assert_eq!(
        stacks.iter().filter(|l| l.ends_with("main;path_a;testLaunchKernel")).count(),
        3,
        "{stacks:#?}"
    );
    assert_eq!(
        stacks.iter().filter(|l| l.ends_with("main;path_b;testLaunchKernel")).count(),
        2,
        "{stacks:#?}"
    );
}

#[test]
fn uprobe_follows_a_library_loaded_later_with_dlopen() {
    if !root_or_skip("uprobe_follows_a_library_loaded_later_with_dlopen") {
        return;
    }
    // The library is not linked: the probe is attached when a maps rescan (every 100 ms) sees
    // the dlopen'ed file; the workload waits 1.5 s before calling (generous: CI runs every test
    // at once on two cores).
    let lib = workload("liblaunchtest.so");
    let cfg = "sample_hz = 0\nlaunch_probes = [\"testLaunchKernel\"]";
    let (records, status) = profile(cfg, &[&workload("launch_dlopen"), &lib, "1500"]);
    assert!(status.success());
    let s = Session::new(records);
    let stacks: Vec<String> = s.launch_sites().iter().map(|l| s.names(l.stack).join(";")).collect();
    assert_eq!(stacks.len(), 4, "{stacks:#?}");
    assert!(stacks.iter().all(|l| l.ends_with("main;dl_path;testLaunchKernel")), "{stacks:#?}");
}

#[test]
fn launch_rate_limit_keeps_the_first_per_second_and_counts_the_rest() {
    if !root_or_skip("launch_rate_limit_keeps_the_first_per_second_and_counts_the_rest") {
        return;
    }
    // 1000 calls on one thread take well under a second even with the probe (~10 us a hit).
    let cfg = "sample_hz = 0\nlaunch_probes = [\"testLaunchKernel\"]\nlaunch_max_per_sec_per_thread = 10";
    let (records, status) = profile(cfg, &[&workload("launch_loop"), "1000"]);
    assert!(status.success());
    let s = Session::new(records);
    let kept = s.launch_sites().len() as u64;
    let skipped: u64 =
        s.losses().iter().filter(|(c, _)| c == "launch stacks skipped by rate limit").map(|(_, n)| n).sum();
    assert!((10..=20).contains(&kept), "kept {kept} launch stacks");
    assert_eq!(kept + skipped, 1000, "every hit is either kept or counted; losses: {:?}", s.losses());
}
