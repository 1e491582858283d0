//! Turns records into trace packets as they arrive.
//!
//! What goes where:
//! - API calls: slices on their thread's track (one sequence per thread), with their
//!   correlation id and non-zero result as arguments;
//! - device work: slices on its stream's track under the device's track (one sequence per
//!   stream lane), with correlation id, bytes, and a kernel's grid and block (`128x1x1`);
//! - launches: the API slice carries its launch's stack (`callstack_iid`, interned like the CPU
//!   samples' stacks, see [`xpuprof_toolbox::timeline::Launches`]) and starts the flow to the device work it caused
//!   (one arrow per device operation, see [`xpuprof_toolbox::timeline::Flows`]);
//! - device work is put in start order per stream within a bounded window
//!   ([`xpuprof_toolbox::timeline::Reorder`]) and placed on lanes by start time, so a lane exists only where work
//!   really overlaps; allocations and frees make a per-device "memory in use" counter;
//! - CPU samples: `PerfSample` packets with interned callstacks, which the Perfetto UI shows as
//!   per-process and per-thread sample tracks with a flame graph for any selected range;
//!   off-CPU samples are slices (blocked time) on an "off-CPU" track under the thread;
//! - markers: instants on the thread; ranges: slices on a "ranges" track under the thread;
//! - counters: counter tracks under their process or device;
//! - losses: instants "lost N: cause" on a top-level "xpuprof: data lost" track.
//!
//! Only definitions, per-sequence state, lane ends and the bounded windows are kept: memory does
//! not grow with the length of the run (but for one bit per launch, [`xpuprof_toolbox::timeline::Flows`]). Event packets are encoded straight into the output's bundle buffer
//! (`crate::pb`), so steady-state events allocate nothing.

use std::collections::BTreeMap;
use std::io::{self, Write};

use xpuprof_sdk::model::*;

use xpuprof_sdk::hash::IdMap;
use xpuprof_toolbox::timeline::{Queues, TimelineSink};

use crate::event::{Event, Value, FLOW_IN, FLOW_OUT};
use crate::intern::Interner;
use crate::interned::Interned;
use crate::output::{Output, OutputOptions};
use crate::proto::{event_type, TracePacket, SEQ_NEEDS_INCREMENTAL_STATE};
use crate::sequence::{Sequences, Stamp, METADATA_SEQUENCE};
use crate::tracks::Tracks;

/// Sequence of CPU samples.
const SAMPLES: u64 = 9 << 60;
/// Sequence of counter values.
const COUNTERS: u64 = 10 << 60;

/// Options of the trace writer.
#[derive(Debug, Clone)]
pub struct TraceOptions {
    /// Write CPU samples.
    pub cpu_samples: bool,
    /// Attach arguments (correlation id, bytes, result) to slices.
    pub args: bool,
    /// Packet output.
    pub output: OutputOptions,
    /// Uncompressed bytes after which every sequence's incremental state is cleared.
    pub reset_bytes: u64,
}

/// What a trace holds, for the sink's log and the benchmarks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TraceStats {
    /// Slices (API calls, device work, ranges, off-CPU time).
    pub slices: u64,
    /// Flows from launches to device work.
    pub flows: u64,
    /// CPU samples.
    pub samples: u64,
    /// Packets, before compression.
    pub packets: u64,
    /// Packet bytes before compression.
    pub raw_bytes: u64,
    /// File size.
    pub file_bytes: u64,
    /// Packet sequences.
    pub sequences: u64,
    /// Device operations that overlapped work on every lane of their stream.
    pub overlaps: u64,
    /// Device operations that arrived after later ones of their stream were placed (beyond the
    /// reorder window, [`xpuprof_toolbox::timeline::WINDOW`] operations per stream).
    pub late: u64,
    /// API calls written without their launch stack because it did not come within the window
    /// ([`xpuprof_toolbox::timeline::HELD_CALLS`] calls): most are calls that launch nothing.
    pub calls_without_stack: u64,
    /// Device work ends drawn without a flow: its call was not in the trace, or its correlation
    /// id did not fit or was used again.
    pub flows_not_drawn: u64,
}

