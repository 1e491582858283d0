//! The roctracer path (ROCm before 6.2): the fake runtime loads the agent through
//! `HSA_TOOLS_LIB` and calls its `OnLoad`, as ROCr does; no librocprofiler-register is mapped, so
//! the agent takes roctracer from the process (the roctracer test double) and gets HIP API
//! callbacks and HIP activity records on ROCr's system clock (CLOCK_MONOTONIC_RAW here).

use xpuprof_testkit::golden;

use xpuprof_testkit::outputs::{device_lines, summary_kernels};

use crate::harness::{run, Lib};
use crate::sdk::{check_markers, check_stacks, STACKS};

#[test]
fn kernels_and_copies_join_their_exact_launch_stacks() {
    let r = run("roctracer-all", Lib::Roctracer, "all", &[]);
    // roctracer has no allocation or scratch records.
    check_stacks(&r, &STACKS[..8]);
    assert!(r.stderr.contains("14 with launch stack, 0 with API call only, 0 unmatched"), "{}", r.stderr);
    assert!(r.stderr.contains("losses: none"), "{}", r.stderr);
    golden::check("roctracer.folded", &(r.folded().join("\n") + "\n"));
    let events = r.chrome();
    golden::check("roctracer.chrome.txt", &device_lines(&events));
    check_markers(&events);
    golden::check("roctracer.summary-kernels.txt", &summary_kernels(&r.summary()));
}
