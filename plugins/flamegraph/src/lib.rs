//! # `flamegraph` sink
//!
//! Writes interactive flame graphs (hover for details, click to zoom, Ctrl+F to search) rendered
//! with inferno from the same folded view as the `folded` sink. By default (`view = "split"`)
//! `<out>/flamegraph.svg` is the GPU view — device time under the CPU stacks that launched it —
//! and `<out>/flamegraph.cpu.svg` the CPU view beside it, each scaled on its own, so GPU work is
//! never a sliver next to seconds of CPU samples. Stacks are at the user's level by default
//! (`frames = "user"`, see `xpuprof-fold`): interpreter internals and call plumbing folded away
//! (counted in the tooltip of the frame they lead to), C++ names without parameter lists, short
//! Python paths. Each kind of frame has its colours: Python pale yellow, native code warm,
//! a device runtime's or driver's frames pink, interpreter internals beige, GPU kernels green,
//! copies blue, memsets purple, marker frames (`[unknown launch site]`, `[off-cpu]`,
//! `[partial stack]`) grey. A frame's tooltip (which the details line shows and the search
//! matches) is its label's text followed by what it stands for: a kernel's full name and
//! devices, a cut C++ name's parameters, the frames folded into it.

/// The folded view, shared with the `folded` sink through the `xpuprof-fold` library crate.
pub use xpuprof_fold as fold;
mod render;
mod sink;

pub use render::{render, RenderOptions, NO_SAMPLES};
pub use sink::{graphs, FlamegraphSink, Graph, GraphView};

xpuprof_sdk::export_plugin!(sink: FlamegraphSink);
