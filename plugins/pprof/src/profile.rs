//! Aggregates records into pprof samples and builds the `Profile` message.
//!
//! Sample types, in this order (every sample has all four values):
//! 1. `gpu_time/nanoseconds`: device time of kernels, copies and other device work, under the
//!    CPU stack that launched it, then the launch API, then a `[GPU_Kernel]<name>` (or
//!    `[GPU_Memcpy]HtoD`, ...) leaf frame, as the folded output has it;
//! 2. `gpu_ops/count`: how many device operations;
//! 3. `cpu_time/nanoseconds`: on-CPU samples, weighted by their period;
//! 4. `off_cpu_time/nanoseconds`: off-CPU samples, weighted by the time blocked;
//! 5. `profiler_overhead/nanoseconds`: time the profiling machinery took on a thread (tracing
//!    buffer flushes, ...), under an `[Overhead]<name>` frame.
//!
//! Labels: `process` and `thread` (names) with `pid` and `tid` (numbers) on every sample;
//! `device`, `stream`, `kind` and `kernel` on GPU samples. Samples with the same stack and
//! labels are merged, so the profile grows with distinct (stack, kernel, stream, thread)
//! combinations, not with the run's length.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hash, Hasher};

use xpuprof_sdk::hash::{IdHasher, IdMap};
use xpuprof_sdk::model::*;

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
        v[0] += op.end.saturating_sub(op.start) as i64;
        v[1] += 1;
        self.seen(op.start, op.end);
    }

    /// Adds profiler overhead `o`.
    pub fn overhead(&mut self, o: &Overhead) {
        let key = OverheadKey { pid: o.pid, tid: o.tid, name: o.name };
        *self.overhead.entry(key).or_default() += o.end.saturating_sub(o.start) as i64;
        self.seen(o.start, o.end);
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

/// Builds the `Profile` message: interns strings, functions, mappings and locations.
#[derive(Debug)]
struct Builder<'d> {
    defs: &'d Defs,
    p: Profile,
    strings: HashMap<String, i64>,
    functions: HashMap<String, u64>,
    mappings: IdMap<ModuleId, u64>,
    frames: IdMap<FrameId, u64>,
    synthetic: HashMap<String, u64>,
}

impl<'d> Builder<'d> {
    fn new(defs: &'d Defs) -> Self {
        let mut b = Self {
            defs,
            p: Profile::default(),
            strings: HashMap::new(),
            functions: HashMap::new(),
            mappings: IdMap::default(),
            frames: IdMap::default(),
            synthetic: HashMap::new(),
        };
        b.s("");
        b
    }

    fn s(&mut self, text: &str) -> i64 {
        if let Some(&i) = self.strings.get(text) {
            return i;
        }
        let i = self.p.string_table.len() as i64;
        self.p.string_table.push(text.to_owned());
        self.strings.insert(text.to_owned(), i);
        i
    }

    fn function(&mut self, name: &str) -> u64 {
        if let Some(&id) = self.functions.get(name) {
            return id;
        }
        let id = self.p.function.len() as u64 + 1;
        let n = self.s(name);
        self.p.function.push(proto::Function { id, name: n, system_name: n, filename: 0 });
        self.functions.insert(name.to_owned(), id);
        id
    }

    fn mapping(&mut self, module: ModuleId) -> u64 {
        if module.is_none() {
            return 0;
        }
        if let Some(&id) = self.mappings.get(&module) {
            return id;
        }
        let id = self.p.mapping.len() as u64 + 1;
        let (path, build_id) = match self.defs.module(module) {
            Some((p, b)) => (p.to_owned(), hex(b)),
            None => ("[unknown module]".to_owned(), String::new()),
        };
        let (filename, build_id) = (self.s(&path), self.s(&build_id));
        self.p.mapping.push(proto::Mapping {
            id,
            memory_start: 0,
            memory_limit: 0,
            file_offset: 0,
            filename,
            build_id,
            has_functions: true,
        });
        self.mappings.insert(module, id);
        id
    }

