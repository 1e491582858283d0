//! Realistic record streams for the tests and benchmarks of sinks.
//!
//! [`session`] mirrors what the host hands sinks after a short CUDA run: definitions first,
//! session-wide ids, launches joined to their device work, a graph launch that ran three kernels,
//! copies both ways, a memset, a kernel nobody launched (as far as the correlator knows), on- and
//! off-CPU samples, a marker, a range, a counter and a loss. [`launches`] generates a long run of
//! kernel launches for throughput and size measurements, and [`source_batches`] the same run as
//! a source sends it to the host.

use xpuprof_sdk::model::*;

/// Process id used by the sample session.
pub const PID: u32 = 4242;
/// Main thread id.
pub const TID: u32 = 4242;
/// Worker thread id.
pub const WORKER: u32 = 4250;
/// Session start time (ns).
pub const T0: u64 = 1_000_000_000;

const STRINGS: &[&str] = &[
    "python3 train.py --epochs 1",          // 1
    "python3",                              // 2
    "pt_worker",                            // 3
    "NVIDIA H100 80GB HBM3",                // 4
    "/usr/bin/python3.12",                  // 5
    "/usr/lib/libtorch_cuda.so",            // 6
    "main",                                 // 7
    "train_step",                           // 8
    "at::native::launch_vectorized_kernel", // 9
    "c10::cuda::CUDAStream::launch",        // 10
    "cudaLaunchKernel",                     // 11
    "cudaMemcpyAsync",                      // 12
    "cudaMemsetAsync",                      // 13
    "cudaGraphLaunch",                      // 14
    "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>>(int, float*)", // 15
    "_Z10add_kernelPfS_i",                  // 16
    "ampere_sgemm_128x64_nn",               // 17
    "ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)", // 18
    "forward",                              // 19
    "epoch",                                // 20
    "device memory in use",                 // 21
    "cupti dropped records",                // 22
    "nvtx",                                 // 23
    "stream 7 (default)",                   // 24
    "read;weird\nname",                     // 25
    "cudaStreamSynchronize",                // 26
];

fn s(i: u32) -> StrId {
    StrId(i)
}

/// Display texts the host gives mangled names (demangled; sinks show these).
const DISPLAY: &[(u32, &str)] = &[(16, "add_kernel(float*, float*, int)")];

fn defs() -> Vec<Record> {
    let mut r: Vec<Record> = STRINGS
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let id = i as u32 + 1;
            let display = DISPLAY.iter().find(|d| d.0 == id).map_or("", |d| d.1);
            Record::Str(StrDef::new(StrId(id), *t).display(display.to_owned()))
        })
        .collect();
    r.push(Record::Process(ProcessDef::default().pid(PID).ppid(1).command(s(1))));
    r.push(Record::Thread(ThreadDef::default().pid(PID).tid(TID).name(s(2))));
    r.push(Record::Thread(ThreadDef::default().pid(PID).tid(WORKER).name(s(3))));
    r.push(Record::Device(
        DeviceDef::default()
            .id(DeviceId(1))
            .vendor(Vendor::Nvidia)
            .name(s(4))
            .uuid([7; 16])
            .compute_units(132)
            .memory_bytes(80 << 30),
    ));
    r.push(Record::Stream(
        StreamDef::default().id(StreamId(1)).device(DeviceId(1)).pid(PID).native_id(7).name(s(24)),
    ));
    r.push(Record::Stream(StreamDef::default().id(StreamId(2)).device(DeviceId(1)).pid(PID).native_id(13)));
    r.push(Record::Module(ModuleDef::default().id(ModuleId(1)).path(s(5)).build_id(vec![0xab, 0xcd])));
    r.push(Record::Module(ModuleDef::default().id(ModuleId(2)).path(s(6))));
    r.extend(frames());
    r
}

fn frame(id: u32, module: u32, address: u64, name: u32, inlined: Vec<StrId>) -> Record {
    Record::Frame(
        FrameDef::default()
            .id(FrameId(id))
            .kind(FrameKind::FileOffset)
            .module(ModuleId(module))
            .address(address)
            .pid(PID)
            .name(StrId(name))
            .inlined(inlined),
    )
}

