//! What the `ebpf` source needs from the machine, for `xpuprof doctor` and the default
//! sources: BPF and perf-event permissions, kernel BTF and the uprobe PMU.

use std::path::Path;

use xpuprof_sdk::{Capability, MachineCheck};

/// CAP_PERFMON, CAP_BPF and CAP_SYS_ADMIN: bit numbers in the capability sets.
const CAP_PERFMON: u32 = 38;
const CAP_BPF: u32 = 39;
const CAP_SYS_ADMIN: u32 = 21;

/// The effective capabilities of this process (`CapEff` of `/proc/self/status`).
fn cap_eff() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| s.lines().find_map(|l| l.strip_prefix("CapEff:")).map(|h| h.trim().to_owned()))
        .and_then(|h| u64::from_str_radix(&h, 16).ok())
        .unwrap_or(0)
}

/// The checks of both capabilities the source declares.
pub fn checks() -> Vec<MachineCheck> {
    vec![permissions(), kernel()]
}

/// Root, or CAP_BPF and CAP_PERFMON.
fn permissions() -> MachineCheck {
    let caps = cap_eff();
    let has = |bit: u32| caps & (1u64 << bit) != 0;
    if has(CAP_SYS_ADMIN) || (has(CAP_BPF) && has(CAP_PERFMON)) {
        let paranoid = std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid").unwrap_or_default();
        MachineCheck::ok(
            Capability::BpfAndPerf,
            format!(
                "CAP_BPF+CAP_PERFMON or CAP_SYS_ADMIN present; perf_event_paranoid = {}",
                paranoid.trim()
            ),
        )
    } else {
        MachineCheck::fail(
            Capability::BpfAndPerf,
            "missing: CAP_BPF and CAP_PERFMON (or CAP_SYS_ADMIN)",
            "run as root (sudo) or grant CAP_BPF and CAP_PERFMON",
        )
    }
}

/// Kernel BTF (CO-RE programs) and the uprobe PMU (launch-site probes).
fn kernel() -> MachineCheck {
    let btf = Path::new("/sys/kernel/btf/vmlinux").exists();
    let uprobes = Path::new("/sys/bus/event_source/devices/uprobe").exists();
    match (btf, uprobes) {
        (true, true) => {
            MachineCheck::ok(Capability::KernelBtf, "/sys/kernel/btf/vmlinux present; uprobes supported")
        }
        (false, _) => MachineCheck::fail(
            Capability::KernelBtf,
            "missing /sys/kernel/btf/vmlinux",
            "use a kernel built with CONFIG_DEBUG_INFO_BTF=y",
        ),
        (true, false) => MachineCheck::fail(
            Capability::KernelBtf,
            "no uprobe PMU",
            "use a kernel built with CONFIG_UPROBE_EVENTS=y",
        ),
    }
}
