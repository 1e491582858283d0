//! The fixed session the scripted source emits.

use xpuprof_sdk::prelude::*;

/// Process id used by the script (fixed, so outputs are deterministic).
pub const PID: u32 = 4242;
/// Worker thread id.
pub const WORKER: u32 = 4243;

struct W<'a> {
    e: &'a mut Emitter,
    strings: StringInterner,
    next_frame: u32,
    next_stack: u32,
    /// Stacks already defined, by their frame names: like a real source's interner, each
    /// distinct stack is defined once however many rounds use it.
    stacks: Vec<(Vec<String>, StackId)>,
    /// What each API name does (stated on every API call, as real sources do).
    kinds: Vec<(StrId, ApiKind)>,
}

impl W<'_> {
    fn s(&mut self, text: &str) -> StrId {
        self.strings.intern(self.e, text)
    }

    /// An API function's name, remembering what it does.
    fn a(&mut self, text: &str, kind: ApiKind) -> StrId {
        let id = self.s(text);
        if !self.kinds.iter().any(|(n, _)| *n == id) {
            self.kinds.push((id, kind));
        }
        id
    }

    /// A stack of synthetic named frames, given outermost first.
    fn stack(&mut self, names: &[&str]) -> StackId {
        if let Some((_, id)) = self.stacks.iter().find(|(n, _)| n.iter().eq(names.iter())) {
            return *id;
        }
        let mut frames = Vec::new();
        for n in names.iter().rev() {
            self.next_frame += 1;
            let id = FrameId(self.next_frame);
            let name = self.s(n);
            self.e.emit(&Record::Frame(
                FrameDef::default().id(id).kind(FrameKind::Synthetic).pid(PID).name(name),
            ));
            frames.push(id);
        }
        self.next_stack += 1;
        let id = StackId(self.next_stack);
        self.e.emit(&Record::Stack(StackDef::default().id(id).frames(frames)));
        self.stacks.push((names.iter().map(|n| (*n).to_owned()).collect(), id));
        id
    }
}

fn corr(id: u64) -> Option<Correlation> {
    Some(Correlation { backend: backend::TEST, id })
}

fn api(w: &mut W<'_>, tid: u32, start: u64, dur: u64, name: StrId, id: u64) {
    let kind = w.kinds.iter().find(|(n, _)| *n == name).map_or(ApiKind::Other, |(_, k)| *k);
    w.e.emit(&Record::ApiCall(
        ApiCall::default()
            .pid(PID)
            .tid(tid)
            .start(start)
            .end(start + dur)
            .name(name)
            .kind(kind)
            .correlation(corr(id)),
    ));
}

fn site(w: &mut W<'_>, tid: u32, time: u64, api: StrId, stack: StackId, id: u64) {
    w.e.emit(&Record::LaunchSite(
        LaunchSite::default()
            .pid(PID)
            .tid(tid)
            .time(time)
            .correlation(Correlation { backend: backend::TEST, id })
            .api(api)
            .stack(stack),
    ));
}

#[allow(clippy::too_many_arguments)]
fn op(
    kind: DeviceOpKind,
    device: u32,
    stream: u32,
    start: u64,
    dur: u64,
    name: StrId,
    id: u64,
    bytes: u64,
    copy: CopyKind,
) -> DeviceOp {
    DeviceOp::default()
        .kind(kind)
        .pid(PID)
        .device(DeviceId(device))
        .stream(StreamId(stream))
        .start(start)
        .end(start + dur)
        .name(name)
        .bytes(bytes)
        .copy(copy)
        .correlation(if id == 0 { None } else { corr(id) })
}

fn kernel(dev: Dev, stream: u32, start: u64, dur: u64, name: StrId, id: u64, grid: u32) -> DeviceOp {
    op(DeviceOpKind::Kernel, dev.id, dev.stream(stream), start, dur, name, id, 0, CopyKind::Unknown).kernel(
        Some(KernelInfo::default().grid([grid, 1, 1]).block([256, 1, 1]).shared_memory(4096).registers(32)),
    )
}

/// One simulated device of the script: device id `id`, its streams numbered from `id`.
#[derive(Clone, Copy)]
pub struct Dev {
    id: u32,
}

impl Dev {
    /// The device's stream numbered `s` on device 1 (7 or 13): device 1 keeps the script's
    /// stream ids, device n adds 100 * (n - 1).
    fn stream(self, s: u32) -> u32 {
        s + 100 * (self.id - 1)
    }
}

/// Session time of the first round.
const BASE: u64 = 1_000_000_000;

