//! Binary encoding of [`Record`]s: how events cross the plugin ABI.
//!
//! A batch is a plain byte buffer holding records back to back. Each record is
//! `tag: u8, len: varint, payload: len bytes`; payload fields are LEB128 varints
//! (zig-zag for signed values), length-prefixed byte strings and fixed `f64`s.
//!
//! The format only grows by appending, which is what keeps old and new plugins compatible:
//! - a reader skips records whose tag it does not know (the length says how far);
//! - a reader ignores payload bytes after the fields it knows (a newer writer appended some);
//! - a field missing at the end of a payload reads as its default (an older writer).
//!
//! [`CODEC_VERSION`] is bumped when fields are appended, for information only.

use crate::model::*;

/// Version of the record encoding. Only ever grows; see the module docs.
pub const CODEC_VERSION: u32 = 1;

/// Error decoding a batch: what was wrong and at which byte offset.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodeError {
    /// Byte offset in the batch where the bad record starts.
    pub offset: usize,
    /// What is wrong.
    pub reason: &'static str,
}

impl std::fmt::Display for DecodeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "bad record at byte {}: {}", self.offset, self.reason)
    }
}

impl std::error::Error for DecodeError {}

mod tag {
    pub const STR: u8 = 1;
    pub const PROCESS: u8 = 2;
    pub const THREAD: u8 = 3;
    pub const DEVICE: u8 = 4;
    pub const STREAM: u8 = 5;
    pub const MODULE: u8 = 6;
    pub const FRAME: u8 = 7;
    pub const STACK: u8 = 8;
    pub const API_CALL: u8 = 16;
    pub const DEVICE_OP: u8 = 17;
    pub const LAUNCH_SITE: u8 = 18;
    pub const CPU_SAMPLE: u8 = 19;
    pub const MARKER: u8 = 20;
    pub const RANGE: u8 = 21;
    pub const COUNTER: u8 = 22;
    pub const LOSS: u8 = 23;
    pub const CLOCK_SYNC: u8 = 24;
}

/// Appends a LEB128 varint.
#[inline]
pub fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Appends a zig-zag encoded signed varint.
#[inline]
pub fn put_svarint(out: &mut Vec<u8>, v: i64) {
    put_varint(out, ((v << 1) ^ (v >> 63)) as u64);
}

/// Appends a length-prefixed byte string.
#[inline]
pub fn put_bytes(out: &mut Vec<u8>, b: &[u8]) {
    put_varint(out, b.len() as u64);
    out.extend_from_slice(b);
}

/// A cursor over a payload; reads past the end yield defaults (see module docs).
#[derive(Debug)]
pub struct Cursor<'a> {
    buf: &'a [u8],
    pos: usize,
    bad: bool,
}

impl<'a> Cursor<'a> {
    /// A cursor at the start of `buf`.
    pub fn new(buf: &'a [u8]) -> Self {
        Self { buf, pos: 0, bad: false }
    }

    /// Bytes consumed so far.
    pub fn position(&self) -> usize {
        self.pos
    }

    /// True once a malformed value (overlong varint, string past the end) was met.
    pub fn is_bad(&self) -> bool {
        self.bad
    }

    /// True when every byte has been read.
    pub fn at_end(&self) -> bool {
        self.pos >= self.buf.len()
    }