fn frames() -> Vec<Record> {
    vec![
        frame(1, 1, 0x1000, 7, vec![]),
        frame(2, 1, 0x2000, 8, vec![s(19)]), // train_step with forward inlined into it
        frame(3, 2, 0x3000, 9, vec![]),
        frame(4, 2, 0x4000, 10, vec![]),
        frame(5, 2, 0x1a2b, 0, vec![]),  // unsymbolised: libtorch_cuda.so+0x1a2b
        frame(6, 1, 0x6000, 25, vec![]), // a name with a `;` and a newline
        // Stacks are innermost first.
        Record::Stack(StackDef::default().id(StackId(1)).frames(vec![
            FrameId(4),
            FrameId(3),
            FrameId(2),
            FrameId(1),
        ])),
        Record::Stack(StackDef::default().id(StackId(2)).frames(vec![FrameId(5), FrameId(2), FrameId(1)])),
        Record::Stack(StackDef::default().id(StackId(3)).frames(vec![FrameId(6), FrameId(1)])),
    ]
}

fn api(tid: u32, start: u64, dur: u64, name: u32, corr: u64) -> Record {
    Record::ApiCall(
        ApiCall::default()
            .pid(PID)
            .tid(tid)
            .start(start)
            .end(start + dur)
            .name(s(name))
            .correlation(Some(Correlation { backend: backend::CUDA, id: corr })),
    )
}

fn site(tid: u32, time: u64, api: u32, corr: u64, stack: u32) -> Record {
    Record::LaunchSite(
        LaunchSite::default()
            .pid(PID)
            .tid(tid)
            .time(time)
            .correlation(Correlation { backend: backend::CUDA, id: corr })
            .api(s(api))
            .stack(StackId(stack)),
    )
}

/// A device op on stream `stream` (1 or 2) joined to the launch at `launch` (`None`: unmatched).
fn op(
    kind: DeviceOpKind,
    stream: u32,
    start: u64,
    dur: u64,
    name: u32,
    corr: u64,
    launch: Option<LaunchRef>,
) -> DeviceOp {
    DeviceOp::default()
        .kind(kind)
        .pid(PID)
        .device(DeviceId(1))
        .stream(StreamId(stream))
        .start(start)
        .end(start + dur)
        .name(s(name))
        .correlation(Some(Correlation { backend: backend::CUDA, id: corr }))
        .kernel(
            (kind == DeviceOpKind::Kernel)
                .then_some(KernelInfo::default().grid([128, 1, 1]).block([256, 1, 1]).registers(32)),
        )
        .launch(launch)
}

fn lref(tid: u32, stack: u32, api: u32, time: u64) -> Option<LaunchRef> {
    Some(LaunchRef::default().tid(tid).stack(StackId(stack)).api(s(api)).time(time))
}