    /// The location of frame `f`: its function and the functions inlined into it.
    fn frame(&mut self, f: FrameId) -> u64 {
        if let Some(&id) = self.frames.get(&f) {
            return id;
        }
        let id = self.p.location.len() as u64 + 1;
        let loc = match self.defs.frame(f).cloned() {
            None => proto::Location { id, line: vec![self.line("[unknown frame]")], ..Default::default() },
            Some(fr) => {
                let outer = match self.defs.text(fr.name) {
                    Some(t) => t.to_owned(),
                    None => self.defs.unsymbolized(&fr),
                };
                // Innermost first: the last inlined function, ..., the function it is all in.
                let mut line: Vec<proto::Line> = fr
                    .inlined
                    .iter()
                    .rev()
                    .map(|s| self.defs.text(*s).unwrap_or("[unknown inlined]").to_owned())
                    .collect::<Vec<_>>()
                    .iter()
                    .map(|n| self.line(n))
                    .collect();
                line.push(self.line(&outer));
                proto::Location { id, mapping_id: self.mapping(fr.module), address: fr.address, line }
            }
        };
        self.p.location.push(loc);
        self.frames.insert(f, id);
        id
    }

    fn line(&mut self, name: &str) -> proto::Line {
        proto::Line { function_id: self.function(name), line: 0 }
    }

    /// A location that is just a name (launch API, GPU leaf, unknown launch site).
    fn synthetic(&mut self, name: &str) -> u64 {
        if let Some(&id) = self.synthetic.get(name) {
            return id;
        }
        let id = self.p.location.len() as u64 + 1;
        let line = vec![self.line(name)];
        self.p.location.push(proto::Location { id, line, ..Default::default() });
        self.synthetic.insert(name.to_owned(), id);
        id
    }

    /// Stack `stack`, leaf first.
    fn stack(&mut self, stack: StackId, out: &mut Vec<u64>) {
        match self.defs.stack(stack) {
            Some(frames) => {
                for &f in frames {
                    let id = self.frame(f);
                    out.push(id);
                }
            }
            None => out.push(self.synthetic("[unknown launch site]")),
        }
    }

    fn str_label(&mut self, key: &str, value: &str) -> proto::Label {
        proto::Label { key: self.s(key), str: self.s(value), ..Default::default() }
    }

    fn num_label(&mut self, key: &str, num: u32) -> proto::Label {
        proto::Label { key: self.s(key), num: i64::from(num), ..Default::default() }
    }

    fn thread_labels(&mut self, pid: u32, tid: u32, label: &mut Vec<proto::Label>) {
        let process = self.defs.process(pid);
        label.push(self.str_label("process", &process));
        label.push(self.num_label("pid", pid));
        if tid != 0 {
            let thread = self.defs.thread(pid, tid);
            label.push(self.str_label("thread", &thread));
            label.push(self.num_label("tid", tid));
        }
    }

    fn gpu_sample(&mut self, k: &GpuKey, v: [i64; 2]) {
        let (kind, leaf) = match k.kind {
            DeviceOpKind::Kernel => {
                ("kernel", format!("[GPU_Kernel]{}", self.defs.text(k.name).unwrap_or("kernel")))
            }
            DeviceOpKind::Memcpy => ("memcpy", format!("[GPU_Memcpy]{}", k.copy.short_name())),
            DeviceOpKind::Memset => ("memset", "[GPU_Memset]".to_owned()),
            DeviceOpKind::Sync => ("sync", "[GPU_Sync]".to_owned()),
            DeviceOpKind::Alloc => ("alloc", "[GPU_Alloc]".to_owned()),
            DeviceOpKind::Free => ("free", "[GPU_Free]".to_owned()),
            _ => ("other", format!("[GPU_Other]{}", self.defs.text(k.name).unwrap_or("other"))),
        };
        let mut location_id = vec![self.synthetic(&leaf)];
        if let Some(api) = self.defs.text(k.api) {
            let api = api.to_owned();
            location_id.push(self.synthetic(&api));
        }
        self.stack(k.stack, &mut location_id);
        let mut label = Vec::with_capacity(8);
        self.thread_labels(k.pid, k.tid, &mut label);
        let (device, stream) = (self.defs.device(k.device), self.defs.stream(k.stream));
        label.push(self.str_label("device", &device));
        label.push(self.str_label("stream", &stream));
        label.push(self.str_label("kind", kind));
        if k.kind == DeviceOpKind::Kernel {
            let name = self.defs.text(k.name).unwrap_or("kernel").to_owned();
            label.push(self.str_label("kernel", &name));
        }
        self.p.sample.push(proto::Sample { location_id, value: vec![v[0], v[1], 0, 0, 0], label });
    }