    /// Reads a varint; 0 at the end of the payload.
    #[inline]
    pub fn varint(&mut self) -> u64 {
        let mut v = 0u64;
        let mut shift = 0u32;
        while self.pos < self.buf.len() {
            let b = self.buf[self.pos];
            self.pos += 1;
            if shift >= 64 {
                self.bad = true;
                return 0;
            }
            v |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return v;
            }
            shift += 7;
        }
        if shift > 0 {
            self.bad = true;
        }
        v
    }

    /// Reads a varint as `u32`, flagging values that do not fit.
    #[inline]
    pub fn u32(&mut self) -> u32 {
        let v = self.varint();
        u32::try_from(v).unwrap_or_else(|_| {
            self.bad = true;
            0
        })
    }

    /// Reads a zig-zag varint.
    #[inline]
    pub fn svarint(&mut self) -> i64 {
        let v = self.varint();
        ((v >> 1) as i64) ^ -((v & 1) as i64)
    }

    /// Reads a byte.
    #[inline]
    pub fn u8(&mut self) -> u8 {
        if self.pos < self.buf.len() {
            self.pos += 1;
            self.buf[self.pos - 1]
        } else {
            0
        }
    }

    /// Reads a length-prefixed byte string.
    #[inline]
    pub fn bytes(&mut self) -> &'a [u8] {
        let len = self.varint() as usize;
        match self.pos.checked_add(len) {
            Some(end) if end <= self.buf.len() => {
                let s = &self.buf[self.pos..end];
                self.pos = end;
                s
            }
            _ => {
                self.bad = true;
                self.pos = self.buf.len();
                &[]
            }
        }
    }

    /// Reads a little-endian `f64`.
    pub fn f64(&mut self) -> f64 {
        let mut b = [0u8; 8];
        for x in &mut b {
            *x = self.u8();
        }
        f64::from_le_bytes(b)
    }
}

fn put_opt_corr(out: &mut Vec<u8>, c: Option<Correlation>) {
    match c {
        None => put_varint(out, 0),
        Some(c) => {
            put_varint(out, u64::from(c.backend) + 1);
            put_varint(out, c.id);
        }
    }
}

fn get_opt_corr(c: &mut Cursor<'_>) -> Option<Correlation> {
    match c.varint() {
        0 => None,
        b => Some(Correlation { backend: (b - 1) as u32, id: c.varint() }),
    }
}

fn put_ids(out: &mut Vec<u8>, ids: impl ExactSizeIterator<Item = u32>) {
    put_varint(out, ids.len() as u64);
    for id in ids {
        put_varint(out, u64::from(id));
    }
}

fn get_ids(c: &mut Cursor<'_>) -> Vec<u32> {
    let n = c.varint() as usize;
    // Every id takes at least one byte: refuse counts the payload cannot hold.
    if n > c.buf.len().saturating_sub(c.pos) {
        c.bad = true;
        return Vec::new();
    }
    (0..n).map(|_| c.u32()).collect()
}

/// Encodes one record, appending it to `out`.
pub fn encode(record: &Record, out: &mut Vec<u8>) {
    let tag_pos = out.len();
    out.push(0);
    // Reserve one byte for the length; payloads of 128 bytes or more shift into place below.
    out.push(0);
    let body = out.len();
    let t = encode_payload(record, out);
    out[tag_pos] = t;
    let len = out.len() - body;
    if len < 0x80 {
        out[tag_pos + 1] = len as u8;
    } else {
        let mut lenbuf = Vec::with_capacity(4);
        put_varint(&mut lenbuf, len as u64);
        out.splice(tag_pos + 1..tag_pos + 2, lenbuf);
    }
}

