//! Aggregation of the event stream: everything the report needs, keyed by ids, updated per
//! record without allocating (maps only grow with distinct names, stacks, threads and devices).

use xpuprof_sdk::hash::IdMap;

use xpuprof_sdk::model::*;

use crate::config::SummaryConfig;
use crate::cpu::CpuAgg;
use crate::defs::Defs;
use crate::gpu_time::GpuTime;
use crate::memory::MemoryAgg;
use crate::quantile::DurStats;
use crate::timeline::Timeline;

/// Distinct launch configurations remembered per kernel row (the rest are counted as "other").
pub const MAX_CONFIGS: usize = 16;

/// Names of the record kinds, in [`kind_index`] order.
pub const RECORD_KINDS: [&str; 20] = [
    "string",
    "process",
    "thread",
    "device",
    "stream",
    "module",
    "frame",
    "stack",
    "api_call",
    "device_op",
    "launch_site",
    "cpu_sample",
    "marker",
    "range",
    "counter",
    "loss",
    "clock_sync",
    "clock_domain",
    "overhead",
    "other",
];

/// One API function.
#[derive(Debug, Default)]
pub struct ApiAgg {
    /// Host time.
    pub time: DurStats,
    /// Calls per non-zero result code.
    pub errors: Vec<(i64, u64)>,
}

/// One kernel row (by name, optionally by launch stack).
#[derive(Debug, Default)]
pub struct KernelAgg {
    /// Device time.
    pub time: DurStats,
    /// Launch configurations and how often each was used.
    pub configs: Vec<(KernelInfo, u64)>,
    /// Launches whose configuration did not fit in `configs`.
    pub other_configs: u64,
    /// The launching API call's name (rows split by launch site), to start the stack at its caller.
    pub api: StrId,
}

/// Per-thread launch and synchronisation accounting.
#[derive(Debug, Default, Clone, Copy)]
pub struct ThreadAgg {
    /// Launch sites (one per launch-class API entry whose stack was captured).
    pub launch_sites: u64,
    /// Launch-class API calls (name contains `Launch`).
    pub launch_api_calls: u64,
    /// Their host time, ns.
    pub launch_api_ns: u64,
    /// Synchronisation API calls (name contains `Synchronize`).
    pub sync_api_calls: u64,
    /// Their host time, ns.
    pub sync_api_ns: u64,
    /// Device sync operations attributed to this thread.
    pub sync_ops: u64,
    /// Their device time, ns.
    pub sync_op_ns: u64,
    /// All API calls.
    pub api_calls: u64,
    /// Their host time, ns.
    pub api_ns: u64,
}

/// How an API function name is classified (cached per string id).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ApiClass {
    Launch,
    Sync,
    Other,
}

/// One counter series (by name and device).
#[derive(Debug, Clone, Copy)]
pub struct CounterAgg {
    /// Points.
    pub count: u64,
    /// Smallest value.
    pub min: f64,
    /// Largest value.
    pub max: f64,
    /// Sum of values (for the mean).
    pub sum: f64,
    /// Value with the latest time.
    pub last: f64,
    /// Time of `last`.
    pub last_time: u64,
}

/// xpuprof's own record: what came in and what was lost.
#[derive(Debug, Default)]
pub struct OwnAgg {
    /// Records per kind, [`RECORD_KINDS`] order.
    pub by_kind: [u64; 20],
    /// Correlated events (API calls, device ops, launch sites) per backend.
    pub by_backend: IdMap<u32, u64>,
    /// Loss per cause: items lost, Loss records.
    pub losses: IdMap<StrId, (u64, u64)>,
    /// Overhead records (ranges and device operations) per name: count, total ns.
    pub overhead: IdMap<StrId, (u64, u64)>,
    /// Device operations the host could not join to a launch.
    pub unmatched_device_ops: u64,
    /// Those per kind: (with a correlation id that matched no launch,
    /// without a correlation id).
    pub unmatched_by_kind: IdMap<DeviceOpKind, (u64, u64)>,
}

