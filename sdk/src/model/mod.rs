//! The vendor-neutral event model (docs/architecture.md, "Design principles").
//!
//! Everything a source reports and everything a sink receives is a [`Record`]: either a
//! *definition* (a string, process, thread, device, stream, module, frame, stack or clock
//! domain, each interned once and referenced by id afterwards) or an *event* (API call, device
//! operation, launch site, CPU sample, marker, range, counter, loss, clock pairing, overhead).
//!
//! The model is declared once, in [`schema`]'s table; the structs, their builders, the batch
//! codec ([`crate::codec`]), the archive's column layout and the visitors of a record's id
//! references ([`IdFields`]) and timestamps ([`Timed`]) are generated from it. Structs are
//! `#[non_exhaustive]` with public fields: read them freely, build them with `Default` and the
//! builder-style setters (one per field, named like the field), so a plugin keeps compiling
//! when fields are added:
//!
//! ```
//! use xpuprof_sdk::model::*;
//! let op = DeviceOp::default()
//!     .kind(DeviceOpKind::Kernel)
//!     .pid(42)
//!     .device(DeviceId(1))
//!     .start(1_000)
//!     .end(3_000)
//!     .correlation(Some(Correlation::new(backend::CUDA, 7)));
//! assert_eq!(op.end - op.start, 2_000);
//! ```
//!
//! Ids are scoped to the stream they travel in. A source numbers its own definitions from 1;
//! the host re-numbers them into session-wide ids before sinks see them, so two sources can
//! both use string id 1 without clashing. Id 0 always means "none".
//!
//! All timestamps are nanoseconds. Events from sources are in the clock domain their record
//! says (see [`ClockDomain`] and [`ClockDomainDef`]); sinks only ever see the session clock
//! (`CLOCK_MONOTONIC`).

mod enums;
#[cfg(test)]
mod formats_doc;
pub(crate) mod generate;
pub(crate) mod ids;
mod record_fingerprint;
pub mod schema;
pub(crate) mod visit;

pub use enums::{
    ApiKind, CollectiveOp, CopyKind, DeviceKind, DeviceOpKind, FrameKind, OverheadKind, QueueKind,
    SampleKind, SizeUnit, Vendor, WindowOpener,
};
pub use ids::{
    backend, ClockDomain, Correlation, CorrelationKey, DeviceId, ExternalId, FrameId, IdType, ModuleId,
    Nanos, StackId, StrId, StreamId,
};
pub use record_fingerprint::record_layout;
pub use schema::{
    Annotation, ApiCall, CaptureWindow, ClockDomainDef, ClockSync, Counter, CpuSample, DeviceDef, DeviceOp,
    DeviceSample, FrameDef, GraphInfo, KernelInfo, LaunchRef, LaunchSite, Loss, ModuleDef, Overhead,
    ProcessDef, Record, Retirement, StackDef, StrDef, StreamDef, Submission, ThreadDef,
};
pub use visit::{IdFields, IdMapper, Timed};

impl Record {
    /// True for definitions (interned objects referenced by id), false for events.
    pub fn is_definition(&self) -> bool {
        matches!(
            self,
            Record::Str(_)
                | Record::Process(_)
                | Record::Thread(_)
                | Record::Device(_)
                | Record::Stream(_)
                | Record::Module(_)
                | Record::Frame(_)
                | Record::Stack(_)
                | Record::ClockDomain(_)
        )
    }
}

impl StrDef {
    /// String `id` with `text`.
    pub fn new(id: StrId, text: impl Into<String>) -> Self {
        Self { id, text: text.into(), display: String::new() }
    }

    /// What people are shown: [`display`](Self::display) when the host set one, else
    /// [`text`](Self::text).
    pub fn shown(&self) -> &str {
        if self.display.is_empty() {
            &self.text
        } else {
            &self.display
        }
    }
}

impl StackDef {
    /// Stack `id` with `frames`, innermost first.
    pub fn new(id: StackId, frames: Vec<FrameId>) -> Self {
        Self { id, frames }
    }
}

impl KernelInfo {
    /// A CUDA/HIP-style launch configuration: `grid` in blocks, `block` in threads.
    pub fn blocks(grid: [u32; 3], block: [u32; 3]) -> Self {
        Self { grid, block, ..Self::default() }
    }

    /// A SYCL/Level Zero-style launch configuration: `global` and `local` sizes in work-items.
    pub fn work_items(global: [u32; 3], local: [u32; 3]) -> Self {
        Self { grid: global, block: local, unit: SizeUnit::WorkItems, ..Self::default() }
    }
}

impl GraphInfo {
    /// Node `node` of graph `graph`.
    pub fn new(graph: u64, node: u64) -> Self {
        Self { graph, node }
    }
}

impl LaunchRef {
    /// The launch on thread `tid` at `time`, through API `api` with stack `stack`.
    pub fn new(tid: u32, stack: StackId, api: StrId, time: Nanos) -> Self {
        Self { tid, stack, api, time }
    }
}

impl ClockSync {
    /// A pairing of `source_time` in `domain` with `session_time`.
    pub fn new(domain: ClockDomain, source_time: u64, session_time: Nanos) -> Self {
        Self { domain, source_time, session_time }
    }
}

#[cfg(test)]
mod tests;