fn encode_payload(record: &Record, o: &mut Vec<u8>) -> u8 {
    match record {
        Record::Str(d) => {
            put_varint(o, d.id.0.into());
            put_bytes(o, d.text.as_bytes());
            tag::STR
        }
        Record::Process(d) => {
            put_varint(o, d.pid.into());
            put_varint(o, d.ppid.into());
            put_varint(o, d.command.0.into());
            tag::PROCESS
        }
        Record::Thread(d) => {
            put_varint(o, d.pid.into());
            put_varint(o, d.tid.into());
            put_varint(o, d.name.0.into());
            tag::THREAD
        }
        Record::Device(d) => {
            put_varint(o, d.id.0.into());
            o.push(d.vendor as u8);
            put_varint(o, d.index.into());
            put_varint(o, d.name.0.into());
            put_bytes(o, &d.uuid);
            put_varint(o, d.compute_units.into());
            put_varint(o, d.memory_bytes);
            tag::DEVICE
        }
        Record::Stream(d) => {
            put_varint(o, d.id.0.into());
            put_varint(o, d.device.0.into());
            put_varint(o, d.pid.into());
            put_varint(o, d.native_id);
            put_varint(o, d.name.0.into());
            tag::STREAM
        }
        Record::Module(d) => {
            put_varint(o, d.id.0.into());
            put_varint(o, d.path.0.into());
            put_bytes(o, &d.build_id);
            tag::MODULE
        }
        Record::Frame(d) => {
            put_varint(o, d.id.0.into());
            o.push(d.kind as u8);
            put_varint(o, d.module.0.into());
            put_varint(o, d.address);
            put_varint(o, d.pid.into());
            put_varint(o, d.name.0.into());
            put_ids(o, d.inlined.iter().map(|s| s.0));
            tag::FRAME
        }
        Record::Stack(d) => {
            put_varint(o, d.id.0.into());
            put_ids(o, d.frames.iter().map(|s| s.0));
            tag::STACK
        }
        Record::ApiCall(e) => {
            put_varint(o, e.pid.into());
            put_varint(o, e.tid.into());
            put_varint(o, e.start);
            put_varint(o, e.end.saturating_sub(e.start));
            put_varint(o, e.name.0.into());
            put_opt_corr(o, e.correlation);
            put_svarint(o, e.result);
            match e.external {
                None => put_varint(o, 0),
                Some(x) => {
                    put_varint(o, u64::from(x.kind) + 1);
                    put_varint(o, x.id);
                }
            }
            tag::API_CALL
        }
        Record::DeviceOp(e) => {
            encode_device_op(e, o);
            tag::DEVICE_OP
        }
        Record::LaunchSite(e) => {
            put_varint(o, e.pid.into());
            put_varint(o, e.tid.into());
            put_varint(o, e.time);
            put_opt_corr(o, Some(e.correlation));
            put_varint(o, e.api.0.into());
            put_varint(o, e.stack.0.into());
            tag::LAUNCH_SITE
        }
        Record::CpuSample(e) => {
            put_varint(o, e.pid.into());
            put_varint(o, e.tid.into());
            put_varint(o, e.time);
            o.push(e.kind as u8);
            put_varint(o, e.weight);
            put_varint(o, e.stack.0.into());
            tag::CPU_SAMPLE
        }
        Record::Marker(a) | Record::Range(a) => {
            put_varint(o, a.pid.into());
            put_varint(o, a.tid.into());
            put_varint(o, a.start);
            put_varint(o, a.end.saturating_sub(a.start));
            put_varint(o, a.name.0.into());
            put_varint(o, a.domain.0.into());
            if matches!(record, Record::Marker(_)) {
                tag::MARKER
            } else {
                tag::RANGE
            }
        }
        Record::Counter(e) => {
            put_varint(o, e.pid.into());
            put_varint(o, e.device.0.into());
            put_varint(o, e.time);
            put_varint(o, e.name.0.into());
            o.extend_from_slice(&e.value.to_le_bytes());
            tag::COUNTER
        }
        Record::Loss(e) => {
            put_varint(o, e.pid.into());
            put_varint(o, e.time);
            put_varint(o, e.cause.0.into());
            put_varint(o, e.count);
            tag::LOSS
        }
        Record::ClockSync(e) => {
            put_varint(o, e.domain.0.into());
            put_varint(o, e.source_time);
            put_varint(o, e.session_time);
            tag::CLOCK_SYNC
        }
    }
}