fn events() -> Vec<Record> {
    let t = T0;
    let mut r = vec![
        // A kernel launch from the main thread.
        api(TID, t + 1_000, 4_000, 11, 1),
        site(TID, t + 1_000, 11, 1, 1),
        Record::DeviceOp(op(
            DeviceOpKind::Kernel,
            1,
            t + 10_000,
            120_000,
            15,
            1,
            lref(TID, 1, 11, t + 1_000),
        )),
        // A mangled kernel launched from an unsymbolised frame.
        api(TID, t + 6_000, 3_000, 11, 2),
        site(TID, t + 6_000, 11, 2, 2),
        Record::DeviceOp(op(
            DeviceOpKind::Kernel,
            1,
            t + 131_000,
            45_500,
            16,
            2,
            lref(TID, 2, 11, t + 6_000),
        )),
        // Copies both ways and a memset.
        api(TID, t + 10_000, 8_000, 12, 3),
        site(TID, t + 10_000, 12, 3, 1),
    ];
    let mut h2d = op(DeviceOpKind::Memcpy, 2, t + 12_000, 30_000, 12, 3, lref(TID, 1, 12, t + 10_000));
    h2d.bytes = 1 << 20;
    h2d.copy = CopyKind::HostToDevice;
    r.push(Record::DeviceOp(h2d));
    r.push(api(TID, t + 20_000, 2_000, 13, 4));
    r.push(site(TID, t + 20_000, 13, 4, 1));
    let mut set = op(DeviceOpKind::Memset, 2, t + 43_000, 2_400, 13, 4, lref(TID, 1, 13, t + 20_000));
    set.bytes = 4096;
    r.push(Record::DeviceOp(set));
    // A graph launch from the worker thread: one call, three kernels.
    r.push(api(WORKER, t + 30_000, 5_000, 14, 5));
    r.push(site(WORKER, t + 30_000, 14, 5, 1));
    for (i, (start, dur, name)) in
        [(180_000, 200_000, 17), (380_500, 60_000, 18), (441_000, 9_999, 16)].iter().enumerate()
    {
        let mut k = op(DeviceOpKind::Kernel, 1, t + start, *dur, *name, 5, lref(WORKER, 1, 14, t + 30_000));
        k.graph = Some(GraphInfo::default().graph(3).node(i as u64 + 1));
        r.push(Record::DeviceOp(k));
    }
    // A kernel the correlator could not join.
    r.push(Record::DeviceOp(op(DeviceOpKind::Kernel, 2, t + 460_000, 15_000, 17, 99, None)));
    // Copy back, then a synchronize that blocks the main thread.
    r.push(api(TID, t + 470_000, 9_000, 12, 6));
    r.push(site(TID, t + 470_000, 12, 6, 2));
    let mut d2h = op(DeviceOpKind::Memcpy, 2, t + 476_000, 20_000, 12, 6, lref(TID, 2, 12, t + 470_000));
    d2h.bytes = 1 << 16;
    d2h.copy = CopyKind::DeviceToHost;
    r.push(Record::DeviceOp(d2h));
    r.push(api(TID, t + 480_000, 20_000, 26, 7));
    r.extend(cpu_and_annotations());
    r
}

fn cpu_and_annotations() -> Vec<Record> {
    let t = T0;
    let sample = |time: u64, kind: SampleKind, weight: u64, stack: u32, tid: u32| {
        Record::CpuSample(
            CpuSample::default().pid(PID).tid(tid).time(time).kind(kind).weight(weight).stack(StackId(stack)),
        )
    };
    vec![
        sample(t + 2_000, SampleKind::OnCpu, 10_101_010, 1, TID),
        sample(t + 12_000, SampleKind::OnCpu, 10_101_010, 1, TID),
        sample(t + 22_000, SampleKind::OnCpu, 10_101_010, 2, WORKER),
        sample(t + 500_000, SampleKind::OffCpu, 19_500, 3, TID),
        Record::Marker(
            Annotation::default().pid(PID).tid(TID).start(t + 500).end(t + 500).name(s(20)).domain(s(23)),
        ),
        Record::Range(
            Annotation::default().pid(PID).tid(TID).start(t + 900).end(t + 29_000).name(s(19)).domain(s(23)),
        ),
        Record::Counter(
            Counter::default().pid(PID).device(DeviceId(1)).time(t + 10_000).name(s(21)).value(1048576.0),
        ),
        Record::Counter(
            Counter::default().pid(PID).device(DeviceId(1)).time(t + 480_000).name(s(21)).value(65536.0),
        ),
        Record::Loss(Loss::default().pid(PID).time(t + 499_000).cause(s(22)).count(3)),
    ]
}

/// The sample session: definitions, then events in the order the host would deliver them.
pub fn session() -> Vec<Record> {
    let mut r = defs();
    r.extend(events());
    r
}