/// Everything aggregated so far.
#[derive(Debug, Default)]
pub struct Collector {
    /// Settings.
    pub cfg: SummaryConfig,
    /// Definitions.
    pub defs: Defs,
    /// Per API function name.
    pub api: IdMap<StrId, ApiAgg>,
    /// Per kernel (name, launch stack or NONE).
    pub kernels: IdMap<(StrId, StackId), KernelAgg>,
    /// Memory and transfers.
    pub memory: MemoryAgg,
    /// Kernel timelines per device.
    pub timelines: IdMap<DeviceId, Timeline>,
    /// Kernel timelines per stream.
    pub streams: crate::streams::StreamAgg,
    /// Kernel time by launch.
    pub gpu: GpuTime,
    /// Per (pid, tid).
    pub threads: IdMap<(u32, u32), ThreadAgg>,
    /// CPU samples.
    pub cpu: CpuAgg,
    /// Own record.
    pub own: OwnAgg,
    /// Collectives of a job's ranks.
    pub collectives: crate::collectives::CollectivesAgg,
    /// Device PC samples per kernel.
    pub pc: crate::pc_stalls::PcStallsAgg,
    /// Counter series per (name, device).
    pub counters: IdMap<(StrId, DeviceId), CounterAgg>,
    /// Earliest and latest event time seen.
    pub span: Option<(u64, u64)>,
    /// Capture windows (start, end, opener), as they arrived.
    pub windows: Vec<(u64, u64, WindowOpener)>,
    api_class: IdMap<StrId, ApiClass>,
}

/// Index of a record kind in [`RECORD_KINDS`].
pub fn kind_index(r: &Record) -> usize {
    match r {
        Record::Str(_) => 0,
        Record::Process(_) => 1,
        Record::Thread(_) => 2,
        Record::Device(_) => 3,
        Record::Stream(_) => 4,
        Record::Module(_) => 5,
        Record::Frame(_) => 6,
        Record::Stack(_) => 7,
        Record::ApiCall(_) => 8,
        Record::DeviceOp(_) => 9,
        Record::LaunchSite(_) => 10,
        Record::CpuSample(_) => 11,
        Record::Marker(_) => 12,
        Record::Range(_) => 13,
        Record::Counter(_) => 14,
        Record::Loss(_) => 15,
        Record::ClockSync(_) => 16,
        Record::ClockDomain(_) => 17,
        Record::Overhead(_) => 18,
        // A kind newer than this sink.
        _ => 19,
    }
}

impl Collector {
    /// A collector with these settings.
    pub fn new(cfg: SummaryConfig) -> Self {
        Self { cfg, ..Self::default() }
    }

    /// Adds one record.
    pub fn add(&mut self, r: &Record) {
        self.own.by_kind[kind_index(r)] += 1;
        self.collectives.add(r);
        self.pc.add(r);
        if self.defs.add(r) {
            return;
        }
        match r {
            Record::ApiCall(c) => self.api_call(c),
            Record::DeviceOp(op) => self.device_op(op),
            Record::LaunchSite(l) => self.launch_site(l),
            Record::CpuSample(s) => self.cpu_sample(s),
            Record::Marker(a) | Record::Range(a) => self.annotation(a),
            Record::Counter(c) => self.counter(c),
            Record::Loss(l) => self.loss(l),
            Record::Overhead(o) => self.overhead(o),
            // A source announces a marker window with `end` 0 and sends it again when it closes.
            Record::Window(w) if w.end != 0 => self.windows.push((w.start, w.end.max(w.start), w.opener)),
            _ => {}
        }
    }

    #[inline]
    fn seen(&mut self, start: u64, end: u64) {
        let (s, e) = self.span.unwrap_or((start, end));
        self.span = Some((s.min(start), e.max(end).max(start)));
    }

    #[inline]
    fn backend(&mut self, c: Option<Correlation>) {
        *self.own.by_backend.entry(c.map_or(backend::UNCORRELATED, |c| c.backend)).or_insert(0) += 1;
    }

    fn api_call(&mut self, c: &ApiCall) {
        self.seen(c.start, c.end);
        self.backend(c.correlation);
        let dur = c.end.saturating_sub(c.start);
        let agg = self.api.entry(c.name).or_default();
        agg.time.add(dur, self.cfg.exact_samples);
        if c.result != 0 {
            match agg.errors.iter_mut().find(|(code, _)| *code == c.result) {
                Some(e) => e.1 += 1,
                None => agg.errors.push((c.result, 1)),
            }
        }
        let class = match c.kind {
            ApiKind::Launch => ApiClass::Launch,
            ApiKind::Sync => ApiClass::Sync,
            ApiKind::Unknown => self.classify_legacy_api(c.name),
            _ => ApiClass::Other,
        };
        let t = self.threads.entry((c.pid, c.tid)).or_default();
        t.api_calls += 1;
        t.api_ns += dur;
        match class {
            ApiClass::Launch => {
                t.launch_api_calls += 1;
                t.launch_api_ns += dur;
            }
            ApiClass::Sync => {
                t.sync_api_calls += 1;
                t.sync_api_ns += dur;
            }
            ApiClass::Other => {}
        }
    }

