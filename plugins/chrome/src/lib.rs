//! # `chrome` sink
//!
//! Writes `<out>/trace.json` in the Chrome Trace Event format, which both the Perfetto UI and
//! chrome://tracing open: host API calls as complete events on their pid/tid, one track per
//! device stream (lanes only where work really overlaps, assigned by start time), flow arrows
//! from each launch's API call, which carries its launch stack (`sf` into `stackFrames`), to the
//! device work it caused, CPU samples with their stacks, markers, ranges, counters (allocations
//! as a per-device memory counter) and losses, and a metadata block at the end. The file is
//! streamed while recording; memory grows only by a bit per launch arrow and the distinct stacks. `docs/formats.md` describes the
//! layout.

mod args;
mod collective_flow;
mod compile;
mod frames;
mod json;
mod leaves;
mod names;
mod sink;
mod tracks;
mod writer;

pub use sink::ChromeSink;
pub use tracks::{device_pid, stream_tid, DEVICE_BASE, LANE_STEP, STREAM_BASE};
pub use writer::{TraceOptions, TraceWriter};

xpuprof_sdk::export_plugin!(sink: ChromeSink);
