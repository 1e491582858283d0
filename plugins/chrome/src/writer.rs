//! Streams records out as Trace Event JSON.
//!
//! Layout: `{"traceEvents":[` + one event per line + `],"displayTimeUnit":"ns","metadata":{..}}`.
//! Events are written as records arrive, but for two bounded waits: an API call with a
//! correlation id waits for its launch stack (at most [`xpuprof_toolbox::timeline::HELD_CALLS`]
//! calls), written then with `"sf"` into the `stackFrames` dictionary ([`crate::frames`]); device
//! work waits in its stream's reorder window ([`xpuprof_toolbox::timeline::WINDOW`] operations)
//! so lanes are assigned by start time. Only names, lane ends, the windows, stack frames, loss
//! totals and one bit per launch arrow (which flow ids started) are kept.

use std::collections::BTreeMap;
use std::io::{self, Write};

use xpuprof_sdk::model::*;
use xpuprof_sdk::SessionInfo;

use xpuprof_sdk::hash::IdMap;
use xpuprof_toolbox::timeline::{Queues, TimelineSink};

use crate::args::OpArgs;
use crate::frames::StackFrames;
use crate::json::{quoted, write_us, Push};
use crate::leaves::Leaves;
use crate::names::{Names, Naming};
use crate::tracks::Tracks;

/// The JSON name of a copy of kind `k`.
fn memcpy_name(k: CopyKind) -> &'static str {
    match k {
        CopyKind::HostToDevice => "\"Memcpy HtoD\"",
        CopyKind::DeviceToHost => "\"Memcpy DtoH\"",
        CopyKind::DeviceToDevice => "\"Memcpy DtoD\"",
        CopyKind::HostToHost => "\"Memcpy HtoH\"",
        CopyKind::PeerToPeer => "\"Memcpy PtoP\"",
        _ => "\"Memcpy Unknown\"",
    }
}

/// The category and the name (a JSON literal) of device operation `op`.
fn op_name<'t>(names: &'t Names, op: &DeviceOp) -> (&'static str, &'t str) {
    match op.kind {
        DeviceOpKind::Kernel => ("kernel", names.name(op.name)),
        DeviceOpKind::Memcpy => ("memcpy", memcpy_name(op.copy)),
        DeviceOpKind::Memset => ("memset", "\"Memset\""),
        DeviceOpKind::Sync => ("sync", "\"Sync\""),
        DeviceOpKind::Alloc => ("alloc", "\"Alloc\""),
        DeviceOpKind::Free => ("free", "\"Free\""),
        _ => ("other", names.name(op.name)),
    }
}

/// Starts the next event in `line`: a separator (none before the first) and a newline.
#[inline]
pub(crate) fn begin(line: &mut Vec<u8>, first: &mut bool) {
    line.extend_from_slice(if *first { b"\n" } else { b",\n" });
    *first = false;
}

/// Writes the metadata events of `namings` (names of tracks about to be used) and empties it.
#[inline]
fn flush_namings(line: &mut Vec<u8>, first: &mut bool, namings: &mut Vec<Naming>) {
    if !namings.is_empty() {
        write_namings(line, first, namings);
    }
}