/// Emits the script; the launch part `repeat` times on each of `devices` devices.
pub fn emit(e: &mut Emitter, repeat: u64, devices: u32) {
    let mut s = Script::start(e, devices);
    for round in 0..repeat {
        s.round(round);
    }
    s.finish(repeat);
}

/// The script emitted a round at a time (the paced mode drives it from a clock).
pub struct Script<'a> {
    w: W<'a>,
    ids: RoundIds,
    devices: u32,
}

impl<'a> Script<'a> {
    /// Emits the definitions: the process, its threads, `devices` devices with two streams
    /// each, and the rounds' names and stacks (defined once, before the first round, as a real
    /// source's interners do).
    pub fn start(e: &'a mut Emitter, devices: u32) -> Self {
        let mut w = W {
            e,
            strings: StringInterner::default(),
            next_frame: 0,
            next_stack: 0,
            stacks: Vec::new(),
            kinds: Vec::new(),
        };
        definitions(&mut w, devices);
        let ids = RoundIds::new(&mut w);
        Self { w, ids, devices }
    }

    /// Emits round `round` (6 launches, 8 device operations) on every device. Each round spans
    /// 10 ms of session time; correlation ids stay distinct across devices.
    pub fn round(&mut self, round: u64) {
        let t = BASE + round * 10_000_000;
        for d in 0..self.devices {
            let id0 = (round * u64::from(self.devices) + u64::from(d)) * 100;
            launches(&mut self.w, &self.ids, Dev { id: d + 1 }, t, id0);
        }
    }

    /// Emits a loss of `launches` kernel launches at round `round`'s time.
    pub fn loss(&mut self, round: u64, launches: u64, cause: &str) {
        let cause = self.w.s(cause);
        let time = BASE + round * 10_000_000;
        self.w.e.emit(&Record::Loss(Loss::default().pid(PID).time(time).cause(cause).count(launches)));
    }

    /// Hands what is buffered to the host when it waited long enough.
    pub fn flush_if_due(&mut self) {
        self.w.e.flush_if_due();
    }

    /// Emits the end of the session after `rounds` rounds.
    pub fn finish(mut self, rounds: u64) {
        epilogue(&mut self.w, BASE + rounds * 10_000_000);
    }
}

fn definitions(w: &mut W<'_>, devices: u32) {
    let cmd = w.s("python3 train.py");
    w.e.emit(&Record::Process(ProcessDef::default().pid(PID).ppid(1).command(cmd)));
    let main = w.s("python3");
    w.e.emit(&Record::Thread(ThreadDef::default().pid(PID).tid(PID).name(main)));
    let worker = w.s("loader");
    w.e.emit(&Record::Thread(ThreadDef::default().pid(PID).tid(WORKER).name(worker)));
    let gpu = w.s("Scripted GPU");
    for id in 1..=devices {
        let dev = Dev { id };
        let mut uuid = [7; 16];
        uuid[0] = 7 + (id - 1) as u8;
        w.e.emit(&Record::Device(
            DeviceDef::default()
                .id(DeviceId(id))
                .vendor(Vendor::Test)
                .name(gpu)
                .uuid(uuid)
                .compute_units(108)
                .memory_bytes(40 << 30)
                .kind(DeviceKind::Gpu),
        ));
        for s in [7u32, 13] {
            let stream = dev.stream(s);
            w.e.emit(&Record::Stream(
                StreamDef::default()
                    .id(StreamId(stream))
                    .device(DeviceId(id))
                    .pid(PID)
                    .native_id(u64::from(stream))
                    .kind(QueueKind::CudaStream),
            ));
        }
    }
}

/// The names and stacks every round uses.
#[derive(Clone, Copy)]
struct RoundIds {
    launch: StrId,
    graph: StrId,
    memcpy: StrId,
    memset: StrId,
    gemm: StrId,
    node_a: StrId,
    node_b: StrId,
    relu: StrId,
    s_gemm: StackId,
    s_graph: StackId,
    s_copy: StackId,
    s_relu: StackId,
}

impl RoundIds {
    fn new(w: &mut W<'_>) -> Self {
        Self {
            launch: w.a("cudaLaunchKernel", ApiKind::Launch),
            graph: w.a("cudaGraphLaunch", ApiKind::Launch),
            memcpy: w.a("cudaMemcpyAsync", ApiKind::Copy),
            memset: w.a("cudaMemsetAsync", ApiKind::Memset),
            gemm: w.s("void gemm_kernel<float, 128>(float const*, float*, int)"),
            node_a: w.s("graph_node_a"),
            node_b: w.s("graph_node_b"),
            relu: w.s("relu_kernel"),
            s_gemm: w.stack(&["main", "train_step", "forward", "launch_gemm"]),
            s_graph: w.stack(&["main", "train_step", "run_graph"]),
            s_copy: w.stack(&["start_thread", "loader_loop", "copy_inputs"]),
            s_relu: w.stack(&["main", "train_step", "forward", "launch_relu"]),
        }
    }
}

