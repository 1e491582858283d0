//! Immediate lists: every kernel and copy under its exact launch stack, the scripted device
//! durations in the session clock, golden sink outputs, and the same through a clock wrap.

use crate::harness::{device_lines, run, Run};
use xpuprof_testkit::golden;

/// Durations in ns: multiples of the default 80 ns tick, so they are exact in device ticks.
const SCRIPT: &str = "kernel.k_small=20000;kernel.k_big=50000;kernel.k_event=8000;copy_ns=4000;fill_ns=2000";

/// The launching function of every GPU line, and nothing unjoined.
fn check_stacks(r: &Run) {
    let folded = r.folded();
    let expect = [
        ("[GPU_Kernel]k_small", ";main;launch_small;zeCommandListAppendLaunchKernel;"),
        ("[GPU_Kernel]k_big", ";main;launch_big;zeCommandListAppendLaunchKernel;"),
        ("[GPU_Kernel]k_event", ";main;launch_with_app_event;zeCommandListAppendLaunchKernel;"),
        ("[GPU_Memcpy]HtoD", ";main;copy_both_ways;zeCommandListAppendMemoryCopy;"),
        ("[GPU_Memcpy]DtoH", ";main;copy_both_ways;zeCommandListAppendMemoryCopy;"),
        ("[GPU_Memset]", ";main;copy_both_ways;zeCommandListAppendMemoryFill;"),
    ];
    for (leaf, stack) in expect {
        let line =
            folded.iter().find(|l| l.contains(leaf)).unwrap_or_else(|| panic!("no {leaf} in {folded:#?}"));
        assert!(line.contains(stack), "{leaf} is not under {stack}: {line}");
    }
    assert!(!folded.iter().any(|l| l.contains("unknown launch site")), "{folded:#?}");
    assert!(r.stderr.contains("8 with launch stack, 0 with API call only, 0 unmatched"), "{}", r.stderr);
    assert!(r.stderr.contains("losses: none"), "{}", r.stderr);
}

#[test]
fn immediate_lists_give_exact_stacks_and_scripted_durations() {
    let r = run("immediate", SCRIPT, "immediate", &[]);
    check_stacks(&r);
    golden::check("immediate.folded", &(r.folded().join("\n") + "\n"));
    let events = r.chrome();
    golden::check("immediate.chrome.txt", &device_lines(&events));
    let flows = events.iter().filter(|e| e.get("flow_in").is_some()).count();
    assert_eq!(flows, 8, "one launch flow per device operation");
    let summary: serde_json::Value = serde_json::from_str(&r.file("summary.json")).expect("summary.json");
    let kernels: Vec<(String, u64, u64)> = summary["kernels"]
        .as_array()
        .expect("kernels")
        .iter()
        .map(|k| {
            // To 0.1 µs, like `device_lines`.
            let total = (k["time"]["total_ns"].as_u64().unwrap_or(0) + 50) / 100 * 100;
            (k["name"].as_str().unwrap_or("").to_owned(), k["launches"].as_u64().unwrap_or(0), total)
        })
        .collect();
    golden::check("immediate.summary-kernels.txt", &format!("{kernels:#?}\n"));
}

#[test]
fn a_kernel_timestamp_wrap_keeps_the_durations() {
    // 1 tick = 1 ns and 32-bit kernel timestamps. The engine has 1 s of work queued when the
    // driver starts, so the workload's commands run back to back from 1 s on, and the kernel
    // timestamps wrap 10 µs into the first of them: its end tick is below its start tick. The
    // clock pairs the agent takes at start and every 100 ms come before the wrap (the program
    // is done long before 1 s; were it slower, the wrap would only fall elsewhere), the
    // commands' other timestamps after it. A duration across the wrap once read as 0 (records
    // carry an end as its distance from the start): this run checks it does not, every time.
    let queued = 1_000_000_000u64;
    let wrap = (1u64 << 32) - queued - 10_000;
    let script = format!("{SCRIPT};tick_hz=1000000000;valid_bits=32;offset={wrap};queued_ns={queued}");
    let r = run("wrap", &script, "immediate", &[]);
    check_stacks(&r);
    golden::check("immediate.folded", &(r.folded().join("\n") + "\n"));
    golden::check("immediate.chrome.txt", &device_lines(&r.chrome()));
}
