//! # `flamegraph` sink
//!
//! Writes `<out>/flamegraph.svg`: an interactive flame graph (hover for details, click to zoom,
//! Ctrl+F to search) rendered with inferno from the same folded view as the `folded` sink — CPU
//! stacks, with GPU work under the stack that launched it. GPU frames get their own colours:
//! kernels green, copies blue, memsets purple; marker frames (`[unknown launch site]`,
//! `[off-cpu]`) grey.

/// The folded view, shared with the `folded` sink through the `xpuprof-fold` library crate.
pub use xpuprof_fold as fold;
mod render;
mod sink;

pub use render::{render, RenderOptions};
pub use sink::FlamegraphSink;

xpuprof_sdk::export_plugin!(sink: FlamegraphSink);