fn launches(w: &mut W<'_>, ids: &RoundIds, dev: Dev, t: u64, id0: u64) {
    let RoundIds { launch, graph, memcpy, memset, gemm, node_a, node_b, relu, .. } = *ids;
    let RoundIds { s_gemm, s_graph, s_copy, s_relu, .. } = *ids;

    // A plain kernel launch: site, API call, kernel.
    site(w, PID, t, launch, s_gemm, id0 + 1);
    api(w, PID, t, 5_000, launch, id0 + 1);
    w.e.emit(&Record::DeviceOp(kernel(dev, 7, t + 10_000, 250_000, gemm, id0 + 1, 64)));
    // A graph launch: three kernels under one correlation id (one-to-many).
    site(w, PID, t + 20_000, graph, s_graph, id0 + 2);
    api(w, PID, t + 20_000, 8_000, graph, id0 + 2);
    for (i, (name, dur)) in
        [(node_a, 100_000u64), (node_b, 50_000), (node_a, 100_000)].into_iter().enumerate()
    {
        let mut k = kernel(dev, 7, t + 300_000 + i as u64 * 120_000, dur, name, id0 + 2, 32);
        k.graph = Some(GraphInfo::default().graph(1).node(i as u64 + 1));
        w.e.emit(&Record::DeviceOp(k));
    }
    // Copies and a memset from the worker thread on stream 13.
    site(w, WORKER, t + 30_000, memcpy, s_copy, id0 + 3);
    api(w, WORKER, t + 30_000, 4_000, memcpy, id0 + 3);
    w.e.emit(&Record::DeviceOp(op(
        DeviceOpKind::Memcpy,
        dev.id,
        dev.stream(13),
        t + 40_000,
        80_000,
        memcpy,
        id0 + 3,
        1 << 20,
        CopyKind::HostToDevice,
    )));
    site(w, WORKER, t + 130_000, memset, s_copy, id0 + 4);
    api(w, WORKER, t + 130_000, 3_000, memset, id0 + 4);
    w.e.emit(&Record::DeviceOp(op(
        DeviceOpKind::Memset,
        dev.id,
        dev.stream(13),
        t + 140_000,
        10_000,
        memset,
        id0 + 4,
        4096,
        CopyKind::Unknown,
    )));
    site(w, WORKER, t + 160_000, memcpy, s_copy, id0 + 5);
    api(w, WORKER, t + 160_000, 4_000, memcpy, id0 + 5);
    w.e.emit(&Record::DeviceOp(op(
        DeviceOpKind::Memcpy,
        dev.id,
        dev.stream(13),
        t + 170_000,
        40_000,
        memcpy,
        id0 + 5,
        1 << 19,
        CopyKind::DeviceToHost,
    )));
    // A kernel recorded before its launch stack (as with a lagging stack source).
    w.e.emit(&Record::DeviceOp(kernel(dev, 7, t + 700_000, 30_000, relu, id0 + 6, 16)));
    site(w, PID, t + 650_000, launch, s_relu, id0 + 6);
    api(w, PID, t + 650_000, 5_000, launch, id0 + 6);
}