    fn cpu_sample(&mut self, k: &CpuKey, ns: i64) {
        let mut location_id = Vec::new();
        self.stack(k.stack, &mut location_id);
        let mut label = Vec::with_capacity(4);
        self.thread_labels(k.pid, k.tid, &mut label);
        let value = if k.off { vec![0, 0, 0, ns, 0] } else { vec![0, 0, ns, 0, 0] };
        self.p.sample.push(proto::Sample { location_id, value, label });
    }

    fn overhead_sample(&mut self, k: &OverheadKey, ns: i64) {
        let name = self.defs.text(k.name).unwrap_or("profiler overhead").to_owned();
        let location_id = vec![self.synthetic(&format!("[Overhead]{name}"))];
        let mut label = Vec::with_capacity(5);
        self.thread_labels(k.pid, k.tid, &mut label);
        label.push(self.str_label("kind", "overhead"));
        self.p.sample.push(proto::Sample { location_id, value: vec![0, 0, 0, 0, ns], label });
    }

    fn value_type(&mut self, ty: &str, unit: &str) -> proto::ValueType {
        proto::ValueType { r#type: self.s(ty), unit: self.s(unit) }
    }
}

/// Lowercase hex of `bytes`.
fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The profile of `agg`, deterministic for the same input (samples sorted by their keys).
pub fn build(agg: &Aggregate, defs: &Defs, time_nanos: i64, comments: &[String]) -> Profile {
    let mut b = Builder::new(defs);
    b.p.sample_type = vec![
        b.value_type("gpu_time", "nanoseconds"),
        b.value_type("gpu_ops", "count"),
        b.value_type("cpu_time", "nanoseconds"),
        b.value_type("off_cpu_time", "nanoseconds"),
        b.value_type("profiler_overhead", "nanoseconds"),
    ];
    b.p.default_sample_type = b.p.sample_type[0].r#type;
    b.p.period_type = Some(b.value_type("cpu", "nanoseconds"));
    b.p.period = agg.period as i64;
    b.p.time_nanos = time_nanos;
    b.p.duration_nanos = agg.first.map_or(0, |f| agg.last.saturating_sub(f)) as i64;
    let mut gpu: Vec<_> = agg.gpu.iter().collect();
    gpu.sort_by_key(|(k, _)| {
        (k.pid, k.tid, k.stack, k.api, k.device, k.stream, k.kind as u8, k.name, k.copy as u8)
    });
    for (k, v) in gpu {
        b.gpu_sample(k, *v);
    }
    let mut cpu: Vec<_> = agg.cpu.iter().collect();
    cpu.sort_by_key(|(k, _)| (k.pid, k.tid, k.stack, k.off));
    for (k, v) in cpu {
        b.cpu_sample(k, *v);
    }
    let mut overhead: Vec<_> = agg.overhead.iter().collect();
    overhead.sort_by_key(|(k, _)| (k.pid, k.tid, k.name));
    for (k, v) in overhead {
        b.overhead_sample(k, *v);
    }
    b.p.comment = comments.iter().map(|c| b.s(c)).collect();
    b.p
}
