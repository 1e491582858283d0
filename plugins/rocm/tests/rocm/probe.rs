//! A uprobe on Debian's real HIP runtime (`libamdhip64` 5.2): without a GPU every
//! `hipLaunchKernel` fails (`hipErrorNoDevice`), but the eBPF source's launch probe must still
//! catch each call with the stack that made it. Needs root (CI runs as root).

use xpuprof_ebpf_testkit::{profile, root_or_skip, Session};
use xpuprof_sdk::model::backend;

use crate::harness::probe;

#[test]
fn a_launch_probe_on_the_real_hip_runtime_catches_every_call_with_its_stack() {
    if !root_or_skip("a_launch_probe_on_the_real_hip_runtime_catches_every_call_with_its_stack") {
        return;
    }
    let program = probe().display().to_string();
    let (records, status) = profile("sample_hz = 0\nlaunch_probes = [\"hipLaunchKernel\"]", &[&program]);
    assert!(status.success());
    let s = Session::new(records);
    let sites = s.launch_sites();
    let stacks: Vec<String> = sites.iter().map(|l| s.names(l.stack).join(";")).collect();
    assert_eq!(sites.len(), 5, "one launch site per call: {stacks:#?}");
    let count = |tail: &str| stacks.iter().filter(|l| l.ends_with(tail)).count();
    assert_eq!(count("main;path_a;hipLaunchKernel"), 3, "{stacks:#?}");
    assert_eq!(count("main;path_b;hipLaunchKernel"), 2, "{stacks:#?}");
    for l in &sites {
        assert_eq!(l.correlation.backend, backend::UNCORRELATED);
        assert_eq!(s.string(l.api), "hipLaunchKernel");
    }
    assert!(s.losses().is_empty(), "losses: {:?}", s.losses());
}