/// Writes one trace.
#[derive(Debug)]
pub struct TraceWriter<W: Write> {
    out: Output<W>,
    opts: TraceOptions,
    names: Interner,
    tracks: Tracks,
    seqs: Sequences,
    /// Where the packet being built goes (sequence, timestamp).
    stamp: Stamp,
    /// Its track event, reused.
    ev: Event,
    /// Its CPU sample, when it is one: pid, tid and callstack.
    sample: Option<(u32, u32, Option<u64>)>,
    /// Its interned data, encoded as it is added.
    interned: Interned,
    /// The packet that (re)starts a sequence, when the event needs one.
    start: Option<Box<TracePacket>>,
    /// The flow id started last on each thread track (a call nested in one with the same
    /// correlation id starts none).
    last_flow: IdMap<u64, u64>,
    /// API calls waiting for their launch stack, flow ids, device work in start order.
    queues: Queues,
    /// Bytes allocated and not freed, per device.
    memory: IdMap<DeviceId, u64>,
    last_reset: u64,
    losses: BTreeMap<String, u64>,
    stats: TraceStats,
    /// Annotation name iids of the arguments: correlation, bytes, result, grid, block,
    /// bandwidth.
    arg_names: [u64; 6],
}

const CORRELATION: usize = 0;
const BYTES: usize = 1;
const RESULT: usize = 2;
const GRID: usize = 3;
const BLOCK: usize = 4;
/// A collective's bytes over its time on the device, in 10^6 bytes per second.
const BANDWIDTH: usize = 5;

impl<W: Write> TraceWriter<W> {
    /// Starts a trace on `out`.
    pub fn new(out: W, opts: TraceOptions) -> Self {
        let mut names = Interner::default();
        let arg_names = ["correlation", "bytes", "result", "grid", "block", "bandwidth_mb_per_s"]
            .map(|n| names.annotation_name(n));
        Self {
            out: Output::new(out, opts.output),
            names,
            arg_names,
            opts,
            tracks: Tracks::default(),
            seqs: Sequences::default(),
            stamp: Stamp::default(),
            ev: Event::default(),
            sample: None,
            interned: Interned::default(),
            start: None,
            last_flow: IdMap::default(),
            queues: Queues::default(),
            memory: IdMap::default(),
            last_reset: 0,
            losses: BTreeMap::new(),
            stats: TraceStats::default(),
        }
    }

    /// Bytes written to the file so far.
    pub fn bytes(&self) -> u64 {
        self.out.written()
    }

    /// Writes the packets of one record.
    pub fn record(&mut self, r: &Record) -> io::Result<()> {
        if r.is_definition() {
            self.names.define(r);
            self.tracks.define(r, &self.names);
            return self.descriptors();
        }
        match r {
            Record::ApiCall(c) => self.api_call(c),
            Record::LaunchSite(s) => self.launch_site(s),
            Record::DeviceOp(op) => self.device_op(op),
            Record::CpuSample(s) if self.opts.cpu_samples => self.sample(s),
            Record::Marker(a) => self.marker(a),
            Record::Range(a) => self.range(a),
            Record::Counter(c) => self.counter(c),
            Record::Loss(l) => self.loss(l),
            Record::Overhead(o) => self.overhead(o),
            // A source announces a marker window with `end` 0; the complete record follows.
            Record::Window(w) if w.end != 0 => self.window(w),
            _ => Ok(()),
        }
    }

    /// Writes the track descriptors queued by the last definition or event.
    #[inline(always)]
    fn descriptors(&mut self) -> io::Result<()> {
        if self.tracks.pending.is_empty() {
            return Ok(());
        }
        self.write_descriptors()
    }

    #[cold]
    #[inline(never)]
    fn write_descriptors(&mut self) -> io::Result<()> {
        for d in self.tracks.pending.drain(..) {
            let packet = TracePacket {
                trusted_packet_sequence_id: Some(METADATA_SEQUENCE),
                track_descriptor: Some(Box::new(d)),
                ..Default::default()
            };
            self.out.packet(&packet)?;
        }
        Ok(())
    }

    /// Starts an event packet on sequence `key` (default track `track`) at `ts`: writes the
    /// pending descriptors and, when needed, the packet that (re)starts the sequence.
    fn begin(&mut self, key: u64, track: Option<u64>, ts: u64) -> io::Result<()> {
        self.descriptors()?;
        self.seqs.stamp(key, track, ts, &mut self.stamp, &mut self.start);
        match self.start.take() {
            Some(start) => self.out.packet(&start),
            None => Ok(()),
        }
    }

