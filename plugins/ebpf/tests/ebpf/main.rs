//! End-to-end tests of the eBPF source: real workloads, real BPF programs (needs root; skipped
//! with a printed reason otherwise).

use xpuprof_ebpf_testkit as common;
mod e2e;
mod flush;
mod launch;
mod offcpu;
mod python;
mod sampling;
mod windows;
