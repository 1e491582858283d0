//! # xpuprof-fold: folded stacks from records
//!
//! Shared by the `folded` and `flamegraph` sinks. A plain library crate (no plugin root symbol),
//! so both plugin `cdylib`s link it; one plugin crate must never link another, since each exports
//! the same root-module symbol.

mod builder;
mod kernels;
mod names;
mod options;

pub use builder::{FoldedBuilder, View};
pub use names::{sanitize_frame, shorten_kernel_name};
pub use options::{FoldedOptions, GraphStacks, KernelNames};