    /// Writes the packet built since [`Self::begin`]: the track event when `with_event`, else
    /// the CPU sample. Fields in field-number order: `timestamp` (8),
    /// `trusted_packet_sequence_id` (10), `track_event` (11), `interned_data` (12),
    /// `sequence_flags` (13), `timestamp_clock_id` (58), `perf_sample` (66).
    fn end(&mut self, with_event: bool) -> io::Result<()> {
        // Timestamp, sequence, flags, clock (11 + 6 + 2 + 6), the track event's key and length
        // (3), the sample (3 + 6 + 6 + 11).
        const FIXED: usize = 60;
        let (stamp, ev, interned, sample) = (&self.stamp, &self.ev, &self.interned, self.sample.take());
        let bound = FIXED + if with_event { ev.max_len() } else { 0 } + interned.max_len();
        let r = self.out.encoded(bound, |b| {
            b.uint(8, stamp.timestamp);
            b.uint(10, u64::from(stamp.sequence));
            if with_event {
                let e = b.begin(11);
                ev.write(b);
                b.end(e);
            }
            interned.write(b);
            b.uint(13, u64::from(SEQ_NEEDS_INCREMENTAL_STATE));
            if let Some(clock) = stamp.clock {
                b.uint(58, u64::from(clock));
            }
            if let Some((pid, tid, callstack)) = sample {
                let s = b.begin(66);
                b.uint(2, u64::from(pid));
                b.uint(3, u64::from(tid));
                if let Some(cs) = callstack {
                    b.uint(4, cs);
                }
                b.end(s);
            }
        });
        self.ev.clear();
        self.interned.clear();
        if self.out.raw_bytes() - self.last_reset >= self.opts.reset_bytes {
            self.last_reset = self.out.raw_bytes();
            self.seqs.reset_all();
        }
        r
    }

    /// Queues argument `which` = `value` for the next slice begin.
    fn arg(&mut self, which: usize, value: Value) {
        self.ev.arg(self.arg_names[which], value);
    }

    /// A slice `[start, end)` named `name` on sequence `key`, whose default track is `track`,
    /// with the arguments queued by [`Self::arg`], the callstack in `self.ev.callstack` and,
    /// when set, its end of a flow (`bind`: id and direction).
    fn slice(
        &mut self,
        key: u64,
        track: u64,
        start: u64,
        end: u64,
        name: u64,
        bind: Option<(u64, i32)>,
    ) -> io::Result<()> {
        self.begin(key, Some(track), start)?;
        let seq = self.seqs.get_mut(key);
        for a in self.ev.args() {
            self.names.emit_annotation_name(seq, a.name, &mut self.interned);
            if let Value::Str(v) = a.value {
                self.names.emit_annotation_value(seq, v, &mut self.interned);
            }
        }
        if let Some(cs) = self.ev.callstack {
            self.names.emit_callstack(seq, cs, &mut self.interned);
        }
        self.names.emit_event_name(seq, name, &mut self.interned);
        self.ev.kind = Some(event_type::SLICE_BEGIN);
        self.ev.name_iid = Some(name);
        self.ev.bind = bind;
        self.end(true)?;
        self.begin(key, Some(track), end.max(start))?;
        self.ev.kind = Some(event_type::SLICE_END);
        self.end(true)?;
        self.stats.slices += 1;
        Ok(())
    }

    fn op_name(&mut self, op: &DeviceOp) -> u64 {
        match op.kind {
            DeviceOpKind::Kernel => self.names.event_name_of(op.name, "kernel"),
            DeviceOpKind::Memcpy => self.names.static_event_name(copy_name(op.copy)),
            DeviceOpKind::Memset => self.names.static_event_name("Memset"),
            DeviceOpKind::Sync => self.names.static_event_name("Sync"),
            DeviceOpKind::Alloc => self.names.static_event_name("Alloc"),
            DeviceOpKind::Free => self.names.static_event_name("Free"),
            _ => self.names.event_name_of(op.name, "other"),
        }
    }

    /// An allocation or a free: the device's bytes in use change at its start.
    fn memory(&mut self, op: &DeviceOp) -> io::Result<()> {
        let used = self.memory.entry(op.device).or_default();
        *used = match op.kind {
            DeviceOpKind::Alloc => used.saturating_add(op.bytes),
            _ => used.saturating_sub(op.bytes),
        };
        let value = *used as f64;
        let track = self.tracks.memory(op.device, &self.names);
        self.begin(COUNTERS, None, op.start)?;
        self.ev.kind = Some(event_type::COUNTER);
        self.ev.track_uuid = Some(track);
        self.ev.counter = Some(value);
        self.end(true)
    }

