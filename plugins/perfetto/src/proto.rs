//! The subset of Perfetto's trace protos (`protos/perfetto/trace/...`, package
//! `perfetto.protos`) that the sink writes, declared by hand with prost's derive.
//!
//! The rare packets (track descriptors, the packets that start a sequence) are written with
//! these messages; the per-event packets are encoded by hand to the same bytes (`crate::pb`,
//! `crate::event`, `crate::interned`), and the tests check both against these declarations.
//!
//! Declared rather than generated: the sink needs twenty-odd messages out of several hundred, and
//! hand declaration keeps `protoc` and a vendored copy of the protos out of the build. Field
//! numbers and types follow the official protos; the tests decode the output with the official
//! generated Python module (`perfetto_trace_pb2`), so a wrong number or type fails there.
//!
//! The protos are proto2: repeated scalar fields are *not* packed on the wire (`packed =
//! "false"` everywhere below), which is what Perfetto's own decoder expects.

#![allow(missing_docs)]

/// `Trace`: the file is a sequence of `packet` fields (tag 1), written one by one.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Trace {
    #[prost(message, repeated, tag = "1")]
    pub packet: Vec<TracePacket>,
}

/// `TracePacket`. The `data` oneof of the official proto is spelled as separate optional fields,
/// which encode identically; at most one of them is set per packet. Fields other than the
/// frequent ones are boxed, so the packet the writer reuses for every event stays small.
#[derive(Clone, PartialEq, prost::Message)]
pub struct TracePacket {
    #[prost(uint64, optional, tag = "8")]
    pub timestamp: Option<u64>,
    #[prost(uint32, optional, tag = "58")]
    pub timestamp_clock_id: Option<u32>,
    #[prost(message, optional, boxed, tag = "6")]
    pub clock_snapshot: Option<Box<ClockSnapshot>>,
    #[prost(message, optional, tag = "11")]
    pub track_event: Option<TrackEvent>,
    #[prost(message, optional, boxed, tag = "60")]
    pub track_descriptor: Option<Box<TrackDescriptor>>,
    #[prost(message, optional, boxed, tag = "66")]
    pub perf_sample: Option<Box<PerfSample>>,
    #[prost(bytes = "vec", optional, tag = "50")]
    pub compressed_packets: Option<Vec<u8>>,
    #[prost(uint32, optional, tag = "10")]
    pub trusted_packet_sequence_id: Option<u32>,
    #[prost(message, optional, boxed, tag = "12")]
    pub interned_data: Option<Box<InternedData>>,
    #[prost(uint32, optional, tag = "13")]
    pub sequence_flags: Option<u32>,
    #[prost(message, optional, boxed, tag = "59")]
    pub trace_packet_defaults: Option<Box<TracePacketDefaults>>,
    #[prost(bool, optional, tag = "87")]
    pub first_packet_on_sequence: Option<bool>,
}

/// `TracePacket.SequenceFlags.SEQ_INCREMENTAL_STATE_CLEARED`.
pub const SEQ_INCREMENTAL_STATE_CLEARED: u32 = 1;
/// `TracePacket.SequenceFlags.SEQ_NEEDS_INCREMENTAL_STATE`.
pub const SEQ_NEEDS_INCREMENTAL_STATE: u32 = 2;
/// `BuiltinClock.BUILTIN_CLOCK_MONOTONIC`: xpuprof's session clock.
pub const CLOCK_MONOTONIC: u32 = 3;
/// First sequence-scoped clock id; the sink's incremental clock.
pub const CLOCK_INCREMENTAL: u32 = 64;