#[cold]
fn write_namings(line: &mut Vec<u8>, first: &mut bool, namings: &mut Vec<Naming>) {
    for n in namings.drain(..) {
        begin(line, first);
        match n {
            Naming::Process(pid, name) => {
                line.s(r#"{"ph":"M","pid":"#).n(pid.into());
                line.s(r#","name":"process_name","args":{"name":"#).s(&name).s("}}");
            }
            Naming::Thread((pid, tid), name) => {
                line.s(r#"{"ph":"M","pid":"#).n(pid.into()).s(r#","tid":"#).n(tid.into());
                line.s(r#","name":"thread_name","args":{"name":"#).s(&name).s("}}");
            }
        }
    }
}

fn overhead_kind(k: OverheadKind) -> &'static str {
    match k {
        OverheadKind::BufferFlush => "buffer flush",
        OverheadKind::Instrumentation => "instrumentation",
        OverheadKind::Resolution => "resolution",
        _ => "other",
    }
}

/// `TriggerName` as `trigger-name`: a model variant's name as outputs show it.
fn kebab(name: &str) -> String {
    let mut out = String::new();
    for (i, c) in name.chars().enumerate() {
        if c.is_ascii_uppercase() && i > 0 {
            out.push('-');
        }
        out.push(c.to_ascii_lowercase());
    }
    out
}

/// Events are handed to the output once this many bytes of them are buffered (the sink's file
/// buffer is as large, so they go straight to the file).
const EMIT_BYTES: usize = 256 * 1024;

/// Counts the bytes written through it.
#[derive(Debug)]
struct Counting<W> {
    inner: W,
    bytes: u64,
}

impl<W: Write> Write for Counting<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.bytes += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

/// Options of the trace writer.
#[derive(Debug, Clone)]
pub struct TraceOptions {
    /// Write CPU samples as instant events.
    pub cpu_samples: bool,
}

/// Writes one trace.
#[derive(Debug)]
pub struct TraceWriter<W: Write> {
    out: Counting<W>,
    /// Events not handed to `out` yet (at most about [`EMIT_BYTES`]).
    line: Vec<u8>,
    opts: TraceOptions,
    tracks: Tracks,
    leaves: Leaves,
    namings: Vec<Naming>,
    first: bool,
    /// API calls waiting for their launch stack, flow ids, device work in start order.
    queues: Queues,
    /// Bytes allocated and not freed, per device.
    memory: IdMap<DeviceId, u64>,
    frames: StackFrames,
    args: OpArgs,
    /// Which launch stacks are compile-time work's.
    compile: crate::compile::CompileStacks,
    next_range: u64,
    losses: BTreeMap<String, u64>,
    /// The capture windows the trace covers (metadata `windows`), as JSON objects.
    windows: Vec<String>,
}

impl<W: Write> TraceWriter<W> {
    /// Starts a trace on `out`.
    pub fn new(mut out: W, opts: TraceOptions) -> io::Result<Self> {
        out.write_all(b"{\"traceEvents\":[")?;
        Ok(Self {
            out: Counting { inner: out, bytes: 16 },
            line: Vec::with_capacity(EMIT_BYTES + 64 * 1024),
            tracks: Tracks::default(),
            opts,
            leaves: Leaves::default(),
            namings: Vec::new(),
            first: true,
            queues: Queues::default(),
            memory: IdMap::default(),
            frames: StackFrames::default(),
            args: OpArgs::default(),
            compile: Default::default(),
            next_range: 1,
            losses: BTreeMap::new(),
            windows: Vec::new(),
        })
    }

    /// Bytes written so far.
    pub fn bytes(&self) -> u64 {
        self.out.bytes + self.line.len() as u64
    }

    /// Hands the buffered events to the output.
    fn emit(&mut self) -> io::Result<()> {
        let r = self.out.write_all(&self.line);
        self.line.clear();
        r
    }

    /// Device operations that overlapped work on every lane of their stream.
    pub fn overlaps(&self) -> u64 {
        self.tracks.overlaps
    }

    /// Device operations that started before work of their stream already placed (later than
    /// the reorder window).
    pub fn late(&self) -> u64 {
        self.queues.reorder.late
    }

    /// Launches (API calls and device work) drawn without an arrow because their correlation
    /// key does not fit a flow id, was used again, or its call is not in the trace (see
    /// [`xpuprof_toolbox::timeline::Flows`]).
    pub fn flows_not_drawn(&self) -> u64 {
        self.queues.flows.not_drawn
    }

    /// Starts the next event: a separator and a newline.
    fn begin(&mut self) {
        begin(&mut self.line, &mut self.first);
    }

    fn flush_namings(&mut self) {
        flush_namings(&mut self.line, &mut self.first, &mut self.namings);
    }

    /// Writes the events of one record.
    pub fn record(&mut self, r: &Record) -> io::Result<()> {
        self.events(r)?;
        // Handed on in large pieces: one `write_all` per record copied every event again into
        // the file's buffer; a piece at least as large as that buffer goes past it.
        if self.line.len() >= EMIT_BYTES {
            self.emit()?;
        }
        Ok(())
    }

    fn events(&mut self, r: &Record) -> io::Result<()> {
        if r.is_definition() {
            self.tracks.names.define(r, &mut self.namings);
            self.flush_namings();
            return Ok(());
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
            Record::Window(w) if w.end != 0 => {
                self.windows.push(format!(
                    r#"{{"start_ns":{},"end_ns":{},"opened_by":"{}"}}"#,
                    w.start,
                    w.end.max(w.start),
                    kebab(&format!("{:?}", w.opener))
                ));
                Ok(())
            }
            _ => Ok(()),
        }
    }

    /// Writes `,"ts":T` (and `,"dur":D` when `dur` is given).
    fn times(&mut self, ts: u64, dur: Option<u64>) -> io::Result<()> {
        self.line.write_all(b",\"ts\":")?;
        write_us(&mut self.line, ts)?;
        if let Some(d) = dur {
            self.line.write_all(b",\"dur\":")?;
            write_us(&mut self.line, d)?;
        }
        Ok(())
    }

    /// An allocation or a free: a point of the device's "memory in use (allocations)" counter.
    fn memory(&mut self, op: &DeviceOp) -> io::Result<()> {
        let used = self.memory.entry(op.device).or_default();
        *used = match op.kind {
            DeviceOpKind::Alloc => used.saturating_add(op.bytes),
            _ => used.saturating_sub(op.bytes),
        };
        let value = *used;
        let pid = self.tracks.names.device_pid(op.device, &mut self.namings);
        self.flush_namings();
        self.begin();
        self.line.s(r#"{"ph":"C","pid":"#).n(pid.into()).s(r#","name":"memory in use (allocations)""#);
        self.times(op.start, None)?;
        self.line.s(r#","args":{"value":"#).n(value).s("}}");
        Ok(())
    }

    fn sample(&mut self, s: &CpuSample) -> io::Result<()> {
        let (pid, tid) = self.tracks.names.host_track(s.pid, s.tid, &mut self.namings);
        self.flush_namings();
        self.begin();
        let kind = if s.kind == SampleKind::OffCpu { "off-cpu" } else { "cpu" };
        let name = self.leaves.leaf(s.stack, &self.tracks.names);
        write!(self.line, r#"{{"ph":"i","s":"t","pid":{pid},"tid":{tid},"cat":"{kind}","name":{name}"#)?;
        self.times(s.time, None)?;
        write!(self.line, r#","args":{{"weight_ns":{}}}"#, s.weight)?;
        if let Some(n) = self.frames.leaf(s.stack, &self.tracks.names) {
            self.line.s(r#","sf":"#).n(n);
        }
        self.line.write_all(b"}")
    }

    fn marker(&mut self, a: &Annotation) -> io::Result<()> {
        let (pid, tid) = self.tracks.names.host_track(a.pid, a.tid, &mut self.namings);
        self.flush_namings();
        self.begin();
        let cat = if a.domain.is_none() { "\"marker\"" } else { self.tracks.names.name(a.domain) };
        write!(
            self.line,
            r#"{{"ph":"i","s":"t","pid":{pid},"tid":{tid},"cat":{cat},"name":{}"#,
            self.tracks.names.name(a.name)
        )?;
        self.times(a.start, None)?;
        self.line.write_all(b"}")
    }

    /// Ranges are async slices ("b"/"e"): user ranges may overlap API calls without nesting.
    fn range(&mut self, a: &Annotation) -> io::Result<()> {
        let (pid, tid) = self.tracks.names.host_track(a.pid, a.tid, &mut self.namings);
        self.flush_namings();
        let id = self.next_range;
        self.next_range += 1;
        let cat = if a.domain.is_none() { "\"range\"" } else { self.tracks.names.name(a.domain) }.to_owned();
        let name = self.tracks.names.name(a.name).to_owned();
        for (ph, ts) in [("b", a.start), ("e", a.end)] {
            self.begin();
            write!(
                self.line,
                r#"{{"ph":"{ph}","id":{id},"cat":{cat},"name":{name},"pid":{pid},"tid":{tid}"#
            )?;
            self.times(ts, None)?;
            self.line.write_all(b"}")?;
        }
        Ok(())
    }

    /// Time the profiling machinery took (a tracing buffer flush, ...), on the thread it took it
    /// from: an async slice of category "overhead", since it may overlap the thread's API calls.
    fn overhead(&mut self, o: &Overhead) -> io::Result<()> {
        let tid = if o.tid == 0 { o.pid } else { o.tid };
        let (pid, tid) = self.tracks.names.host_track(o.pid, tid, &mut self.namings);
        self.flush_namings();
        let id = self.next_range;
        self.next_range += 1;
        let name = if o.name.is_none() { "\"profiler overhead\"" } else { self.tracks.names.name(o.name) }
            .to_owned();
        for (ph, ts) in [("b", o.start), ("e", o.end.max(o.start))] {
            self.begin();
            write!(
                self.line,
                r#"{{"ph":"{ph}","id":{id},"cat":"overhead","name":{name},"pid":{pid},"tid":{tid}"#
            )?;
            self.times(ts, None)?;
            if ph == "b" {
                write!(self.line, r#","args":{{"kind":"{}"}}"#, overhead_kind(o.kind))?;
            }
            self.line.write_all(b"}")?;
        }
        Ok(())
    }

    fn counter(&mut self, c: &Counter) -> io::Result<()> {
        if !c.value.is_finite() {
            return Ok(());
        }
        let pid = if c.device.is_none() {
            self.tracks.names.host_track(c.pid, c.pid, &mut self.namings).0
        } else {
            self.tracks.names.device_pid(c.device, &mut self.namings)
        };
        self.flush_namings();
        self.begin();
        write!(self.line, r#"{{"ph":"C","pid":{pid},"name":{}"#, self.tracks.names.name(c.name))?;
        self.times(c.time, None)?;
        write!(self.line, r#","args":{{"value":{}}}}}"#, c.value)
    }

    fn loss(&mut self, l: &Loss) -> io::Result<()> {
        let cause = self.tracks.names.text(l.cause).unwrap_or("unknown cause").to_owned();
        *self.losses.entry(cause.clone()).or_default() += l.count;
        let (pid, tid) = self.tracks.names.host_track(l.pid, l.pid, &mut self.namings);
        self.flush_namings();
        self.begin();
        let name = quoted(&format!("lost {}: {cause}", l.count));
        write!(self.line, r#"{{"ph":"i","s":"p","pid":{pid},"tid":{tid},"cat":"loss","name":{name}"#)?;
        self.times(l.time, None)?;
        self.line.write_all(b"}")
    }

    /// Closes the event array and writes the metadata block; returns the inner writer.
    pub fn finish(mut self, session: &SessionInfo) -> io::Result<W> {
        self.drain_timeline()?;
        let list = |v: &[String]| v.iter().map(|s| quoted(s)).collect::<Vec<_>>().join(",");
        let losses =
            self.losses.iter().map(|(k, v)| format!("{}:{v}", quoted(k))).collect::<Vec<_>>().join(",");
        // Only a session with capture windows lists them (it covers only those).
        let windows = if self.windows.is_empty() {
            String::new()
        } else {
            format!(",\"windows\":[{}]", self.windows.join(","))
        };
        self.line.s("\n],\n\"displayTimeUnit\":\"ns\",\n");
        if !self.frames.is_empty() {
            self.frames.write(&mut self.line);
            self.line.s(",\n");
        }
        writeln!(
            self.line,
            "\"metadata\":{{\"tool\":\"xpuprof\",\"command\":[{}],\
             \"sources\":[{}],\"start_time_ns\":{},\"losses\":{{{losses}}},\"device_overlaps\":{},\
             \"flows_not_drawn\":{}{windows}}}}}",
            list(&session.command),
            list(&session.sources),
            session.start_time,
            self.tracks.overlaps,
            self.queues.flows.not_drawn,
        )?;
        self.emit()?;
        self.out.flush()?;
        Ok(self.out.inner)
    }
}

impl<W: Write> TimelineSink for TraceWriter<W> {
    /// An API call: a complete event on its thread with its launch's stack as `"sf"`, the
    /// start of the arrows to the device work it launches (`flow_out`) when it has a
    /// correlation id. A call nested in another with the same id on the same thread (a runtime
    /// call and the driver call it makes, where a backend gives both one id) starts no second
    /// arrow: Perfetto counts a second start of one flow id as an import error
    /// (`flow_duplicate_id`) and catapult ignores it.
    fn write_api_call(&mut self, c: &ApiCall, stack: StackId) -> io::Result<()> {
        let sf = if stack.is_none() { None } else { self.frames.leaf(stack, &self.tracks.names) };
        let launches = !matches!(c.kind, ApiKind::Sync | ApiKind::Other);
        let thread = self.tracks.host_thread(c.pid, c.tid, &mut self.namings);
        let flows = &mut self.queues.flows;
        let flow = match c.correlation.filter(|_| launches).and_then(|corr| flows.id(c.pid, corr)) {
            // The nested call of the one that started this arrow: no second start.
            Some(id) if id == thread.last_flow => None,
            Some(id) => flows.start(id),
            None => None,
        };
        if let Some(id) = flow {
            thread.last_flow = id;
        }
        flush_namings(&mut self.line, &mut self.first, &mut self.namings);
        begin(&mut self.line, &mut self.first);
        let l = &mut self.line;
        l.extend_from_slice(&thread.prefix);
        l.us(c.start).s(r#","dur":"#).us(c.end.saturating_sub(c.start));
        l.s(r#","cat":"api","name":"#).s(self.tracks.names.name(c.name)).s(r#","args":{"#);
        let mut sep = "";
        if let Some(corr) = c.correlation {
            l.s(r#""correlation":"#).n(corr.id);
            sep = ",";
        }
        if c.result != 0 {
            write!(l, r#"{sep}"result":{}"#, c.result)?;
        }
        l.s("}");
        if let Some(id) = flow {
            l.s(r#","bind_id":"#).n(id).s(r#","flow_out":true"#);
        }
        if let Some(n) = sf {
            l.s(r#","sf":"#).n(n);
        }
        l.s("}");
        Ok(())
    }

    /// Device work in start order: a complete event on the first lane of its stream free at its
    /// start, the end of its launch's arrow (`flow_in`) when the correlator joined it to one.
    fn place(&mut self, op: &DeviceOp, flow: Option<u64>) -> io::Result<()> {
        if matches!(op.kind, DeviceOpKind::Alloc | DeviceOpKind::Free) {
            return self.memory(op);
        }
        let flow = self.queues.flows.end(flow);
        let prefix = self.tracks.device_x_prefix(op, &mut self.namings);
        flush_namings(&mut self.line, &mut self.first, &mut self.namings);
        begin(&mut self.line, &mut self.first);
        let l = &mut self.line;
        l.extend_from_slice(prefix);
        let collective = (op.collective != CollectiveOp::None).then(|| prefix.to_vec());
        let (mut cat, name) = op_name(&self.tracks.names, op);
        if self.compile.is_compile(self.tracks.names.defs(), op) {
            cat = crate::compile::category(cat);
        }
        l.us(op.start).s(r#","dur":"#).us(op.end.saturating_sub(op.start));
        l.s(r#","cat":""#).s(cat).s(r#"","name":"#).s(name).s(r#","args":{"#);
        self.args.write(l, op, flow.is_some());
        l.s("}");
        if let Some(id) = flow {
            l.s(r#","bind_id":"#).n(id).s(r#","flow_in":true"#);
        }
        l.s("}");
        let ranks = self.tracks.names.defs().world_size(op.pid).map_or(2, |n| n as usize);
        if let (Some(prefix), Some(link)) = (collective, self.queues.collectives.link(op, ranks)) {
            crate::collective_flow::write(&mut self.line, &mut self.first, &prefix, op, link);
        }
        Ok(())
    }

    fn queues(&mut self) -> &mut Queues {
        &mut self.queues
    }
}
