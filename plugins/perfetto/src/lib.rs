//! # `perfetto` sink
//!
//! Writes `<out>/trace.perfetto-trace` in Perfetto's native protobuf format, the format for
//! large runs: ui.perfetto.dev opens multi-gigabyte traces of it, and trace processor queries
//! them with SQL. What the file holds:
//!
//! - track descriptors for processes, threads, devices (GPUs) and their streams/queues;
//! - API calls as slices on their thread, carrying their launch's stack (`callstack_iid`);
//!   kernels, copies and other device work as slices on their stream, placed on lanes by start
//!   time (a lane only where work really overlaps), with a flow from the API slice to each
//!   operation it caused; allocations as a per-device "memory in use" counter;
//! - CPU samples as `PerfSample` packets with interned callstacks (the UI's flame graph);
//!   off-CPU time as slices; markers, ranges, counters (memory in use) and losses.
//!
//! Names, frames, mappings and callstacks are interned per packet sequence; timestamps are
//! deltas on a sequence-local incremental clock; packets are deflated in bundles. The file is
//! streamed while recording and memory does not grow with the run. `docs/formats.md`
//! describes the layout.

pub mod config;
mod event;
mod intern;
mod interned;
mod names;
mod output;
mod pb;
pub mod proto;
mod sequence;
mod sink;
mod tracks;
mod writer;

pub use output::OutputOptions;
pub use sink::{PerfettoSink, FILE_NAME};
pub use writer::{TraceOptions, TraceStats, TraceWriter};

xpuprof_sdk::export_plugin!(sink: PerfettoSink);
