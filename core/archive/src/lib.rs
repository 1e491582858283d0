//! # xpuprof-archive: the native trace archive
//!
//! An OTF2-like trace: global definitions plus one event stream per *location* (a host thread
//! or a device stream), in a compact binary form (varints, values predicted from the previous
//! event of the same location and stored as deltas), in CRC-32-checksummed chunks behind a
//! versioned header, whose checksummed copy is the first chunk (a damaged header is recovered
//! from and reported). The `archive` sink writes it while recording, so a crash leaves everything
//! up to the last complete chunk readable; `xpuprof report` replays it through any sink, in
//! exactly the order the live sinks saw, so the outputs are byte-identical.
//!
//! All locations are multiplexed into one file, `<out>/archive/trace.xpa` (one file
//! descriptor however many threads a run has); every chunk names its location and every record
//! carries its global sequence number as a delta, which is what puts the streams back in
//! order. `docs/formats.md` describes the bytes.
//!
//! ```no_run
//! let mut reader = xpuprof_archive::open(std::path::Path::new("xpuprof-out"))?;
//! let stats = reader.replay(&mut |batch| { /* xpuprof_sdk::codec::Decoder::new(batch) */ })?;
//! if let Some(damage) = stats.corruption { eprintln!("{damage}"); }
//! # Ok::<(), xpuprof_archive::ArchiveError>(())
//! ```

mod changed;
mod error;
mod events;
mod format;
mod layout_v1;
mod merge;
pub mod mutate;
mod reader;
pub mod sample;
mod writer;

pub use error::ArchiveError;
pub use format::{host_name, ClockPair, Meta, FILE_NAME, VERSION};
pub use reader::{open, Reader, ReplayStats};
pub use writer::{WriteStats, Writer};