#[derive(Clone, PartialEq, prost::Message)]
pub struct ClockSnapshot {
    #[prost(message, repeated, tag = "1")]
    pub clocks: Vec<Clock>,
    /// `BuiltinClock` enum.
    #[prost(int32, optional, tag = "2")]
    pub primary_trace_clock: Option<i32>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct Clock {
    #[prost(uint32, optional, tag = "1")]
    pub clock_id: Option<u32>,
    #[prost(uint64, optional, tag = "2")]
    pub timestamp: Option<u64>,
    #[prost(bool, optional, tag = "3")]
    pub is_incremental: Option<bool>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct TracePacketDefaults {
    #[prost(uint32, optional, tag = "58")]
    pub timestamp_clock_id: Option<u32>,
    #[prost(message, optional, tag = "11")]
    pub track_event_defaults: Option<TrackEventDefaults>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct TrackEventDefaults {
    #[prost(uint64, optional, tag = "11")]
    pub track_uuid: Option<u64>,
}

/// `TrackEvent.Type`.
pub mod event_type {
    pub const SLICE_BEGIN: i32 = 1;
    pub const SLICE_END: i32 = 2;
    pub const INSTANT: i32 = 3;
    pub const COUNTER: i32 = 4;
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct TrackEvent {
    #[prost(int32, optional, tag = "9")]
    pub r#type: Option<i32>,
    #[prost(uint64, optional, tag = "11")]
    pub track_uuid: Option<u64>,
    #[prost(uint64, optional, tag = "10")]
    pub name_iid: Option<u64>,
    #[prost(string, optional, tag = "23")]
    pub name: Option<String>,
    #[prost(double, optional, tag = "44")]
    pub double_counter_value: Option<f64>,
    #[prost(fixed64, repeated, packed = "false", tag = "47")]
    pub flow_ids: Vec<u64>,
    #[prost(fixed64, repeated, packed = "false", tag = "48")]
    pub terminating_flow_ids: Vec<u64>,
    #[prost(message, repeated, tag = "4")]
    pub debug_annotations: Vec<DebugAnnotation>,
    #[prost(message, optional, tag = "6")]
    pub legacy_event: Option<LegacyEvent>,
    #[prost(uint64, optional, tag = "56")]
    pub callstack_iid: Option<u64>,
}

/// `TrackEvent.LegacyEvent`: only the flow binding (`bind_id`, `flow_direction`).
#[derive(Clone, PartialEq, prost::Message)]
pub struct LegacyEvent {
    #[prost(uint64, optional, tag = "8")]
    pub bind_id: Option<u64>,
    #[prost(int32, optional, tag = "13")]
    pub flow_direction: Option<i32>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct DebugAnnotation {
    #[prost(uint64, optional, tag = "1")]
    pub name_iid: Option<u64>,
    #[prost(uint64, optional, tag = "3")]
    pub uint_value: Option<u64>,
    #[prost(int64, optional, tag = "4")]
    pub int_value: Option<i64>,
    #[prost(string, optional, tag = "6")]
    pub string_value: Option<String>,
    #[prost(uint64, optional, tag = "17")]
    pub string_value_iid: Option<u64>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct InternedData {
    #[prost(message, repeated, tag = "2")]
    pub event_names: Vec<EventName>,
    #[prost(message, repeated, tag = "3")]
    pub debug_annotation_names: Vec<EventName>,
    #[prost(message, repeated, tag = "29")]
    pub debug_annotation_string_values: Vec<InternedString>,
    #[prost(message, repeated, tag = "5")]
    pub function_names: Vec<InternedString>,
    #[prost(message, repeated, tag = "6")]
    pub frames: Vec<Frame>,
    #[prost(message, repeated, tag = "7")]
    pub callstacks: Vec<Callstack>,
    #[prost(message, repeated, tag = "16")]
    pub build_ids: Vec<InternedString>,
    #[prost(message, repeated, tag = "17")]
    pub mapping_paths: Vec<InternedString>,
    #[prost(message, repeated, tag = "19")]
    pub mappings: Vec<Mapping>,
}

impl InternedData {
    /// True when nothing is in it.
    pub fn is_empty(&self) -> bool {
        self.event_names.is_empty()
            && self.debug_annotation_names.is_empty()
            && self.debug_annotation_string_values.is_empty()
            && self.function_names.is_empty()
            && self.frames.is_empty()
            && self.callstacks.is_empty()
            && self.build_ids.is_empty()
            && self.mapping_paths.is_empty()
            && self.mappings.is_empty()
    }

    /// Empties every table, keeping the allocations.
    pub fn clear(&mut self) {
        self.event_names.clear();
        self.debug_annotation_names.clear();
        self.debug_annotation_string_values.clear();
        self.function_names.clear();
        self.frames.clear();
        self.callstacks.clear();
        self.build_ids.clear();
        self.mapping_paths.clear();
        self.mappings.clear();
    }
}

/// `EventName` and `DebugAnnotationName` (same layout).
#[derive(Clone, PartialEq, prost::Message)]
pub struct EventName {
    #[prost(uint64, optional, tag = "1")]
    pub iid: Option<u64>,
    #[prost(string, optional, tag = "2")]
    pub name: Option<String>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct InternedString {
    #[prost(uint64, optional, tag = "1")]
    pub iid: Option<u64>,
    #[prost(bytes = "vec", optional, tag = "2")]
    pub str: Option<Vec<u8>>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct Frame {
    #[prost(uint64, optional, tag = "1")]
    pub iid: Option<u64>,
    #[prost(uint64, optional, tag = "2")]
    pub function_name_id: Option<u64>,
    #[prost(uint64, optional, tag = "3")]
    pub mapping_id: Option<u64>,
    #[prost(uint64, optional, tag = "4")]
    pub rel_pc: Option<u64>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct Callstack {
    #[prost(uint64, optional, tag = "1")]
    pub iid: Option<u64>,
    /// Root frame first.
    #[prost(uint64, repeated, packed = "false", tag = "2")]
    pub frame_ids: Vec<u64>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct Mapping {
    #[prost(uint64, optional, tag = "1")]
    pub iid: Option<u64>,
    #[prost(uint64, optional, tag = "2")]
    pub build_id: Option<u64>,
    #[prost(uint64, repeated, packed = "false", tag = "7")]
    pub path_string_ids: Vec<u64>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct TrackDescriptor {
    #[prost(uint64, optional, tag = "1")]
    pub uuid: Option<u64>,
    #[prost(uint64, optional, tag = "5")]
    pub parent_uuid: Option<u64>,
    #[prost(string, optional, tag = "2")]
    pub name: Option<String>,
    #[prost(string, optional, tag = "14")]
    pub description: Option<String>,
    #[prost(message, optional, tag = "3")]
    pub process: Option<ProcessDescriptor>,
    #[prost(message, optional, tag = "4")]
    pub thread: Option<ThreadDescriptor>,
    #[prost(message, optional, tag = "8")]
    pub counter: Option<CounterDescriptor>,
    #[prost(int32, optional, tag = "12")]
    pub sibling_order_rank: Option<i32>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct ProcessDescriptor {
    #[prost(int32, optional, tag = "1")]
    pub pid: Option<i32>,
    #[prost(string, repeated, tag = "2")]
    pub cmdline: Vec<String>,
    #[prost(string, optional, tag = "6")]
    pub process_name: Option<String>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct ThreadDescriptor {
    #[prost(int32, optional, tag = "1")]
    pub pid: Option<i32>,
    #[prost(int64, optional, tag = "2")]
    pub tid: Option<i64>,
    #[prost(string, optional, tag = "5")]
    pub thread_name: Option<String>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct CounterDescriptor {
    /// `CounterDescriptor.Unit`.
    #[prost(int32, optional, tag = "3")]
    pub unit: Option<i32>,
    #[prost(string, optional, tag = "6")]
    pub unit_name: Option<String>,
}

/// `CounterDescriptor.Unit.UNIT_SIZE_BYTES`.
pub const UNIT_SIZE_BYTES: i32 = 3;

#[derive(Clone, PartialEq, prost::Message)]
pub struct PerfSample {
    #[prost(uint32, optional, tag = "1")]
    pub cpu: Option<u32>,
    #[prost(uint32, optional, tag = "2")]
    pub pid: Option<u32>,
    #[prost(uint32, optional, tag = "3")]
    pub tid: Option<u32>,
    #[prost(uint64, optional, tag = "4")]
    pub callstack_iid: Option<u64>,
}
