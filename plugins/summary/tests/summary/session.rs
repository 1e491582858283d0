//! A hand-built session, as the host would hand it to sinks, with numbers chosen so that every
//! statistic in the report can be computed by hand (the expectations in `sink.rs` say how).
//!
//! Timeline of device 0 (µs after `T0`; kernels sent out of start order):
//! ```text
//!  gemm#1 [1000,1100]  relu#1 [1100,1150]  gap 250 µs  gemm#2 [1400,1600]  relu#2 [1550,1600]
//!  gap 50 µs (under the 100 µs threshold)  gemm#3 [1650,2250]
//! ```

use xpuprof_sdk::model::*;

/// Session base time.
pub const T0: u64 = 1_000_000_000;
/// Process.
pub const PID: u32 = 100;
/// Main thread.
pub const MAIN: u32 = 100;
/// Worker thread (synchronises).
pub const WORKER: u32 = 101;

const STRINGS: &[&str] = &[
    "train",                                                                                       // 1
    "main",                  // 2 thread name and frame
    "GPU Test 0",            // 3
    "cudaLaunchKernel",      // 4
    "cudaMemcpy",            // 5
    "cudaMalloc",            // 6
    "cudaFree",              // 7
    "cudaDeviceSynchronize", // 8
    "gemm",                  // 9
    "relu",                  // 10
    "train_step",            // 11
    "alloc_buffers",         // 12
    "cupti dropped records", // 13
    "ring buffer full",      // 14
    "worker",                // 15
    "spin_wait",             // 16
    "cupti overhead",        // 17
    "device memory in use",  // 18
    "memset",                // 19
    "epoch",                 // 20
    "c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::malloc(int, unsigned long)", // 21
];

fn us(v: u64) -> u64 {
    T0 + v * 1000
}

fn defs() -> Vec<Record> {
    let mut r: Vec<Record> = STRINGS
        .iter()
        .enumerate()
        .map(|(i, t)| Record::Str(StrDef::default().id(StrId(i as u32 + 1)).text((*t).to_owned())))
        .collect();
    r.push(Record::Process(ProcessDef::default().pid(PID).ppid(1).command(StrId(1))));
    r.push(Record::Thread(ThreadDef::default().pid(PID).tid(MAIN).name(StrId(2))));
    r.push(Record::Thread(ThreadDef::default().pid(PID).tid(WORKER).name(StrId(15))));
    r.push(Record::Device(
        DeviceDef::default()
            .id(DeviceId(1))
            .vendor(Vendor::Test)
            .name(StrId(3))
            .uuid([0; 16])
            .compute_units(132)
            .memory_bytes(80 << 30),
    ));
    r.push(Record::Stream(StreamDef::default().id(StreamId(1)).device(DeviceId(1)).pid(PID).native_id(7)));
    for (id, name) in [(1, 2), (2, 11), (3, 12), (4, 16), (5, 21), (6, 6)] {
        r.push(Record::Frame(
            FrameDef::default().id(FrameId(id)).kind(FrameKind::Synthetic).pid(PID).name(StrId(name)),
        ));
    }
    // Innermost first: 1 = train_step < main, 2 = cudaMalloc < alloc_buffers < main (the stack of
    // an agent that walks from inside the API: the report starts at the API's caller),
    // 3 = spin_wait < train_step < main, 4 = cudaMalloc < PyTorch's caching allocator < train_step < main.
    for (id, frames) in [(1, vec![2, 1]), (2, vec![6, 3, 1]), (3, vec![4, 2, 1]), (4, vec![6, 5, 2, 1])] {
        r.push(Record::Stack(
            StackDef::default().id(StackId(id)).frames(frames.into_iter().map(FrameId).collect()),
        ));
    }
    r
}

fn corr(id: u64) -> Option<Correlation> {
    Some(Correlation { backend: backend::TEST, id })
}

fn api(tid: u32, start_us: u64, dur_ns: u64, name: u32, id: u64, result: i64) -> Record {
    let start = us(start_us);
    Record::ApiCall(
        ApiCall::default()
            .pid(PID)
            .tid(tid)
            .start(start)
            .end(start + dur_ns)
            .name(StrId(name))
            .correlation(if id == 0 { None } else { corr(id) })
            .result(result),
    )
}

fn launch(stack: u32, api: u32, time_us: u64) -> Option<LaunchRef> {
    Some(LaunchRef::default().tid(MAIN).stack(StackId(stack)).api(StrId(api)).time(us(time_us)))
}

fn op(kind: DeviceOpKind, start_us: u64, end_us: u64, name: u32, id: u64) -> DeviceOp {
    DeviceOp::default()
        .kind(kind)
        .pid(PID)
        .device(DeviceId(1))
        .stream(StreamId(1))
        .start(us(start_us))
        .end(us(end_us))
        .name(StrId(name))
        .correlation(if id == 0 { None } else { corr(id) })
}

fn kernel(start_us: u64, end_us: u64, name: u32, id: u64, grid: u32, launched: bool) -> Record {
    let (block, smem, regs) = if name == 9 { (256, 4096, 64) } else { (128, 0, 16) };
    Record::DeviceOp(
        op(DeviceOpKind::Kernel, start_us, end_us, name, id)
            .kernel(Some(
                KernelInfo::default()
                    .grid([grid, 1, 1])
                    .block([block, 1, 1])
                    .shared_memory(smem)
                    .registers(regs),
            ))
            .launch(if launched { launch(1, 4, 900) } else { None }),
    )
}

