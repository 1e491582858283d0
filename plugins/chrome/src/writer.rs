//! Streams records out as Trace Event JSON.
//!
//! Layout: `{"traceEvents":[` + one event per line + `],"displayTimeUnit":"ns","metadata":{..}}`.
//! Events are written as records arrive; only names, per-stream lane ends and loss totals are
//! kept, so memory does not grow with the length of the run.

use std::collections::BTreeMap;
use std::io::{self, Write};

use xpuprof_sdk::model::*;
use xpuprof_sdk::SessionInfo;

use crate::json::{quoted, write_us, Push};
use crate::leaves::Leaves;
use crate::tracks::{Naming, Tracks};

/// Flow events (launch → device work) all use this category and name; Perfetto pairs them by
/// id, category and name.
pub const FLOW: &str = r#""cat":"flow","name":"launch""#;

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

/// Appends the `args` of device operation `op` after its `pid`.
fn overhead_kind(k: OverheadKind) -> &'static str {
    match k {
        OverheadKind::BufferFlush => "buffer flush",
        OverheadKind::Instrumentation => "instrumentation",
        OverheadKind::Resolution => "resolution",
        _ => "other",
    }
}

fn op_args(l: &mut Vec<u8>, op: &DeviceOp) {
    if let Some(c) = op.correlation {
        l.s(r#","correlation":"#).n(c.id);
    }
    if op.bytes != 0 {
        l.s(r#","bytes":"#).n(op.bytes);
    }
    if let Some(k) = &op.kernel {
        l.s(r#","grid":["#).n(k.grid[0].into()).s(",").n(k.grid[1].into()).s(",").n(k.grid[2].into());
        l.s(r#"],"block":["#).n(k.block[0].into()).s(",").n(k.block[1].into()).s(",").n(k.block[2].into());
        l.s(r#"],"shared_memory":"#).n(k.shared_memory.into()).s(r#","registers":"#).n(k.registers.into());
    }
    if let Some(g) = &op.graph {
        l.s(r#","graph":"#).n(g.graph).s(r#","graph_node":"#).n(g.node);
    }
    if op.launch.is_none() {
        l.s(r#","launch":"unknown launch site""#);
    }
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
    next_flow: u64,
    next_range: u64,
    losses: BTreeMap<String, u64>,
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
            next_flow: 1,
            next_range: 1,
            losses: BTreeMap::new(),
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

    /// Starts the next event: a separator and a newline.
    fn begin(&mut self) -> io::Result<()> {
        let sep: &[u8] = if self.first { b"\n" } else { b",\n" };
        self.first = false;
        self.line.write_all(sep)
    }

    fn flush_namings(&mut self) -> io::Result<()> {
        let namings = std::mem::take(&mut self.namings);
        for n in &namings {
            self.begin()?;
            match n {
                Naming::Process(pid, name) => write!(
                    self.line,
                    r#"{{"ph":"M","pid":{pid},"name":"process_name","args":{{"name":{name}}}}}"#
                )?,
                Naming::Thread((pid, tid), name) => write!(
                    self.line,
                    r#"{{"ph":"M","pid":{pid},"tid":{tid},"name":"thread_name","args":{{"name":{name}}}}}"#
                )?,
            }
        }
        self.namings = namings;
        self.namings.clear();
        Ok(())
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
            self.tracks.define(r, &mut self.namings);
            return self.flush_namings();
        }
        match r {
            Record::ApiCall(c) => self.api_call(c),
            Record::DeviceOp(op) => self.device_op(op),
            Record::CpuSample(s) if self.opts.cpu_samples => self.sample(s),
            Record::Marker(a) => self.marker(a),
            Record::Range(a) => self.range(a),
            Record::Counter(c) => self.counter(c),
            Record::Loss(l) => self.loss(l),
            Record::Overhead(o) => self.overhead(o),
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

    fn api_call(&mut self, c: &ApiCall) -> io::Result<()> {
        let (pid, tid) = self.tracks.host_track(c.pid, c.tid, &mut self.namings);
        self.flush_namings()?;
        self.begin()?;
        let l = &mut self.line;
        l.s(r#"{"ph":"X","pid":"#).n(pid.into()).s(r#","tid":"#).n(tid.into());
        l.s(r#","ts":"#).us(c.start).s(r#","dur":"#).us(c.end.saturating_sub(c.start));
        l.s(r#","cat":"api","name":"#).s(self.tracks.name(c.name)).s(r#","args":{"#);
        let mut sep = "";
        if let Some(corr) = c.correlation {
            l.s(r#""correlation":"#).n(corr.id);
            sep = ",";
        }
        if c.result != 0 {
            write!(l, r#"{sep}"result":{}"#, c.result)?;
        }
        l.s("}}");
        Ok(())
    }

    fn device_op(&mut self, op: &DeviceOp) -> io::Result<()> {
        let (pid, tid) = self.tracks.device_track(op, &mut self.namings);
        let host = op.launch.map(|l| self.tracks.host_track(op.pid, l.tid, &mut self.namings));
        self.flush_namings()?;
        self.begin()?;
        let (cat, name) = Self::op_name(&self.tracks, op);
        let l = &mut self.line;
        l.s(r#"{"ph":"X","pid":"#).n(pid.into()).s(r#","tid":"#).n(tid.into());
        l.s(r#","ts":"#).us(op.start).s(r#","dur":"#).us(op.end.saturating_sub(op.start));
        l.s(r#","cat":""#).s(cat).s(r#"","name":"#).s(name).s(r#","args":{"pid":"#).n(op.pid.into());
        op_args(l, op);
        l.s("}}");
        if let (Some(launch), Some((hpid, htid))) = (op.launch, host) {
            let id = self.next_flow;
            self.next_flow += 1;
            let l = &mut self.line;
            l.s(",\n").s(r#"{"ph":"s","id":"#).n(id).s(",").s(FLOW);
            l.s(r#","pid":"#)
                .n(hpid.into())
                .s(r#","tid":"#)
                .n(htid.into())
                .s(r#","ts":"#)
                .us(launch.time)
                .s("}");
            l.s(",\n").s(r#"{"ph":"f","bp":"e","id":"#).n(id).s(",").s(FLOW);
            l.s(r#","pid":"#).n(pid.into()).s(r#","tid":"#).n(tid.into()).s(r#","ts":"#).us(op.start).s("}");
        }
        Ok(())
    }

    fn op_name<'t>(tracks: &'t Tracks, op: &DeviceOp) -> (&'static str, &'t str) {
        match op.kind {
            DeviceOpKind::Kernel => ("kernel", tracks.name(op.name)),
            DeviceOpKind::Memcpy => ("memcpy", memcpy_name(op.copy)),
            DeviceOpKind::Memset => ("memset", "\"Memset\""),
            DeviceOpKind::Sync => ("sync", "\"Sync\""),
            DeviceOpKind::Alloc => ("alloc", "\"Alloc\""),
            DeviceOpKind::Free => ("free", "\"Free\""),
            _ => ("other", tracks.name(op.name)),
        }
    }

    fn sample(&mut self, s: &CpuSample) -> io::Result<()> {
        let (pid, tid) = self.tracks.host_track(s.pid, s.tid, &mut self.namings);
        self.flush_namings()?;
        self.begin()?;
        let kind = if s.kind == SampleKind::OffCpu { "off-cpu" } else { "cpu" };
        let name = self.leaves.leaf(s.stack, &self.tracks);
        write!(self.line, r#"{{"ph":"i","s":"t","pid":{pid},"tid":{tid},"cat":"{kind}","name":{name}"#)?;
        self.times(s.time, None)?;
        write!(self.line, r#","args":{{"weight_ns":{},"stack":{}}}}}"#, s.weight, s.stack.0)
    }

    fn marker(&mut self, a: &Annotation) -> io::Result<()> {
        let (pid, tid) = self.tracks.host_track(a.pid, a.tid, &mut self.namings);
        self.flush_namings()?;
        self.begin()?;
        let cat = if a.domain.is_none() { "\"marker\"" } else { self.tracks.name(a.domain) };
        write!(
            self.line,
            r#"{{"ph":"i","s":"t","pid":{pid},"tid":{tid},"cat":{cat},"name":{}"#,
            self.tracks.name(a.name)
        )?;
        self.times(a.start, None)?;
        self.line.write_all(b"}")
    }

    /// Ranges are async slices ("b"/"e"): user ranges may overlap API calls without nesting.
    fn range(&mut self, a: &Annotation) -> io::Result<()> {
        let (pid, tid) = self.tracks.host_track(a.pid, a.tid, &mut self.namings);
        self.flush_namings()?;
        let id = self.next_range;
        self.next_range += 1;
        let cat = if a.domain.is_none() { "\"range\"" } else { self.tracks.name(a.domain) }.to_owned();
        let name = self.tracks.name(a.name).to_owned();
        for (ph, ts) in [("b", a.start), ("e", a.end)] {
            self.begin()?;
            write!(
                self.line,
                r#"{{"ph":"{ph}","id":{id},"cat":{cat},"name":{name},"pid":{pid},"tid":{tid}"#
            )?;
            self.times(ts, None)?;
            self.line.write_all(b"}")?;
        }
        Ok(())
    }

    /// Time the profiling machinery took (a CUPTI buffer flush, ...), on the thread it took it
    /// from: an async slice of category "overhead", since it may overlap the thread's API calls.
    fn overhead(&mut self, o: &Overhead) -> io::Result<()> {
        let tid = if o.tid == 0 { o.pid } else { o.tid };
        let (pid, tid) = self.tracks.host_track(o.pid, tid, &mut self.namings);
        self.flush_namings()?;
        let id = self.next_range;
        self.next_range += 1;
        let name =
            if o.name.is_none() { "\"profiler overhead\"" } else { self.tracks.name(o.name) }.to_owned();
        for (ph, ts) in [("b", o.start), ("e", o.end.max(o.start))] {
            self.begin()?;
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
            self.tracks.host_track(c.pid, c.pid, &mut self.namings).0
        } else {
            self.tracks.device_pid(c.device, &mut self.namings)
        };
        self.flush_namings()?;
        self.begin()?;
        write!(self.line, r#"{{"ph":"C","pid":{pid},"name":{}"#, self.tracks.name(c.name))?;
        self.times(c.time, None)?;
        write!(self.line, r#","args":{{"value":{}}}}}"#, c.value)
    }

    fn loss(&mut self, l: &Loss) -> io::Result<()> {
        let cause = self.tracks.text(l.cause).unwrap_or("unknown cause").to_owned();
        *self.losses.entry(cause.clone()).or_default() += l.count;
        let (pid, tid) = self.tracks.host_track(l.pid, l.pid, &mut self.namings);
        self.flush_namings()?;
        self.begin()?;
        let name = quoted(&format!("lost {}: {cause}", l.count));
        write!(self.line, r#"{{"ph":"i","s":"p","pid":{pid},"tid":{tid},"cat":"loss","name":{name}"#)?;
        self.times(l.time, None)?;
        self.line.write_all(b"}")
    }

    /// Closes the event array and writes the metadata block; returns the inner writer.
    pub fn finish(mut self, session: &SessionInfo) -> io::Result<W> {
        let list = |v: &[String]| v.iter().map(|s| quoted(s)).collect::<Vec<_>>().join(",");
        let losses =
            self.losses.iter().map(|(k, v)| format!("{}:{v}", quoted(k))).collect::<Vec<_>>().join(",");
        write!(
            self.line,
            "\n],\n\"displayTimeUnit\":\"ns\",\n\"metadata\":{{\"tool\":\"xpuprof\",\"command\":[{}],\
             \"sources\":[{}],\"start_time_ns\":{},\"losses\":{{{losses}}},\"device_overlaps\":{}}}}}\n",
            list(&session.command),
            list(&session.sources),
            session.start_time,
            self.tracks.overlaps,
        )?;
        self.emit()?;
        self.out.flush()?;
        Ok(self.out.inner)
    }
}
