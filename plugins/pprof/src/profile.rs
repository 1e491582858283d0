//! Aggregates records into pprof samples and builds the `Profile` message.
//!
//! Sample types, in this order, each listed only when some sample has a value for it (a run
//! without off-CPU samples has no `off_cpu_time`):
//! 1. `gpu_time/nanoseconds`: device time of kernels, copies, sets and other device work, under
//!    the CPU stack that launched it, then the launch API, then a `[GPU_Kernel]<name>` (or
//!    `[GPU_Memcpy]HtoD`, ...) leaf frame, as the folded output has it;
//! 2. `gpu_ops/count`: how many of those operations (allocations are not operations);
//! 3. `gpu_sync_time/nanoseconds`: synchronisations (`[GPU_Sync]`), time waited, apart from
//!    device work;
//! 4. `gpu_alloc_objects/count` and 5. `gpu_alloc_space/bytes`: device memory allocations
//!    (`[GPU_Alloc]`) and their bytes, under the stack that allocated;
//! 6. `gpu_free_objects/count` and 7. `gpu_free_space/bytes`: releases (`[GPU_Free]`);
//! 8. `cpu_time/nanoseconds`: on-CPU samples, weighted by their period;
//! 9. `off_cpu_time/nanoseconds`: off-CPU samples, weighted by the time blocked;
//! 10. `profiler_overhead/nanoseconds`: time the profiling machinery took on a thread (tracing
//!     buffer flushes, ...), under an `[Overhead]<name>` frame;
//! 11. `gpu_pc_samples/count`: device PC samples, under the kernel's frame and launch stack as
//!     `gpu_time` has them, then the outermost call site where the line is inlined code
//!     (`kernel.py:41`), a `file.cu:212` (or `[no source line]`) frame and a `[stall]<reason>`
//!     leaf, labelled with the instruction (`pc`: its offset in the kernel, `instruction`: its
//!     disassembly, where the backend disassembled it while recording); a kernel launched from
//!     several stacks has its samples, in fetch order, laid over its launches' work in start
//!     order (the toolbox's `shares::launches`, as the folded views do).
//!
//! The default sample type is the first one listed. Frames, functions and mappings are built
//! by [`crate::builder`].
//!
//! Labels: `process` and `thread` (names) with `pid` and `tid` (numbers) on every sample;
//! `device`, `stream`, `kind` and `kernel` on GPU samples. Samples with the same stack and
//! labels are merged, so the profile grows with distinct (stack, kernel, stream, thread)
//! combinations, not with the run's length.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hash, Hasher};

use xpuprof_sdk::hash::IdHasher;
use xpuprof_sdk::model::*;

use xpuprof_toolbox::shares::affinity::assign;
use xpuprof_toolbox::shares::launches::{LaunchSpans, SpanCounts};

use crate::builder::Builder;
use crate::defs::Defs;
use crate::proto::{self, Profile};

type FxMap<K, V> = HashMap<K, V, BuildHasherDefault<IdHasher>>;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct GpuKey {
    pid: u32,
    tid: u32,
    stack: StackId,
    api: StrId,
    device: DeviceId,
    stream: StreamId,
    kind: DeviceOpKind,
    name: StrId,
    copy: CopyKind,
}

