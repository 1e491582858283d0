//! # `flamegraph` sink
//!
//! Writes interactive flame graphs (hover for details, click to zoom, Ctrl+F to search) rendered
//! with inferno from the same folded view as the `folded` sink. By default (`view = "split"`)
//! `<out>/flamegraph.svg` is the GPU view — device time under the CPU stacks that launched it —
//! and `<out>/flamegraph.cpu.svg` the CPU view beside it, each scaled on its own, so GPU work is
//! never a sliver next to seconds of CPU samples. GPU frames get their own colours: kernels
//! green, copies blue, memsets purple; marker frames (`[unknown launch site]`, `[off-cpu]`) grey.
//! Kernel frames show the short kernel name; the tooltip, the details line and the search hold
//! the full name and the devices it ran on.

/// The folded view, shared with the `folded` sink through the `xpuprof-fold` library crate.
pub use xpuprof_fold as fold;
mod render;
mod sink;

pub use render::{render, RenderOptions};
pub use sink::{graphs, FlamegraphSink, Graph, GraphView};

xpuprof_sdk::export_plugin!(sink: FlamegraphSink);
