//! # `folded` sink
//!
//! Writes `<out>/profile.folded` and, by default (`split = true`), `profile.gpu.folded` (GPU work
//! only) and `profile.cpu.folded` (CPU samples only) beside it: one line per distinct stack, `frame;frame;...;frame weight`,
//! root frame first, readable by flamegraph.pl, inferno and speedscope. GPU work hangs under the
//! CPU stack that launched it (`...;launchKernel;[GPU_Kernel]name`), weighted by device time
//! in microseconds; CPU samples are weighted by their period (or blocked time) in microseconds.
//! Every file shows the user-level view by default (`frames = "user"`: interpreter internals and
//! `nn.Module` call plumbing folded away, C++ names without parameter lists, short Python
//! paths, early-ended walks under `[partial stack]`); `frames = "all"` shows every frame.
//! The format and every option are described in `docs/formats.md`.
//!
//! The stack-building code lives in the `xpuprof-fold` crate ([`fold`]), which the `flamegraph`
//! sink uses too.

pub use xpuprof_fold as fold;
mod sink;

pub use fold::{FoldedBuilder, FoldedOptions, KernelNames, View};
pub use sink::{FoldedSink, FoldedSinkConfig};

xpuprof_sdk::export_plugin!(sink: FoldedSink);
