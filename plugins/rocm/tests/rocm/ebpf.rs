//! `launch_stacks = "ebpf"`: the agent only calls the correlation trampoline and the eBPF
//! source's uprobe captures each launch stack with its exact correlation id (root, eBPF). The
//! eBPF source's records reach the host later than the agent's device records (its emitter
//! flushes on a timer; the agent sends everything when the program exits), so this checks that
//! every device operation still waits for, and joins, its eBPF stack.

use xpuprof_ebpf_testkit::root_or_skip;

use crate::harness::{app, xpuprof, Lib};
use crate::sdk::{check_stacks, STACKS};

#[test]
fn with_ebpf_launch_stacks_every_device_op_joins_the_stack_the_uprobe_captured() {
    if !root_or_skip("with_ebpf_launch_stacks_every_device_op_joins_the_stack_the_uprobe_captured") {
        return;
    }
    let dir = std::env::temp_dir().join(format!("xpuprof-rocm-ebpf-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let config = dir.join("xpuprof.toml");
    std::fs::write(&config, "[source.rocm]\nlaunch_stacks = \"ebpf\"\n\n[source.ebpf]\nsample_hz = 0\n")
        .unwrap();
    let config = config.display().to_string();
    let args = ["--source", "ebpf,rocm", "--sink", "folded,summary", "-c", &config];
    let r = xpuprof("sdk-ebpf-stacks", &args, &app(Lib::Sdk), &["all"], &[]);
    let _ = std::fs::remove_dir_all(&dir);
    assert!(r.stderr.contains("19 with launch stack, 0 with API call only, 0 unmatched"), "{}", r.stderr);
    check_stacks(&r, &STACKS);
}

/// The same setting in a session without the eBPF source: nobody would capture the stacks, and
/// the user is told so, with the fix (no root needed).
#[test]
fn ebpf_launch_stacks_without_the_ebpf_source_warn_with_the_fix() {
    let dir = std::env::temp_dir().join(format!("xpuprof-rocm-no-ebpf-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let config = dir.join("xpuprof.toml");
    std::fs::write(&config, "[source.rocm]\nlaunch_stacks = \"ebpf\"\n").unwrap();
    let config = config.display().to_string();
    let args = ["--source", "rocm", "--sink", "summary", "-c", &config];
    let r = xpuprof("sdk-no-ebpf", &args, &app(Lib::Sdk), &["all"], &[]);
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        r.stderr.contains(
            "launch_stacks = \"ebpf\" takes launch stacks from the eBPF source, which is not in \
             this session: kernels get no launch stacks\nhint: run with --source ebpf,rocm (root), or set \
             launch_stacks = \"agent\""
        ),
        "{}",
        r.stderr
    );
}
