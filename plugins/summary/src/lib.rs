//! # xpuprof sink `summary`
//!
//! (crate docs: see below)

pub mod assemble;
pub mod collect;
pub mod config;
pub mod cpu;
pub mod defs;
pub mod digest;
pub mod fmt;
pub mod memory;
pub mod quantile;
pub mod report;
pub mod sink;
pub mod text;
pub mod timeline;

pub use report::{Summary, SCHEMA_VERSION};
pub use sink::SummarySink;

xpuprof_sdk::export_plugin!(sink: SummarySink);
