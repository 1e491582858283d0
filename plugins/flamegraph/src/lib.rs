//! # `flamegraph` sink
//!
//! Writes `<out>/flamegraph.svg`: an interactive flame graph (hover for details, click to zoom,
//! Ctrl+F to search) rendered with inferno from the same folded view as the `folded` sink — CPU
//! stacks, with GPU work under the stack that launched it. GPU frames get their own colours:
//! kernels green, copies blue, memsets purple; marker frames (`[unknown launch site]`,
//! `[off-cpu]`) grey.

/// The folded view, shared with the `folded` sink. It is compiled into this crate rather than
/// linked from `xpuprof-plugin-folded`: both are plugin libraries exporting the same root-module
/// symbol, so neither may link the other.
#[path = "../../folded/src/fold/mod.rs"]
pub mod fold;
mod render;
mod sink;

pub use render::{render, RenderOptions};
pub use sink::FlamegraphSink;

xpuprof_sdk::export_plugin!(sink: FlamegraphSink);