fn encode_device_op(e: &DeviceOp, o: &mut Vec<u8>) {
    o.push(e.kind as u8);
    put_varint(o, e.pid.into());
    put_varint(o, e.device.0.into());
    put_varint(o, e.stream.0.into());
    put_varint(o, e.start);
    put_varint(o, e.end.saturating_sub(e.start));
    put_varint(o, e.clock.0.into());
    put_varint(o, e.name.0.into());
    put_varint(o, e.bytes);
    o.push(e.copy as u8);
    put_opt_corr(o, e.correlation);
    // Presence bits for the optional groups.
    let flags = u8::from(e.kernel.is_some())
        | (u8::from(e.graph.is_some()) << 1)
        | (u8::from(e.launch.is_some()) << 2);
    o.push(flags);
    if let Some(k) = &e.kernel {
        for v in k.grid.iter().chain(&k.block) {
            put_varint(o, (*v).into());
        }
        put_varint(o, k.shared_memory.into());
        put_varint(o, k.registers.into());
    }
    if let Some(g) = &e.graph {
        put_varint(o, g.graph);
        put_varint(o, g.node);
    }
    if let Some(l) = &e.launch {
        put_varint(o, l.tid.into());
        put_varint(o, l.stack.0.into());
        put_varint(o, l.api.0.into());
        put_varint(o, l.time);
    }
}

fn decode_device_op(c: &mut Cursor<'_>) -> DeviceOp {
    let kind = DeviceOpKind::from_u8(c.u8());
    let pid = c.u32();
    let device = DeviceId(c.u32());
    let stream = StreamId(c.u32());
    let start = c.varint();
    let end = start.saturating_add(c.varint());
    let clock = ClockDomain(c.u32());
    let name = StrId(c.u32());
    let bytes = c.varint();
    let copy = CopyKind::from_u8(c.u8());
    let correlation = get_opt_corr(c);
    let flags = c.u8();
    let kernel = (flags & 1 != 0).then(|| {
        let mut v = [0u32; 6];
        for x in &mut v {
            *x = c.u32();
        }
        KernelInfo {
            grid: [v[0], v[1], v[2]],
            block: [v[3], v[4], v[5]],
            shared_memory: c.u32(),
            registers: c.u32(),
        }
    });
    let graph = (flags & 2 != 0).then(|| GraphInfo { graph: c.varint(), node: c.varint() });
    let launch = (flags & 4 != 0).then(|| LaunchRef {
        tid: c.u32(),
        stack: StackId(c.u32()),
        api: StrId(c.u32()),
        time: c.varint(),
    });
    DeviceOp {
        kind,
        pid,
        device,
        stream,
        start,
        end,
        clock,
        name,
        bytes,
        copy,
        correlation,
        kernel,
        graph,
        launch,
    }
}

