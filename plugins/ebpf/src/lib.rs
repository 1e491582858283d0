//! xpuprof source plugin `ebpf`: CPU stacks of the profiled process tree from eBPF.
//!
//! - **On-CPU sampling**: a software cpu-clock perf event per CPU at `sample_hz`; the BPF
//!   program keeps samples of tracked processes and captures the user stack (frame pointers)
//!   and optionally the kernel stack.
//! - **Off-CPU time** (`offcpu = true`): `sched_switch` records when a tracked thread blocks and
//!   its stack; when it runs again, an interval of at least `offcpu_min_us` becomes an off-CPU
//!   sample weighted by the blocked nanoseconds.
//! - **Launch-site uprobes**: `launch_probes` symbols in whatever files the target maps, and the
//!   correlation trampoline `xpuprof_agent_launch` (exact correlation ids).
//! - The process tree is followed in the kernel (`sched_process_fork`); user addresses are
//!   normalised to (module, file offset) while processes are alive; the host symbolises.
//!
//! Design notes and measured costs: `docs/ebpf.md`.
//!
//! The crate shows the plugin ([`EbpfSource`], [`info`]) and what the decode benchmark drives
//! (the [`Handler`] of one perf-buffer event, a [`StackEvent`], the [`Interpreters`] and
//! [`PyStack`] of Python frames); its modules stay private.

mod bpf;
mod capture;
mod collector;
mod config;
mod decode;
mod handler;
mod machine;
mod procmaps;
mod proctree;
mod python;
mod runtime;
mod source;
mod stacks;
mod sys;
mod uprobes;

pub use decode::StackEvent;
pub use handler::Handler;
pub use python::{Interpreters, PyStack};
pub use source::EbpfSource;
use xpuprof_sdk::{Capability, PluginInfo};

/// The plugin's name (`--source ebpf`, `[source.ebpf]`).
pub const NAME: &str = "ebpf";

/// The plugin's declaration.
pub fn info() -> PluginInfo {
    PluginInfo {
        name: NAME,
        version: env!("CARGO_PKG_VERSION"),
        description: "CPU stacks from eBPF: on-CPU samples, off-CPU time, launch-site uprobes (needs root)",
        config_keys: config::keys(),
        capabilities: vec![Capability::BpfAndPerf, Capability::KernelBtf],
    }
}

xpuprof_sdk::export_plugin!(source: EbpfSource);
