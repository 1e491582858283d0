//! Integration tests of the host: the CLI contract, plugin loading failures, and the
//! correlated record stream of the scripted source through the real plugin ABI.
//!
//! The plugins are cdylibs of the workspace: run `cargo build --workspace` before
//! `cargo test --workspace` (the README's test command does both).

mod abi;
mod bad_input;
mod cabi;
mod check;
mod cli;
mod common;
mod correlation;
mod examples;
mod fixtures;
mod frozen;
mod install;
mod kit;
mod lend;
mod lifecycle;
mod merge;
mod names;
mod outdir;
mod plugins;
mod report;
mod safety;
mod terminal;
mod windows;