/// A long run of `n` kernel launches on the sample session's definitions, in the steady-state
/// order the host delivers them: per launch an API call, its launch site and its kernel, with
/// realistic gaps (≈5 µs between launches, kernels of a few µs on two streams).
pub fn launches(n: usize) -> Vec<Record> {
    let mut r = defs();
    r.reserve(n * 3);
    let mut t = T0;
    let mut gpu = T0 + 20_000;
    for i in 0..n as u64 {
        let corr = 1000 + i;
        let stack = 1 + (i % 3) as u32;
        let name = [15, 16, 17][(i % 3) as usize];
        r.push(api(TID, t, 2_000 + i % 700, 11, corr));
        r.push(site(TID, t, 11, corr, stack));
        let dur = 3_000 + (i * 37) % 2_000;
        gpu = gpu.max(t + 8_000) + 300;
        let k = op(DeviceOpKind::Kernel, 1 + (i % 2) as u32, gpu, dur, name, corr, lref(TID, stack, 11, t));
        r.push(Record::DeviceOp(k));
        gpu += dur;
        t += 5_000 + i % 900;
    }
    r
}

/// [`launches`] as a source sends them to the host: device work not yet joined to its launch,
/// encoded into batches of at most `batch_bytes` (the SDK emitter's flush size is 64 KiB).
pub fn source_batches(n: usize, batch_bytes: usize) -> Vec<Vec<u8>> {
    let mut batches = vec![Vec::new()];
    for mut r in launches(n) {
        if let Record::DeviceOp(op) = &mut r {
            op.launch = None;
        }
        if batches.last().is_some_and(|b: &Vec<u8>| b.len() >= batch_bytes) {
            batches.push(Vec::new());
        }
        if let Some(b) = batches.last_mut() {
            xpuprof_sdk::codec::encode(&r, b);
        }
    }
    batches
}

/// A job of two ranks on two hosts, each with a device of index 0: per rank a process with its
/// rank fields and the name the host gives it (`rank N (host, pid)`), its main thread, a launch
/// stack, kernels launched from it (rank 1's take twice as long, mostly one kernel) and CPU
/// samples. Pids are `5000 + rank`.
pub fn ranked_job() -> Vec<Record> {
    let texts = [
        "python3 train.py",      // 1
        "node-a",                // 2
        "node-b",                // 3
        "rank 0 (node-a, 5000)", // 4
        "rank 1 (node-b, 5001)", // 5
        "Acme X1",               // 6
        "train_step",            // 7
        "matmul_kernel",         // 8
        "allreduce_kernel",      // 9
        "launch",                // 10
    ];
    let mut r: Vec<Record> =
        texts.iter().enumerate().map(|(i, t)| Record::Str(StrDef::new(StrId(i as u32 + 1), *t))).collect();
    r.push(Record::Frame(FrameDef::default().id(FrameId(1)).kind(FrameKind::Synthetic).name(s(7))));
    r.push(Record::Stack(StackDef::default().id(StackId(1)).frames(vec![FrameId(1)])));
    for rank in 0..2u32 {
        let pid = 5000 + rank;
        r.push(Record::Process(
            ProcessDef::default()
                .pid(pid)
                .ppid(1)
                .command(s(1))
                .rank(Some(rank))
                .local_rank(Some(0))
                .world_size(Some(2))
                .host(s(2 + rank))
                .name(s(4 + rank)),
        ));
        r.push(Record::Thread(ThreadDef::default().pid(pid).tid(pid).name(s(1))));
        r.push(Record::Device(DeviceDef::default().id(DeviceId(1 + rank)).name(s(6))));
    }
    for rank in 0..2u32 {
        let pid = 5000 + rank;
        for i in 0..4u64 {
            let t = T0 + i * 100_000;
            let name = if i == 3 { 9 } else { 8 };
            let dur = 10_000 * (1 + u64::from(rank));
            let launch = LaunchRef::default().tid(pid).stack(StackId(1)).api(s(10)).time(t);
            r.push(Record::DeviceOp(
                DeviceOp::default()
                    .kind(DeviceOpKind::Kernel)
                    .pid(pid)
                    .device(DeviceId(1 + rank))
                    .start(t + 5_000)
                    .end(t + 5_000 + dur)
                    .name(s(name))
                    .launch(Some(launch)),
            ));
            r.push(Record::CpuSample(
                CpuSample::default().pid(pid).tid(pid).time(t).weight(1_000_000).stack(StackId(1)),
            ));
        }
    }
    r
}