    fn sample(&mut self, s: &CpuSample) -> io::Result<()> {
        if s.kind == SampleKind::OffCpu {
            return self.off_cpu(s);
        }
        self.tracks.thread(s.pid, s.tid, &self.names);
        let callstack = self.names.callstack(s.stack);
        self.begin(SAMPLES, None, s.time)?;
        let seq = self.seqs.get_mut(SAMPLES);
        if let Some(cs) = callstack {
            self.names.emit_callstack(seq, cs, &mut self.interned);
        }
        self.sample = Some((s.pid, s.tid, callstack));
        self.end(false)?;
        self.stats.samples += 1;
        Ok(())
    }

    fn off_cpu(&mut self, s: &CpuSample) -> io::Result<()> {
        let track = self.tracks.off_cpu(s.pid, s.tid, &self.names);
        let leaf = self.names.leaf_name(s.stack);
        let name = self.names.event_name(&leaf);
        self.slice(track, track, s.time.saturating_sub(s.weight), s.time, name, None)
    }

    fn marker(&mut self, a: &Annotation) -> io::Result<()> {
        let track = self.tracks.thread(a.pid, a.tid, &self.names);
        let name = self.names.event_name_of(a.name, "marker");
        self.begin(track, Some(track), a.start)?;
        let seq = self.seqs.get_mut(track);
        self.names.emit_event_name(seq, name, &mut self.interned);
        self.ev.kind = Some(event_type::INSTANT);
        self.ev.name_iid = Some(name);
        self.end(true)
    }

    fn range(&mut self, a: &Annotation) -> io::Result<()> {
        let track = self.tracks.range(a, &self.names);
        let name = self.names.event_name_of(a.name, "range");
        self.slice(track, track, a.start, a.end, name, None)
    }

    /// Time the profiling machinery took (a tracing buffer flush, ...), on a track of its own under
    /// the thread it took the time from.
    fn overhead(&mut self, o: &Overhead) -> io::Result<()> {
        let tid = if o.tid == 0 { o.pid } else { o.tid };
        let track = self.tracks.overhead(o.pid, tid, o.start, o.end, &self.names);
        let name = self.names.event_name_of(o.name, "profiler overhead");
        self.slice(track, track, o.start, o.end, name, None)
    }

    fn counter(&mut self, c: &Counter) -> io::Result<()> {
        if !c.value.is_finite() {
            return Ok(());
        }
        let track = self.tracks.counter(c, &self.names);
        self.begin(COUNTERS, None, c.time)?;
        self.ev.kind = Some(event_type::COUNTER);
        self.ev.track_uuid = Some(track);
        self.ev.counter = Some(c.value);
        self.end(true)
    }

    fn window(&mut self, w: &CaptureWindow) -> io::Result<()> {
        let track = self.tracks.windows();
        let mut opener = String::new();
        for (i, c) in format!("{:?}", w.opener).chars().enumerate() {
            if c.is_ascii_uppercase() && i > 0 {
                opener.push('-');
            }
            opener.push(c.to_ascii_lowercase());
        }
        self.begin(track, Some(track), w.start)?;
        self.ev.kind = Some(event_type::SLICE_BEGIN);
        self.ev.name = Some(format!("capture window (opened by {opener})"));
        self.end(true)?;
        self.begin(track, Some(track), w.end.max(w.start))?;
        self.ev.kind = Some(event_type::SLICE_END);
        self.end(true)
    }

    fn loss(&mut self, l: &Loss) -> io::Result<()> {
        let cause = self.names.text(l.cause).unwrap_or("unknown cause").to_owned();
        *self.losses.entry(cause.clone()).or_default() += l.count;
        let track = self.tracks.losses();
        self.begin(track, Some(track), l.time)?;
        self.ev.kind = Some(event_type::INSTANT);
        self.ev.name = Some(format!("lost {}: {cause}", l.count));
        self.end(true)
    }

    /// Losses reported in the trace, by cause.
    pub fn losses(&self) -> &BTreeMap<String, u64> {
        &self.losses
    }

