//! # xpuprof Level Zero agent
//!
//! A shared library the `levelzero` host plugin preloads (`LD_PRELOAD`) into the profiled
//! program, with `ZE_ENABLE_TRACING_LAYER=1` so the Level Zero loader loads its tracing layer.
//! When the loader is in the process (`start.rs`) the agent calls `zeInit`, creates a tracer
//! (`zelTracerCreate`) and registers prologue/epilogue callbacks (`callbacks.rs`) on the
//! launch-class calls (kernel launches of every variant, copies, fills, barriers, command-list
//! execution), host synchronisation, and the calls that create the objects it must know
//! (`state.rs`). Launch variants the tracing layer cannot see (reached through
//! `zeDriverGetExtensionFunctionAddress`) are wrapped (`extensions.rs`).
//!
//! Level Zero has no correlation ids and no activity buffers, so the agent makes both
//! (`agent.rs`):
//! - every launch-class call gets an id and the calling thread's stack;
//! - device timing comes from timestamp events: the application's own when its pool has
//!   timestamps, else one of the agent's (`events.rs`) put in its place by the prologue (the
//!   application's event is still signalled, after ours);
//! - an immediate list runs at append: the append is the launch. A regular list is recorded
//!   once and runs at every `zeCommandQueueExecuteCommandLists`: the execute is the launch of
//!   all its work (one id, many operations), each operation keeping its append as the
//!   recording site. An execution whose timestamps were not read before the next one is
//!   counted lost, never mixed up.
//! - timestamps are read by a background thread and at synchronisation, reset and destroy
//!   points; they travel as raw device ticks with the device's tick rate, wrap width and
//!   clock pairs (`devices.rs`); the host converts them.

mod agent;
mod callbacks;
mod clock;
mod config;
mod devices;
mod events;
mod extensions;
mod start;
mod state;
mod sys;

#[used]
#[link_section = ".init_array"]
static ON_LOAD: extern "C" fn() = start::on_load;
