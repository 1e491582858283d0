//! The `rocm` source end to end: the real agent, wire, host decoder, correlator and sinks over
//! test doubles of rocprofiler-sdk and roctracer driven by a fake HIP runtime (no AMD GPU can run
//! here), and a uprobe on Debian's real `libamdhip64` and on the agent's trampoline.

mod ebpf;
mod harness;
mod probe;
mod roctracer;
mod sdk;