/// Hashed as four words rather than field by field: every device operation looks its key up
/// (the derived hash fed the hasher nine values, the enums as `isize`s).
impl Hash for GpuKey {
    fn hash<H: Hasher>(&self, h: &mut H) {
        let pair = |a: u32, b: u32| (u64::from(a) << 32) | u64::from(b);
        h.write_u64(pair(self.pid, self.tid));
        h.write_u64(pair(self.stack.0, self.api.0));
        h.write_u64(pair(self.device.0, self.stream.0));
        h.write_u64(pair(self.name.0, (u32::from(self.kind as u8) << 8) | u32::from(self.copy as u8)));
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct CpuKey {
    pid: u32,
    tid: u32,
    stack: StackId,
    off: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
struct PcKey {
    pid: u32,
    kernel: StrId,
    file: StrId,
    line: u32,
    call_file: StrId,
    call_line: u32,
    stall: StrId,
    pc_offset: u64,
    instruction: StrId,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct OverheadKey {
    pid: u32,
    tid: u32,
    name: StrId,
}

/// The running totals of a profile.
#[derive(Debug, Default)]
pub struct Aggregate {
    gpu: FxMap<GpuKey, [i64; 2]>,
    cpu: FxMap<CpuKey, i64>,
    overhead: FxMap<OverheadKey, i64>,
    pc: SpanCounts<PcKey>,
    /// Kernels' device work over time under each launch, to share their PC samples out.
    launches: LaunchSpans<(u32, StrId), GpuKey>,
    first: Option<u64>,
    last: u64,
    period: u64,
}

impl Aggregate {
    fn seen(&mut self, start: u64, end: u64) {
        self.first = Some(self.first.map_or(start, |f| f.min(start)));
        self.last = self.last.max(end);
    }

    /// Adds device operation `op`.
    pub fn device_op(&mut self, op: &DeviceOp) {
        let (tid, stack, api) =
            op.launch.map_or((0, StackId::NONE, StrId::NONE), |l| (l.tid, l.stack, l.api));
        let key = GpuKey {
            pid: op.pid,
            tid,
            stack,
            api,
            device: op.device,
            stream: op.stream,
            kind: op.kind,
            name: op.name,
            copy: op.copy,
        };
        let v = self.gpu.entry(key).or_default();
        v[0] += match op.kind {
            DeviceOpKind::Alloc | DeviceOpKind::Free => op.bytes as i64,
            _ => op.end.saturating_sub(op.start) as i64,
        };
        v[1] += 1;
        if op.kind == DeviceOpKind::Kernel {
            self.launches.add((op.pid, op.name), &key, op.start, op.end);
        }
        self.seen(op.start, op.end);
    }

    /// Adds profiler overhead `o`.
    pub fn overhead(&mut self, o: &Overhead) {
        let key = OverheadKey { pid: o.pid, tid: o.tid, name: o.name };
        *self.overhead.entry(key).or_default() += o.end.saturating_sub(o.start) as i64;
        self.seen(o.start, o.end);
    }

    /// Adds device PC samples `s`.
    pub fn pc_sample(&mut self, s: &DeviceSample) {
        let key = PcKey {
            pid: s.pid,
            kernel: s.kernel,
            file: s.file,
            line: s.line,
            call_file: s.call_file,
            call_line: s.call_line,
            stall: s.stall,
            pc_offset: s.pc_offset,
            instruction: s.instruction,
        };
        self.pc.add(key, s.start, s.end, s.count);
        self.seen(s.start, s.end);
    }

    /// Adds CPU sample `s`.
    pub fn sample(&mut self, s: &CpuSample) {
        let off = s.kind == SampleKind::OffCpu;
        if !off && self.period == 0 {
            self.period = s.weight;
        }
        *self.cpu.entry(CpuKey { pid: s.pid, tid: s.tid, stack: s.stack, off }).or_default() +=
            s.weight as i64;
        self.seen(s.time, s.time);
    }
}

/// The sample types, by slot (see the module's docs).
const TYPES: [(&str, &str); 11] = [
    ("gpu_time", "nanoseconds"),
    ("gpu_ops", "count"),
    ("gpu_sync_time", "nanoseconds"),
    ("gpu_alloc_objects", "count"),
    ("gpu_alloc_space", "bytes"),
    ("gpu_free_objects", "count"),
    ("gpu_free_space", "bytes"),
    ("cpu_time", "nanoseconds"),
    ("off_cpu_time", "nanoseconds"),
    ("profiler_overhead", "nanoseconds"),
    ("gpu_pc_samples", "count"),
];
const CPU: usize = 7;
const OFF_CPU: usize = 8;
const OVERHEAD: usize = 9;
const PC: usize = 10;

type Values = [i64; TYPES.len()];

/// The slots of a device operation's (amount, count): time or bytes, and how many.
fn gpu_slots(kind: DeviceOpKind) -> (usize, Option<usize>) {
    match kind {
        DeviceOpKind::Sync => (2, None),
        DeviceOpKind::Alloc => (4, Some(3)),
        DeviceOpKind::Free => (6, Some(5)),
        _ => (0, Some(1)),
    }
}

/// Samples with every slot's value; the profile keeps the slots that have data.
#[derive(Debug)]
struct Samples<'d> {
    b: Builder<'d>,
    values: Vec<Values>,
}

impl Samples<'_> {
    fn str_label(&mut self, key: &str, value: &str) -> proto::Label {
        proto::Label { key: self.b.s(key), str: self.b.s(value), ..Default::default() }
    }

    fn num_label(&mut self, key: &str, num: u32) -> proto::Label {
        proto::Label { key: self.b.s(key), num: i64::from(num), ..Default::default() }
    }

    fn thread_labels(&mut self, pid: u32, tid: u32, label: &mut Vec<proto::Label>) {
        let defs = self.b.defs();
        self.b.process(pid);
        label.push(self.str_label("process", &defs.process(pid)));
        label.push(self.num_label("pid", pid));
        if tid != 0 {
            label.push(self.str_label("thread", &defs.thread(pid, tid)));
            label.push(self.num_label("tid", tid));
        }
    }

    fn push(&mut self, location_id: Vec<u64>, values: Values, label: Vec<proto::Label>) {
        self.b.p.sample.push(proto::Sample { location_id, value: Vec::new(), label });
        self.values.push(values);
    }

    fn gpu(&mut self, k: &GpuKey, v: [i64; 2]) {
        let defs = self.b.defs();
        let (kind, leaf) = match k.kind {
            DeviceOpKind::Kernel => ("kernel", self.b.kernel(k.name)),
            DeviceOpKind::Memcpy => {
                ("memcpy", self.b.synthetic(&format!("[GPU_Memcpy]{}", k.copy.short_name())))
            }
            DeviceOpKind::Memset => ("memset", self.b.synthetic("[GPU_Memset]")),
            DeviceOpKind::Sync => ("sync", self.b.synthetic("[GPU_Sync]")),
            DeviceOpKind::Alloc => ("alloc", self.b.synthetic("[GPU_Alloc]")),
            DeviceOpKind::Free => ("free", self.b.synthetic("[GPU_Free]")),
            _ => ("other", self.b.synthetic(&format!("[GPU_Other]{}", defs.text(k.name).unwrap_or("other")))),
        };
        let mut location_id = vec![leaf];
        if let Some(api) = defs.text(k.api) {
            location_id.push(self.b.synthetic(api));
        }
        self.b.stack(k.stack, &mut location_id);
        let mut label = Vec::with_capacity(8);
        self.thread_labels(k.pid, k.tid, &mut label);
        label.push(self.str_label("device", &defs.device(k.device)));
        label.push(self.str_label("stream", &defs.stream(k.stream)));
        label.push(self.str_label("kind", kind));
        if k.kind == DeviceOpKind::Kernel {
            label.push(self.str_label("kernel", defs.text(k.name).unwrap_or("kernel")));
        }
        let mut values = Values::default();
        let (amount, count) = gpu_slots(k.kind);
        values[amount] = v[0];
        if let Some(c) = count {
            values[c] = v[1];
        }
        self.push(location_id, values, label);
    }

    fn cpu(&mut self, k: &CpuKey, ns: i64) {
        let mut location_id = Vec::new();
        self.b.stack(k.stack, &mut location_id);
        let mut label = Vec::with_capacity(4);
        self.thread_labels(k.pid, k.tid, &mut label);
        let mut values = Values::default();
        values[if k.off { OFF_CPU } else { CPU }] = ns;
        self.push(location_id, values, label);
    }

    fn overhead(&mut self, k: &OverheadKey, ns: i64) {
        let name = self.b.defs().text(k.name).unwrap_or("profiler overhead");
        let location_id = vec![self.b.synthetic(&format!("[Overhead]{name}"))];
        let mut label = Vec::with_capacity(5);
        self.thread_labels(k.pid, k.tid, &mut label);
        label.push(self.str_label("kind", "overhead"));
        let mut values = Values::default();
        values[OVERHEAD] = ns;
        self.push(location_id, values, label);
    }

    /// PC samples `n` of `k` under the launch of device work `g` (none: no device work of the
    /// kernel was recorded).
    fn pc(&mut self, k: &PcKey, g: Option<&GpuKey>, n: u64) {
        let defs = self.b.defs();
        let place = match defs.text(k.file).filter(|f| k.line != 0 && !f.is_empty()) {
            Some(f) => format!("{}:{}", f.rsplit('/').next().unwrap_or(f), k.line),
            None => "[no source line]".to_owned(),
        };
        let stall = defs.text(k.stall).unwrap_or("unknown");
        let mut location_id = vec![self.b.synthetic(&format!("[stall]{stall}")), self.b.synthetic(&place)];
        if let Some(f) = defs.text(k.call_file).filter(|f| k.call_line != 0 && !f.is_empty()) {
            location_id.push(self.b.synthetic(&format!(
                "{}:{}",
                f.rsplit('/').next().unwrap_or(f),
                k.call_line
            )));
        }
        location_id.push(self.b.kernel(k.kernel));
        let (pid, tid) = g.map_or((k.pid, 0), |g| (g.pid, g.tid));
        if let Some(g) = g {
            if let Some(api) = defs.text(g.api) {
                location_id.push(self.b.synthetic(api));
            }
            self.b.stack(g.stack, &mut location_id);
        }
        let mut label = Vec::with_capacity(8);
        self.thread_labels(pid, tid, &mut label);
        label.push(self.str_label("kind", "pc_sample"));
        label.push(self.str_label("kernel", defs.text(k.kernel).unwrap_or("kernel")));
        label.push(self.str_label("stall", stall));
        label.push(self.str_label("pc", &format!("{:#06x}", k.pc_offset)));
        if let Some(text) = defs.text(k.instruction) {
            label.push(self.str_label("instruction", text));
        }
        let mut values = Values::default();
        values[PC] = n as i64;
        self.push(location_id, values, label);
    }

    /// Keeps the sample types some sample has a value for (`gpu_time` and `cpu_time` in a
    /// profile without samples).
    fn finish(mut self) -> Profile {
        let mut used: Vec<usize> =
            (0..TYPES.len()).filter(|&t| self.values.iter().any(|v| v[t] != 0)).collect();
        if used.is_empty() {
            used = vec![0, CPU];
        }
        for &t in &used {
            let (ty, unit) = TYPES[t];
            let vt = proto::ValueType { r#type: self.b.s(ty), unit: self.b.s(unit) };
            self.b.p.sample_type.push(vt);
        }
        self.b.p.default_sample_type = self.b.p.sample_type[0].r#type;
        for (s, v) in self.b.p.sample.iter_mut().zip(&self.values) {
            s.value = used.iter().map(|&t| v[t]).collect();
        }
        self.b.finish()
    }
}

/// The device work of `agg` in a fixed order.
fn gpu_sorted(agg: &Aggregate) -> Vec<(&GpuKey, &[i64; 2])> {
    let mut gpu: Vec<_> = agg.gpu.iter().collect();
    gpu.sort_by_key(|(k, _)| {
        (k.pid, k.tid, k.stack, k.api, k.device, k.stream, k.kind as u8, k.name, k.copy as u8)
    });
    gpu
}

/// The profile of `agg`, deterministic for the same input (samples sorted by their keys).
pub fn build(agg: &Aggregate, defs: &Defs, time_nanos: i64, comments: &[String]) -> Profile {
    let mut b = Builder::new(defs);
    let period_type = proto::ValueType { r#type: b.s("cpu"), unit: b.s("nanoseconds") };
    b.p.period_type = Some(period_type);
    b.p.period = agg.period as i64;
    b.p.time_nanos = time_nanos;
    b.p.duration_nanos = agg.first.map_or(0, |f| agg.last.saturating_sub(f)) as i64;
    let mut s = Samples { b, values: Vec::new() };
    for (k, v) in gpu_sorted(agg) {
        s.gpu(k, *v);
    }
    let mut cpu: Vec<_> = agg.cpu.iter().collect();
    cpu.sort_by_key(|(k, _)| (k.pid, k.tid, k.stack, k.off));
    for (k, v) in cpu {
        s.cpu(k, *v);
    }
    let mut overhead: Vec<_> = agg.overhead.iter().collect();
    overhead.sort_by_key(|(k, _)| (k.pid, k.tid, k.name));
    for (k, v) in overhead {
        s.overhead(k, *v);
    }
    let mut pc: Vec<_> = agg.pc.iter().collect();
    pc.sort_by_key(|(k, span, _)| (**k, *span));
    let placed = assign(&agg.pc, &agg.launches, |k| (k.pid, k.kernel));
    for (k, span, n) in pc {
        let shares = placed.get(&(*k, span)).map_or(&[][..], Vec::as_slice);
        if shares.is_empty() {
            s.pc(k, None, n);
            continue;
        }
        for &(g, share) in shares {
            if share > 0 {
                s.pc(k, Some(g), share);
            }
        }
    }
    s.b.p.comment = comments.iter().map(|c| s.b.s(c)).collect();
    s.finish()
}