fn decode_payload(t: u8, c: &mut Cursor<'_>) -> Option<Record> {
    Some(match t {
        tag::STR => {
            let id = StrId(c.u32());
            let text = String::from_utf8_lossy(c.bytes()).into_owned();
            Record::Str(StrDef { id, text })
        }
        tag::PROCESS => Record::Process(ProcessDef { pid: c.u32(), ppid: c.u32(), command: StrId(c.u32()) }),
        tag::THREAD => Record::Thread(ThreadDef { pid: c.u32(), tid: c.u32(), name: StrId(c.u32()) }),
        tag::DEVICE => {
            let id = DeviceId(c.u32());
            let vendor = Vendor::from_u8(c.u8());
            let index = c.u32();
            let name = StrId(c.u32());
            let mut uuid = [0u8; 16];
            let raw = c.bytes();
            let n = raw.len().min(16);
            uuid[..n].copy_from_slice(&raw[..n]);
            Record::Device(DeviceDef {
                id,
                vendor,
                index,
                name,
                uuid,
                compute_units: c.u32(),
                memory_bytes: c.varint(),
            })
        }
        tag::STREAM => Record::Stream(StreamDef {
            id: StreamId(c.u32()),
            device: DeviceId(c.u32()),
            pid: c.u32(),
            native_id: c.varint(),
            name: StrId(c.u32()),
        }),
        tag::MODULE => Record::Module(ModuleDef {
            id: ModuleId(c.u32()),
            path: StrId(c.u32()),
            build_id: c.bytes().to_vec(),
        }),
        tag::FRAME => Record::Frame(FrameDef {
            id: FrameId(c.u32()),
            kind: FrameKind::from_u8(c.u8()),
            module: ModuleId(c.u32()),
            address: c.varint(),
            pid: c.u32(),
            name: StrId(c.u32()),
            inlined: get_ids(c).into_iter().map(StrId).collect(),
        }),
        tag::STACK => Record::Stack(StackDef {
            id: StackId(c.u32()),
            frames: get_ids(c).into_iter().map(FrameId).collect(),
        }),
        tag::API_CALL => {
            let pid = c.u32();
            let tid = c.u32();
            let start = c.varint();
            let end = start.saturating_add(c.varint());
            let name = StrId(c.u32());
            let correlation = get_opt_corr(c);
            let result = c.svarint();
            let external = match c.varint() {
                0 => None,
                k => Some(ExternalId { kind: (k - 1) as u32, id: c.varint() }),
            };
            Record::ApiCall(ApiCall { pid, tid, start, end, name, correlation, external, result })
        }
        tag::DEVICE_OP => Record::DeviceOp(decode_device_op(c)),
        tag::LAUNCH_SITE => {
            let pid = c.u32();
            let tid = c.u32();
            let time = c.varint();
            let correlation = get_opt_corr(c)?;
            Record::LaunchSite(LaunchSite {
                pid,
                tid,
                time,
                correlation,
                api: StrId(c.u32()),
                stack: StackId(c.u32()),
            })
        }
        tag::CPU_SAMPLE => Record::CpuSample(CpuSample {
            pid: c.u32(),
            tid: c.u32(),
            time: c.varint(),
            kind: if c.u8() == 1 { SampleKind::OffCpu } else { SampleKind::OnCpu },
            weight: c.varint(),
            stack: StackId(c.u32()),
        }),
        tag::MARKER | tag::RANGE => {
            let pid = c.u32();
            let tid = c.u32();
            let start = c.varint();
            let end = start.saturating_add(c.varint());
            let a = Annotation { pid, tid, start, end, name: StrId(c.u32()), domain: StrId(c.u32()) };
            if t == tag::MARKER {
                Record::Marker(a)
            } else {
                Record::Range(a)
            }
        }
        tag::COUNTER => Record::Counter(Counter {
            pid: c.u32(),
            device: DeviceId(c.u32()),
            time: c.varint(),
            name: StrId(c.u32()),
            value: c.f64(),
        }),
        tag::LOSS => {
            Record::Loss(Loss { pid: c.u32(), time: c.varint(), cause: StrId(c.u32()), count: c.varint() })
        }
        tag::CLOCK_SYNC => Record::ClockSync(ClockSync {
            domain: ClockDomain(c.u32()),
            source_time: c.varint(),
            session_time: c.varint(),
        }),
        _ => return None,
    })
}

/// Iterates over the records of a batch.
///
/// Unknown record tags are skipped. A malformed record ends the iteration with an error that
/// names its byte offset; everything before it has been returned.
#[derive(Debug)]
pub struct Decoder<'a> {
    buf: &'a [u8],
    pos: usize,
    skipped: u64,
}

impl<'a> Decoder<'a> {
    /// A decoder over `buf`.
    pub fn new(buf: &'a [u8]) -> Self {
        Self { buf, pos: 0, skipped: 0 }
    }

    /// Records skipped because their tag is unknown to this SDK version.
    pub fn skipped(&self) -> u64 {
        self.skipped
    }

    /// Byte offset of the next record.
    pub fn position(&self) -> usize {
        self.pos
    }

    fn fail(&mut self, offset: usize, reason: &'static str) -> Option<Result<Record, DecodeError>> {
        self.pos = self.buf.len();
        Some(Err(DecodeError { offset, reason }))
    }
}

impl Iterator for Decoder<'_> {
    type Item = Result<Record, DecodeError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if self.pos >= self.buf.len() {
                return None;
            }
            let start = self.pos;
            let t = self.buf[start];
            let mut c = Cursor::new(&self.buf[start + 1..]);
            let len = c.varint() as usize;
            if c.is_bad() {
                return self.fail(start, "truncated record length");
            }
            let body = start + 1 + c.position();
            let Some(end) = body.checked_add(len).filter(|&e| e <= self.buf.len()) else {
                return self.fail(start, "record runs past the end of the batch");
            };
            self.pos = end;
            let mut p = Cursor::new(&self.buf[body..end]);
            match decode_payload(t, &mut p) {
                Some(_) if p.is_bad() => return self.fail(start, "malformed field in record"),
                Some(r) => return Some(Ok(r)),
                None if t == tag::LAUNCH_SITE => {
                    return self.fail(start, "launch site without a correlation id")
                }
                None => self.skipped += 1,
            }
        }
    }
}

