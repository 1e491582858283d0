//! # xpuprof-fold: folded stacks from records
//!
//! Shared by the `folded` and `flamegraph` sinks. A plain library crate (no plugin root symbol),
//! so both plugin `cdylib`s link it; one plugin crate must never link another, since each exports
//! the same root-module symbol.

mod builder;
mod frames;
mod kernels;
mod names;
mod options;
mod pc;
mod stacks;

pub use builder::{Folded, FoldedBuilder, FrameInfo, View, PARTIAL};
pub use frames::{cut_cpp_name, is_interpreter_module, is_python_frame, short_path, FrameClass};
pub use names::{sanitize_frame, shorten_kernel_name};
pub use options::{FoldedOptions, Frames, GraphStacks, KernelNames};
pub use pc::{NO_LINE, STALL};
