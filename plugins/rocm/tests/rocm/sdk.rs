//! The rocprofiler-sdk path: the SDK test double configures the real agent through its
//! `rocprofiler_configure`, fires HIP API callbacks from the workload's calls on two threads,
//! code-object and roctx callbacks, and fills a DISCARD buffer with dispatch, copy, allocation,
//! scratch and retirement records in CLOCK_BOOTTIME.

use xpuprof_testkit::golden;

use xpuprof_testkit::outputs::{device_lines, summary_kernels};

use crate::harness::{run, Lib, Run};

/// Every GPU line of the folded profile under the exact call path that launched it.
pub fn check_stacks(r: &Run, expect: &[(&str, &str)]) {
    let folded = r.folded();
    for (leaf, stack) in expect {
        let line =
            folded.iter().find(|l| l.contains(leaf)).unwrap_or_else(|| panic!("no {leaf} in {folded:#?}"));
        assert!(line.contains(stack), "{leaf} is not under {stack}: {line}");
    }
    assert!(!folded.iter().any(|l| l.contains("unknown launch site")), "{folded:#?}");
}

/// The launching call path of every kind of work `app all` does.
pub const STACKS: [(&str, &str); 9] = [
    ("[GPU_Kernel]saxpy", "start_thread;worker;launch_saxpy;hipLaunchKernel;"),
    ("[GPU_Kernel]reduce", "start_thread;worker;launch_reduce;hipLaunchKernel;"),
    ("[GPU_Kernel]graph_a", ";main;run_all;launch_graph;hipGraphLaunch;"),
    ("[GPU_Kernel]graph_b", ";main;run_all;launch_graph;hipGraphLaunch;"),
    ("[GPU_Kernel]graph_c", ";main;run_all;launch_graph;hipGraphLaunch;"),
    ("[GPU_Kernel]spill", ";main;run_all;launch_spill;hipLaunchKernel;"),
    ("[GPU_Memcpy]HtoD", ";main;run_all;copy_in;hipMemcpy;"),
    ("[GPU_Memcpy]DtoH", ";main;run_all;copy_out;hipMemcpy;"),
    ("[GPU_Other]scratch_alloc", ";main;run_all;launch_spill;hipLaunchKernel;"),
];

/// roctx: the range around the work and the marker inside it.
pub fn check_markers(events: &[serde_json::Value]) {
    let named = |n: &str, ph: &str| events.iter().filter(|e| e["name"] == n && e["ph"] == ph).count();
    assert_eq!((named("phase", "b"), named("phase", "e")), (1, 1), "the roctx range");
    assert_eq!(named("checkpoint", "i"), 1, "the roctx marker");
}

#[test]
fn kernels_copies_memory_and_scratch_join_their_exact_launch_stacks() {
    let r = run("sdk-all", Lib::Sdk, "all", &[]);
    check_stacks(&r, &STACKS);
    let folded = r.folded();
    for (leaf, stack) in
        [("[GPU_Alloc]", ";main;run_all;hipMalloc;"), ("[GPU_Free]", ";main;run_all;hipFree;")]
    {
        let line =
            folded.iter().find(|l| l.contains(leaf)).unwrap_or_else(|| panic!("no {leaf} in {folded:#?}"));
        assert!(line.contains(stack), "{leaf} is not under {stack}: {line}");
    }
    assert!(r.stderr.contains("19 with launch stack, 0 with API call only, 0 unmatched"), "{}", r.stderr);
    assert!(r.stderr.contains("losses: none"), "{}", r.stderr);
    // Every launch-class call's id was retired by the SDK and released at once: 2 hipMalloc,
    // 2 hipMemcpy, 6 hipLaunchKernel, 2 hipGraphLaunch, 2 hipFree.
    assert!(
        r.stderr.contains("launches released when their backend retired the correlation id: 14"),
        "{}",
        r.stderr
    );
    assert!(
        r.stderr.contains("leaks: none") || !r.stderr.contains("leaks:"),
        "every allocation was freed: {}",
        r.stderr
    );
    golden::check("sdk.folded", &(folded.join("\n") + "\n"));
    let events = r.chrome();
    golden::check("sdk.chrome.txt", &device_lines(&events));
    check_markers(&events);
    golden::check("sdk.summary-kernels.txt", &summary_kernels(&r.summary()));
}

#[test]
fn a_graph_launch_joins_every_node_one_to_many() {
    let r = run("sdk-graph", Lib::Sdk, "all", &[]);
    let events = r.chrome();
    // Two launches of a three-node graph: six kernels, each joined to its hipGraphLaunch, the
    // three nodes of one launch to the same call.
    let nodes: Vec<&serde_json::Value> = events
        .iter()
        .filter(|e| e["ph"] == "X" && e["name"].as_str().is_some_and(|n| n.starts_with("graph_")))
        .collect();
    assert_eq!(nodes.len(), 6, "{nodes:#?}");
    // The launch arrow's id (`bind_id`) is the same for the work of one launch.
    let mut launch: Vec<String> = nodes.iter().map(|e| e["bind_id"].to_string()).collect();
    launch.sort();
    launch.dedup();
    assert_eq!(launch.len(), 2, "two launches, three nodes each: {nodes:#?}");
    let folded = r.folded();
    for n in ["graph_a", "graph_b", "graph_c"] {
        let line = folded
            .iter()
            .find(|l| l.ends_with(&format!("[GPU_Kernel]{n} 500")))
            .unwrap_or_else(|| panic!("{folded:#?}"));
        assert!(line.contains(";launch_graph;hipGraphLaunch;"), "{line}");
    }
}

#[test]
fn discarded_records_are_counted_as_losses() {
    // The double's buffer holds 8 records until the agent flushes at exit: of 10 dispatches and
    // 10 retirements (interleaved), 12 are dropped under the DISCARD policy.
    let r = run("sdk-drops", Lib::Sdk, "drops", &[("XPUPROF_TEST_SDK_CAPACITY", "8")]);
    assert!(r.stderr.contains("rocm tracing library dropped records: 12"), "{}", r.stderr);
    assert!(r.stderr.contains("4 with launch stack, 0 with API call only, 0 unmatched"), "{}", r.stderr);
    let folded = r.folded();
    assert_eq!(folded.len(), 1, "{folded:#?}");
    assert!(
        folded[0].ends_with(";main;launch_many;launch_saxpy;hipLaunchKernel;[GPU_Kernel]saxpy 8000"),
        "{folded:#?}"
    );
}

#[test]
fn an_sdk_older_than_1_0_is_refused_with_the_reason() {
    // SDK 0.x (ROCm 6.2 to 6.4) numbers its buffer kinds differently: the agent must not read
    // its records as 1.x ones. The program runs untraced and the user is told why.
    let r = run("sdk-old", Lib::Sdk, "drops", &[("XPUPROF_TEST_SDK_VERSION", "0.5.0")]);
    assert!(
        r.stderr.contains("is rocprofiler-sdk 0.5.0: xpuprof reads the 1.x record layouts"),
        "{}",
        r.stderr
    );
    assert!(r.stderr.contains("api = \"roctracer\""), "the hint: {}", r.stderr);
    assert!(r.stderr.contains("no ROCm process was traced"), "{}", r.stderr);
}