/// Decodes a whole batch, stopping at the first malformed record.
pub fn decode_all(buf: &[u8]) -> Result<Vec<Record>, DecodeError> {
    Decoder::new(buf).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample_records() -> Vec<Record> {
        vec![
            Record::Str(StrDef { id: StrId(1), text: "cudaLaunchKernel".into() }),
            Record::Str(StrDef { id: StrId(2), text: "x".repeat(300) }),
            Record::Frame(FrameDef {
                id: FrameId(3),
                kind: FrameKind::FileOffset,
                module: ModuleId(2),
                address: 0x1234,
                pid: 9,
                name: StrId(1),
                inlined: vec![StrId(1), StrId(2)],
            }),
            Record::Stack(StackDef { id: StackId(1), frames: vec![FrameId(3), FrameId(3)] }),
            Record::DeviceOp(DeviceOp {
                kind: DeviceOpKind::Kernel,
                pid: 9,
                device: DeviceId(1),
                stream: StreamId(7),
                start: 1_000_000,
                end: 1_002_000,
                clock: ClockDomain::SESSION,
                name: StrId(2),
                bytes: 0,
                copy: CopyKind::Unknown,
                correlation: Some(Correlation { backend: backend::CUDA, id: 42 }),
                kernel: Some(KernelInfo {
                    grid: [1, 2, 3],
                    block: [4, 5, 6],
                    shared_memory: 7,
                    registers: 8,
                }),
                graph: Some(GraphInfo { graph: 5, node: 6 }),
                launch: None,
            }),
            Record::ApiCall(ApiCall {
                pid: 9,
                tid: 10,
                start: 5,
                end: 9,
                name: StrId(1),
                correlation: None,
                external: Some(ExternalId { kind: 0, id: 3 }),
                result: -4,
            }),
            Record::Counter(Counter { pid: 1, device: DeviceId(1), time: 3, name: StrId(1), value: 2.5 }),
            Record::Loss(Loss { pid: 1, time: 2, cause: StrId(1), count: 17 }),
        ]
    }

    #[test]
    fn round_trips_every_record() {
        let recs = sample_records();
        let mut buf = Vec::new();
        for r in &recs {
            encode(r, &mut buf);
        }
        assert_eq!(decode_all(&buf).unwrap(), recs);
    }

    #[test]
    fn skips_unknown_tags_and_ignores_appended_fields() {
        let mut buf = vec![200, 3, 1, 2, 3];
        encode(&Record::Loss(Loss { pid: 1, time: 2, cause: StrId(3), count: 4 }), &mut buf);
        // Simulate a newer writer that appended a field to the loss record.
        let n = buf.len();
        buf[6] += 1;
        buf.insert(n, 99);
        let mut d = Decoder::new(&buf);
        let got: Vec<_> = d.by_ref().collect::<Result<_, _>>().unwrap();
        assert_eq!(got, vec![Record::Loss(Loss { pid: 1, time: 2, cause: StrId(3), count: 4 })]);
        assert_eq!(d.skipped(), 1);
    }

    #[test]
    fn truncated_batch_reports_offset_and_keeps_prefix() {
        let mut buf = Vec::new();
        for r in sample_records() {
            encode(&r, &mut buf);
        }
        let cut = buf.len() - 3;
        let results: Vec<_> = Decoder::new(&buf[..cut]).collect();
        assert!(results[..results.len() - 1].iter().all(|r| r.is_ok()));
        let err = results.last().unwrap().clone().unwrap_err();
        assert!(err.offset > 0 && err.offset < cut, "{err}");
    }
}