fn epilogue(w: &mut W<'_>, t: u64) {
    let malloc = w.a("cudaMalloc", ApiKind::Alloc);
    let free = w.a("cudaFree", ApiKind::Free);
    let sync = w.a("cudaDeviceSynchronize", ApiKind::Sync);
    let lost = w.s("lost_kernel");
    let s_alloc = w.stack(&["main", "setup", "allocate_buffers"]);
    let s_sample = w.stack(&["main", "train_step", "forward", "python_overhead"]);
    let s_wait = w.stack(&["main", "train_step", "cudaDeviceSynchronize"]);
    // Two allocations; the first is freed, the second leaks.
    for (i, bytes) in [(1u64, 1u64 << 20), (2, 64 << 20)] {
        let id = 10_000 + i;
        site(w, PID, t + i * 1_000, malloc, s_alloc, id);
        api(w, PID, t + i * 1_000, 500, malloc, id);
        w.e.emit(&Record::DeviceOp(op(
            DeviceOpKind::Alloc,
            1,
            0,
            t + i * 1_000 + 100,
            0,
            malloc,
            id,
            bytes,
            CopyKind::Unknown,
        )));
    }
    api(w, PID, t + 5_000, 400, free, 10_003);
    w.e.emit(&Record::DeviceOp(op(
        DeviceOpKind::Free,
        1,
        0,
        t + 5_100,
        0,
        free,
        10_003,
        1 << 20,
        CopyKind::Unknown,
    )));
    // Device work whose correlation id matches nothing: shown under [unknown launch site].
    w.e.emit(&Record::DeviceOp(kernel(Dev { id: 1 }, 13, t + 6_000, 20_000, lost, 99_999, 8)));
    // Three on-CPU samples at 99 Hz and one off-CPU wait of 5 ms.
    for i in 0..3 {
        w.e.emit(&Record::CpuSample(
            CpuSample::default()
                .pid(PID)
                .tid(PID)
                .time(t + 10_000 + i * 10_101_010)
                .kind(SampleKind::OnCpu)
                .weight(10_101_010)
                .stack(s_sample),
        ));
    }
    api(w, PID, t + 40_000, 5_000_000, sync, 10_004);
    w.e.emit(&Record::CpuSample(
        CpuSample::default()
            .pid(PID)
            .tid(PID)
            .time(t + 5_040_000)
            .kind(SampleKind::OffCpu)
            .weight(5_000_000)
            .stack(s_wait),
    ));
    annotations(w, t);
}

fn annotations(w: &mut W<'_>, t: u64) {
    let domain = w.s("scripted");
    let epoch = w.s("epoch 1");
    let fwd = w.s("forward pass");
    let mem = w.s("device memory in use");
    let cause = w.s("scripted ring buffer full");
    w.e.emit(&Record::Marker(
        Annotation::default().pid(PID).tid(PID).start(t).end(t).name(epoch).domain(domain),
    ));
    w.e.emit(&Record::Range(
        Annotation::default().pid(PID).tid(PID).start(t + 1_000).end(t + 30_000).name(fwd).domain(domain),
    ));
    for (i, v) in [(0u64, 1048576.0), (1, 68157440.0), (2, 67108864.0)] {
        w.e.emit(&Record::Counter(
            Counter::default().pid(PID).device(DeviceId(1)).time(t + i * 2_000).name(mem).value(v),
        ));
    }
    w.e.emit(&Record::Loss(Loss::default().pid(PID).time(t + 50_000).cause(cause).count(3)));
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;
    use xpuprof_sdk::codec;

    fn records(repeat: u64, devices: u32) -> Vec<Record> {
        let mut e = Emitter::detached();
        emit(&mut e, repeat, devices);
        codec::decode_all(&e.take_buffer()).expect("the script decodes")
    }

    #[test]
    fn devices_each_get_their_streams_and_distinct_correlation_ids() {
        let recs = records(4, 3);
        let devices: Vec<_> =
            recs.iter().filter_map(|r| if let Record::Device(d) = r { Some(d.id) } else { None }).collect();
        assert_eq!(devices, [DeviceId(1), DeviceId(2), DeviceId(3)]);
        let streams: HashSet<_> = recs
            .iter()
            .filter_map(|r| if let Record::Stream(s) = r { Some((s.device, s.id)) } else { None })
            .collect();
        assert_eq!(streams.len(), 6);
        let mut sites = HashSet::new();
        for r in &recs {
            if let Record::LaunchSite(s) = r {
                assert!(sites.insert(s.correlation.id), "correlation id {} used twice", s.correlation.id);
            }
            if let Record::DeviceOp(op) = r {
                if op.kind == DeviceOpKind::Kernel && op.correlation.is_some() {
                    assert!(streams.contains(&(op.device, op.stream)), "op on an undefined stream: {op:?}");
                }
            }
        }
        // 6 launches per round and device, plus the epilogue's 2 allocations.
        assert_eq!(sites.len(), 4 * 3 * 6 + 2);
    }

    #[test]
    fn one_device_keeps_the_scripts_ids() {
        let recs = records(2, 1);
        let streams: Vec<_> =
            recs.iter().filter_map(|r| if let Record::Stream(s) = r { Some(s.id) } else { None }).collect();
        assert_eq!(streams, [StreamId(7), StreamId(13)]);
        let ids: Vec<_> = recs
            .iter()
            .filter_map(|r| if let Record::LaunchSite(s) = r { Some(s.correlation.id) } else { None })
            .collect();
        assert_eq!(&ids[..6], [1, 2, 3, 4, 5, 6]);
        assert_eq!(&ids[6..12], [101, 102, 103, 104, 105, 106]);
    }
}