    /// Records that do not state their [`ApiKind`] (archives written before API kinds existed)
    /// are classified by the naming rule those archives were summarised with (`Synchronize` or
    /// `Launch` in the name), so they still report the same; every current source states the kind.
    fn classify_legacy_api(&mut self, name: StrId) -> ApiClass {
        if let Some(c) = self.api_class.get(&name) {
            return *c;
        }
        let text = self.defs.str(name);
        let class = if text.contains("Synchronize") {
            ApiClass::Sync
        } else if text.contains("Launch") {
            ApiClass::Launch
        } else {
            ApiClass::Other
        };
        self.api_class.insert(name, class);
        class
    }

    fn device_op(&mut self, op: &DeviceOp) {
        self.seen(op.start, op.end);
        self.backend(op.correlation);
        if op.launch.is_none() {
            self.own.unmatched_device_ops += 1;
            let e = self.own.unmatched_by_kind.entry(op.kind).or_default();
            if op.correlation.is_some() {
                e.0 += 1;
            } else {
                e.1 += 1;
            }
        }
        let dur = op.end.saturating_sub(op.start);
        match op.kind {
            DeviceOpKind::Kernel => self.kernel(op, dur),
            DeviceOpKind::Sync => {
                let tid = op.launch.map_or(0, |l| l.tid);
                let t = self.threads.entry((op.pid, tid)).or_default();
                t.sync_ops += 1;
                t.sync_op_ns += dur;
            }
            _ => self.memory.add(op),
        }
    }

    fn kernel(&mut self, op: &DeviceOp, dur: u64) {
        let (stack, api) = match (self.cfg.by_launch_site, op.launch) {
            (true, Some(l)) => (l.stack, l.api),
            _ => (StackId::NONE, StrId::NONE),
        };
        let agg = self.kernels.entry((op.name, stack)).or_default();
        agg.api = api;
        agg.time.add(dur, self.cfg.exact_samples);
        let info = op.kernel.unwrap_or_default();
        if let Some(c) = agg.configs.iter_mut().find(|(k, _)| *k == info) {
            c.1 += 1;
        } else if agg.configs.len() < MAX_CONFIGS {
            agg.configs.push((info, 1));
        } else {
            agg.other_configs += 1;
        }
        let cap = self.cfg.timeline_intervals;
        self.timelines.entry(op.device).or_insert_with(|| Timeline::new(cap)).push(op.start, op.end);
        self.streams.push(op, cap);
        self.gpu.add(op, dur);
    }

    fn launch_site(&mut self, l: &LaunchSite) {
        self.seen(l.time, l.time);
        self.backend(Some(l.correlation));
        self.threads.entry((l.pid, l.tid)).or_default().launch_sites += 1;
    }

    fn cpu_sample(&mut self, s: &CpuSample) {
        self.seen(s.time, s.time);
        self.cpu.add(s);
    }

    fn annotation(&mut self, a: &Annotation) {
        self.seen(a.start, a.end);
    }

    fn counter(&mut self, c: &Counter) {
        self.seen(c.time, c.time);
        let v = c.value;
        let first = CounterAgg { count: 0, min: v, max: v, sum: 0.0, last: v, last_time: c.time };
        let a = self.counters.entry((c.name, c.device)).or_insert(first);
        a.count += 1;
        a.min = a.min.min(v);
        a.max = a.max.max(v);
        a.sum += v;
        if c.time >= a.last_time {
            (a.last, a.last_time) = (v, c.time);
        }
    }

    fn loss(&mut self, l: &Loss) {
        self.seen(l.time, l.time);
        let e = self.own.losses.entry(l.cause).or_default();
        e.0 += l.count;
        e.1 += 1;
    }

    fn overhead(&mut self, o: &Overhead) {
        self.seen(o.start, o.end);
        let e = self.own.overhead.entry(o.name).or_default();
        e.0 += 1;
        e.1 += o.end.saturating_sub(o.start);
    }
}