    /// What was written so far.
    pub fn stats(&self) -> TraceStats {
        TraceStats {
            packets: self.out.packets(),
            raw_bytes: self.out.raw_bytes(),
            file_bytes: self.out.written(),
            sequences: self.seqs.len() as u64,
            overlaps: self.tracks.overlaps,
            late: self.queues.reorder.late,
            calls_without_stack: self.queues.launches.calls_without_stack,
            flows_not_drawn: self.queues.flows.not_drawn,
            ..self.stats
        }
    }

    /// Writes what is queued and returns the inner writer with the final statistics.
    pub fn finish(mut self) -> io::Result<(W, TraceStats)> {
        self.drain_timeline()?;
        self.descriptors()?;
        let mut stats = self.stats();
        let raw = self.out.raw_bytes();
        let out = self.out.finish_counted()?;
        stats.file_bytes = out.1;
        stats.raw_bytes = raw;
        Ok((out.0, stats))
    }
}

/// The slice name of a copy of kind `k`.
fn copy_name(k: CopyKind) -> &'static str {
    match k {
        CopyKind::HostToDevice => "Memcpy HtoD",
        CopyKind::DeviceToHost => "Memcpy DtoH",
        CopyKind::DeviceToDevice => "Memcpy DtoD",
        CopyKind::HostToHost => "Memcpy HtoH",
        CopyKind::PeerToPeer => "Memcpy PtoP",
        _ => "Memcpy",
    }
}

impl<W: Write> TimelineSink for TraceWriter<W> {
    /// An API call: a slice on its thread with its launch's stack, starting the flow to the
    /// device work it launched.
    fn write_api_call(&mut self, c: &ApiCall, stack: StackId) -> io::Result<()> {
        let track = self.tracks.thread(c.pid, c.tid, &self.names);
        let name = self.names.event_name_of(c.name, "API call");
        if self.opts.args {
            if let Some(corr) = c.correlation {
                self.arg(CORRELATION, Value::Uint(corr.id));
            }
            if c.result != 0 {
                self.arg(RESULT, Value::Int(c.result));
            }
        }
        let launches = !matches!(c.kind, ApiKind::Sync | ApiKind::Other);
        let flows = &mut self.queues.flows;
        let flow = match c.correlation.filter(|_| launches).and_then(|corr| flows.id(c.pid, corr)) {
            // The nested call of the one that started this flow: no second start.
            Some(id) if self.last_flow.get(&track) == Some(&id) => None,
            Some(id) => flows.start(id),
            None => None,
        };
        if let Some(id) = flow {
            self.last_flow.insert(track, id);
        }
        self.ev.callstack = if stack.is_none() { None } else { self.names.callstack(stack) };
        self.slice(track, track, c.start, c.end, name, flow.map(|id| (id, FLOW_OUT)))
    }

    /// Device work in start order: a slice on the first lane of its stream free at its start
    /// (allocations and frees: a point of the device's memory counter).
    fn place(&mut self, op: &DeviceOp, flow: Option<u64>) -> io::Result<()> {
        if matches!(op.kind, DeviceOpKind::Alloc | DeviceOpKind::Free) {
            return self.memory(op);
        }
        let track = self.tracks.device_op(op, &self.names);
        let name = self.op_name(op);
        let flow = self.queues.flows.end(flow);
        self.stats.flows += u64::from(flow.is_some());
        let ranks = self.names.defs().world_size(op.pid).map_or(2, |n| n as usize);
        let link = self.queues.collectives.link(op, ranks);
        // One flow through the collective's slices on every rank: trace processor chains the
        // events naming it in time order (`FlowTracker::Begin`, then `Step`), whatever order
        // the ranks' slices are placed in.
        self.ev.flows = link.map_or((None, None), |l| (Some(l.flow), None));
        if self.opts.args {
            if let Some(c) = op.correlation {
                self.arg(CORRELATION, Value::Uint(c.id));
            }
            if op.bytes != 0 {
                self.arg(BYTES, Value::Uint(op.bytes));
                if op.collective != CollectiveOp::None && op.end > op.start {
                    self.arg(BANDWIDTH, Value::Uint(op.bytes.saturating_mul(1000) / (op.end - op.start)));
                }
            }
            if let Some(k) = &op.kernel {
                let (grid, block) = (self.names.dims(k.grid), self.names.dims(k.block));
                self.arg(GRID, Value::Str(grid));
                self.arg(BLOCK, Value::Str(block));
            }
        }
        self.slice(track, track, op.start, op.end, name, flow.map(|id| (id, FLOW_IN)))
    }

    fn queues(&mut self) -> &mut Queues {
        &mut self.queues
    }
}
