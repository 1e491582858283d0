//! Building folded stacks from records: shared by the `folded` and `flamegraph` sinks.
//!
//! This module is compiled into both plugin crates (the flamegraph crate includes it with a
//! `#[path]` attribute) rather than linked from one into the other: each plugin `cdylib` exports
//! the same root-module symbol, so one plugin crate must never link another.

mod builder;
mod defs;
mod names;
mod options;

pub use builder::{FoldedBuilder, View};
pub use names::{sanitize_frame, shorten_kernel_name};
pub use options::{FoldedOptions, KernelNames};