fn mem(kind: DeviceOpKind, at_us: u64, bytes: u64, stack: u32, id: u64) -> Record {
    Record::DeviceOp(op(kind, at_us, at_us, 0, id).bytes(bytes).launch(if stack == 0 {
        None
    } else {
        launch(stack, 6, at_us)
    }))
}

fn copy(start_us: u64, dur_ns: u64, bytes: u64, dir: CopyKind, id: u64) -> Record {
    let mut o = op(DeviceOpKind::Memcpy, start_us, start_us, 0, id);
    o.end = o.start + dur_ns;
    o.bytes = bytes;
    o.copy = dir;
    o.launch = launch(1, 5, start_us);
    Record::DeviceOp(o)
}

fn sample(tid: u32, time_us: u64, kind: SampleKind, weight: u64, stack: u32) -> Record {
    Record::CpuSample(
        CpuSample::default()
            .pid(PID)
            .tid(tid)
            .time(us(time_us))
            .kind(kind)
            .weight(weight)
            .stack(StackId(stack)),
    )
}

fn loss(time_us: u64, cause: u32, count: u64) -> Record {
    Record::Loss(Loss::default().pid(PID).time(us(time_us)).cause(StrId(cause)).count(count))
}

/// API calls of the main thread and the worker (durations in ns).
fn api_calls() -> Vec<Record> {
    vec![
        api(MAIN, 10, 10_000, 6, 1, 0),
        api(MAIN, 30, 20_000, 6, 2, 0),
        api(MAIN, 60, 30_000, 6, 3, 0),
        api(MAIN, 100, 50_000, 5, 4, 0),
        api(MAIN, 300, 70_000, 5, 5, 1),
        api(MAIN, 900, 5_000, 4, 10, 0),
        api(MAIN, 910, 6_000, 4, 11, 0),
        api(MAIN, 920, 7_000, 4, 12, 0),
        api(MAIN, 930, 8_000, 4, 13, 98),
        api(MAIN, 940, 100_000, 4, 14, 0),
        api(MAIN, 2300, 5_000, 7, 0, 0),
        api(WORKER, 1900, 400_000, 8, 0, 0),
    ]
}

/// Launch sites of the five launches (all from `train_step < main`).
fn launch_sites() -> Vec<Record> {
    (0..5)
        .map(|i| {
            Record::LaunchSite(
                LaunchSite::default()
                    .pid(PID)
                    .tid(MAIN)
                    .time(us(900 + 10 * i))
                    .correlation(Correlation { backend: backend::TEST, id: 10 + i })
                    .api(StrId(4))
                    .stack(StackId(1)),
            )
        })
        .collect()
}

/// Device work: kernels out of order, copies, a memset, allocations, a free, a sync.
fn device_ops() -> Vec<Record> {
    let mut sync = op(DeviceOpKind::Sync, 1910, 2290, 0, 0);
    sync.launch = Some(LaunchRef::default().tid(WORKER).api(StrId(8)).time(us(1900)));
    let mut memset = op(DeviceOpKind::Memset, 700, 700, 19, 0);
    memset.end = memset.start + 2_000;
    memset.bytes = 4096;
    vec![
        mem(DeviceOpKind::Alloc, 15, 1 << 20, 2, 1),
        mem(DeviceOpKind::Alloc, 40, 1 << 20, 2, 2),
        mem(DeviceOpKind::Alloc, 80, 4096, 4, 3),
        copy(500, 100_000, 1 << 20, CopyKind::HostToDevice, 4),
        copy(1300, 250_000, 1_000_000, CopyKind::DeviceToHost, 5),
        Record::DeviceOp(memset),
        kernel(1000, 1100, 9, 10, 128, true),
        kernel(1100, 1150, 10, 11, 32, true),
        kernel(1550, 1600, 10, 12, 32, false),
        kernel(1400, 1600, 9, 13, 128, true),
        kernel(1650, 2250, 9, 14, 64, true),
        Record::DeviceOp(sync),
        mem(DeviceOpKind::Free, 2300, 1 << 20, 0, 0),
    ]
}

/// Samples, annotations, a counter, losses.
fn others() -> Vec<Record> {
    let range = |start_us: u64| {
        Record::Overhead(
            Overhead::default()
                .pid(PID)
                .tid(MAIN)
                .start(us(start_us))
                .end(us(start_us) + 20_000)
                .kind(OverheadKind::BufferFlush)
                .name(StrId(17)),
        )
    };
    vec![
        sample(MAIN, 900, SampleKind::OnCpu, 10_000_000, 3),
        sample(MAIN, 1140, SampleKind::OnCpu, 10_000_000, 1),
        sample(WORKER, 1200, SampleKind::OnCpu, 10_000_000, 3),
        sample(WORKER, 2000, SampleKind::OffCpu, 400_000, 3),
        Record::Marker(Annotation::default().pid(PID).tid(MAIN).start(us(5)).end(us(5)).name(StrId(20))),
        range(2400),
        range(2500),
        Record::Counter(
            Counter::default().pid(PID).device(DeviceId(1)).time(us(90)).name(StrId(18)).value(2101248.0),
        ),
        loss(2600, 13, 5),
        loss(2700, 13, 7),
        loss(2800, 14, 3),
    ]
}

/// The whole session in the order a host would deliver it.
pub fn records() -> Vec<Record> {
    let mut r = defs();
    r.extend(api_calls());
    r.extend(launch_sites());
    r.extend(device_ops());
    r.extend(others());
    r
}
