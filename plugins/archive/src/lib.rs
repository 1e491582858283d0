//! # `archive` sink
//!
//! Writes the native trace archive to `<out>/archive/trace.xpa` while the session records (see
//! the `xpuprof-archive` crate and `docs/formats.md`). `xpuprof report <out>` replays it
//! through any sink, with the session facts stored in its header, and the outputs are
//! byte-identical to the live run's.

mod sink;

pub use sink::ArchiveSink;

xpuprof_sdk::export_plugin!(sink: ArchiveSink);
