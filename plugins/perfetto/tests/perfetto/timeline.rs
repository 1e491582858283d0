//! What a user reads in the timeline: launch stacks on API slices, flows from those slices to
//! the device work, lanes only where work really overlaps, allocations as a memory counter
//! (checked with Perfetto's own protos, `tests/check_trace.py`).

use xpuprof_archive::sample::{self, PID, T0, TID};
use xpuprof_plugin_perfetto::{config, PerfettoSink, FILE_NAME};
use xpuprof_sdk::model::*;
use xpuprof_sdk::{Logger, Sink};

use crate::check;
use crate::sink::session_info;

fn definitions() -> Vec<Record> {
    sample::session().into_iter().filter(Record::is_definition).collect()
}

fn checked(records: &[Record]) -> serde_json::Value {
    let dir = tempfile::tempdir().unwrap();
    let mut sink =
        PerfettoSink::new(config::defaults(), &session_info(dir.path()), Logger::stderr()).unwrap();
    sink.consume(records).unwrap();
    sink.finish().unwrap();
    check::check(&dir.path().join(FILE_NAME))
}

fn corr(id: u64) -> Option<Correlation> {
    Some(Correlation { backend: backend::CUDA, id })
}

fn call(id: u64, start: u64) -> Record {
    Record::ApiCall(
        ApiCall::default()
            .pid(PID)
            .tid(TID)
            .start(start)
            .end(start + 2_000)
            .name(StrId(11))
            .correlation(corr(id)),
    )
}

fn site(id: u64, start: u64) -> Record {
    Record::LaunchSite(
        LaunchSite::default()
            .pid(PID)
            .tid(TID)
            .time(start)
            .correlation(corr(id).unwrap())
            .api(StrId(11))
            .stack(StackId(1)),
    )
}

fn kernel(id: u64, stream: u32, start: u64, dur: u64) -> DeviceOp {
    let launch = LaunchRef::default().tid(TID).stack(StackId(1)).api(StrId(11)).time(start);
    DeviceOp::default()
        .kind(DeviceOpKind::Kernel)
        .pid(PID)
        .device(DeviceId(1))
        .stream(StreamId(stream))
        .start(start)
        .end(start + dur)
        .name(StrId(15))
        .correlation(corr(id))
        .launch(Some(launch))
}

/// Whatever order the call, its launch site and its work arrive in, the API slice carries the
/// launch stack and the flow goes from it to the work.
#[test]
fn api_slices_carry_their_launch_stack_in_any_arrival_order() {
    let mut r = definitions();
    let t = T0;
    // Call first, then its site (callbacks); site first (activity buffers come later); no site
    // at all: the stack the correlator joined to the work.
    r.extend([call(1, t), site(1, t), Record::DeviceOp(kernel(1, 1, t + 10_000, 1_000))]);
    r.extend([site(2, t + 5_000), call(2, t + 5_000), Record::DeviceOp(kernel(2, 1, t + 12_000, 1_000))]);
    r.extend([call(3, t + 7_000), Record::DeviceOp(kernel(3, 1, t + 14_000, 1_000))]);
    let s = checked(&r);
    assert_eq!(s["api_slices"], 3, "{s}");
    assert_eq!(s["api_slices_with_stack"], 3, "callstack_iid resolving to interned frames: {s}");
    assert_eq!(s["flow_places"]["thread with stack -> device"], 3, "{s}");
    assert_eq!(s["flows"], 3, "{s}");
    assert!(s["instants"].as_object().unwrap().is_empty(), "no launch instant: {s}");
}

/// A serial stream whose records arrive out of order (pairs swapped), with zero-length work
/// inside its kernels, is one lane; a kernel that really overlaps another opens one more.
#[test]
fn lanes_only_for_work_that_really_overlaps() {
    let mut r = definitions();
    let mut ops = Vec::new();
    for i in 0..200u64 {
        ops.push(kernel(100 + i, 1, T0 + i * 10_000, 9_000));
        // A zero-length marker in the middle of the kernel.
        let mut z = kernel(1_000 + i, 1, T0 + i * 10_000 + 4_000, 0);
        z.kind = DeviceOpKind::Sync;
        ops.push(z);
    }
    for pair in ops.chunks_mut(4) {
        pair.rotate_left(2);
    }
    // One real overlap: a kernel starting inside kernel 50.
    ops.push(kernel(5_000, 1, T0 + 50 * 10_000 + 1_000, 3_000));
    r.extend(ops.into_iter().map(Record::DeviceOp));
    let s = checked(&r);
    assert_eq!(s["lanes"]["stream 7 (default)"], 2, "one lane for the serial work, one for the overlap: {s}");
    assert_eq!(s["slices_per_track"]["stream 7 (default) (overlap 1)"], 1, "{s}");
    assert_eq!(s["lanes_without_overlap"], 0, "{s}");
}

/// A serial stream whose records come in batches handed over out of order, each later than the
/// sinks' reorder window reaches (as CUPTI's side-by-side activity buffers did for a ResNet-18
/// training loop on the H200: 3,537 of 15,040 kernels on lanes no overlap needed), is still one
/// lane; a late kernel that really overlaps another opens one more.
#[test]
fn work_later_than_the_reorder_window_goes_in_the_gap_it_fits() {
    let batch = xpuprof_toolbox::timeline::WINDOW as u64 + 1_000;
    let mut r = definitions();
    let mut ops: Vec<DeviceOp> = (0..4 * batch).map(|i| kernel(100 + i, 1, T0 + i * 10_000, 9_000)).collect();
    // Batches 1, 0, 3, 2: batch 0 arrives after more than a window of later work.
    for pair in ops.chunks_mut(2 * batch as usize) {
        pair.rotate_left(batch as usize);
    }
    // One real overlap, arriving last: a kernel starting inside the first one.
    ops.push(kernel(99, 1, T0 + 1_000, 3_000));
    // Late work filling the gap between the first two kernels exactly: the second one's begin
    // is written, and trace processor orders events of one time by file order, so the gap is
    // not taken.
    ops.push(kernel(98, 1, T0 + 9_000, 1_000));
    r.extend(ops.into_iter().map(Record::DeviceOp));
    let s = checked(&r);
    assert_eq!(s["lanes"]["stream 7 (default)"], 2, "one lane for the serial work, one for the overlap: {s}");
    assert_eq!(s["slices_per_track"]["stream 7 (default) (overlap 1)"], 2, "{s}");
    assert_eq!(s["lanes_without_overlap"], 0, "{s}");
}

/// Allocations and frees are a "memory in use" counter of their device, not slices.
#[test]
fn allocations_are_a_memory_counter() {
    let mut r = definitions();
    let mem = |kind, start, bytes| {
        Record::DeviceOp(
            DeviceOp::default().kind(kind).pid(PID).device(DeviceId(1)).start(start).end(start).bytes(bytes),
        )
    };
    // Arriving out of order: the counter follows start times.
    r.push(mem(DeviceOpKind::Alloc, T0 + 2_000, 4096));
    r.push(mem(DeviceOpKind::Alloc, T0 + 1_000, 1024));
    r.push(mem(DeviceOpKind::Free, T0 + 3_000, 1024));
    let s = checked(&r);
    assert_eq!(s["tracks"]["memory in use (allocations)"], "counter", "{s}");
    assert_eq!(s["counter_values"], 3, "{s}");
    assert!(s["slice_names"].get("Alloc").is_none(), "{s}");
    let dir = tempfile::tempdir().unwrap();
    let mut sink =
        PerfettoSink::new(config::defaults(), &session_info(dir.path()), Logger::stderr()).unwrap();
    sink.consume(&r).unwrap();
    sink.finish().unwrap();
    let said = check::events(&dir.path().join(FILE_NAME));
    let values: Vec<&str> = said
        .lines()
        .filter(|l| l.contains("memory in use"))
        .map(|l| l.rsplit("value=").next().unwrap())
        .collect();
    assert_eq!(values, ["1024.0", "5120.0", "4096.0"], "{said}");
}

#[test]
fn xpuprofs_own_code_is_under_one_xpuprof_frame_in_cpu_samples() {
    let mut r = definitions();
    let texts =
        ["/opt/xpuprof/lib/libxpuprof_cupti_agent.so", "xpuprof_python::own::Interpreter::read_chain"];
    for (i, t) in texts.iter().enumerate() {
        r.push(Record::Str(StrDef::new(StrId(900 + i as u32), *t)));
    }
    r.push(Record::Module(ModuleDef::default().id(ModuleId(90)).path(StrId(900))));
    let own = FrameDef::default().id(FrameId(90)).kind(FrameKind::FileOffset).module(ModuleId(90));
    r.push(Record::Frame(own.address(0x40).pid(PID).name(StrId(901))));
    // Innermost first: libtorch's frame called by the agent, the agent, the user's frames.
    let frames = vec![FrameId(4), FrameId(90), FrameId(2), FrameId(1)];
    r.push(Record::Stack(StackDef::default().id(StackId(90)).frames(frames)));
    let s = CpuSample::default().pid(PID).tid(TID).time(T0 + 1_000).weight(1_000_000).stack(StackId(90));
    r.push(Record::CpuSample(s));
    let dir = tempfile::tempdir().unwrap();
    let mut sink =
        PerfettoSink::new(config::defaults(), &session_info(dir.path()), Logger::stderr()).unwrap();
    sink.consume(&r).unwrap();
    sink.finish().unwrap();
    let events = check::events(&dir.path().join(FILE_NAME));
    let sample = events.lines().find(|l| l.contains(" sample ")).expect("a CPU sample");
    assert!(
        sample.contains("'forward', '[xpuprof]', 'xpuprof_python::own::Interpreter::read_chain', 'c10::cuda::CUDAStream::launch'"),
        "{sample}"
    );
}

#[test]
fn a_collectives_slices_on_every_rank_are_linked_by_flows_that_each_start_and_end_once() {
    // The two ranks of the sample job run three all-reduces each on a stream of their own.
    let mut records: Vec<Record> = sample::ranked_job().into_iter().filter(Record::is_definition).collect();
    for k in 0..3u64 {
        for rank in 0..2u32 {
            let t = T0 + k * 1_000_000;
            records.push(Record::DeviceOp(
                DeviceOp::default()
                    .kind(DeviceOpKind::Kernel)
                    .pid(5000 + rank)
                    .device(DeviceId(1 + rank))
                    .stream(StreamId(10 + rank))
                    .start(t + 1_000 * u64::from(rank))
                    .end(t + 50_000)
                    .name(StrId(9))
                    .collective(CollectiveOp::AllReduce),
            ));
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let mut sink =
        PerfettoSink::new(config::defaults(), &session_info(dir.path()), Logger::stderr()).unwrap();
    sink.consume(&records).unwrap();
    sink.finish().unwrap();
    let trace = dir.path().join(FILE_NAME);
    // check_trace.py fails a flow that ends twice, continues after its end or goes nowhere.
    let summary = check::check(&trace);
    assert_eq!(summary["flow_chains"], 3, "one flow per all-reduce: {summary}");
    assert_eq!(summary["flow_chain_steps"], 3, "from its first rank's slice to the other's: {summary}");
    let linked = check::events(&trace)
        .lines()
        .filter(|l| l.contains("allreduce_kernel") && l.contains("flows=[4"))
        .count();
    assert_eq!(linked, 6, "each slice of each all-reduce names its flow");
}

/// Ranges arrive as they end, inner ones first (a step range holding op ranges, as a
/// framework's named scopes make them): nested ranges share one track, and only a range that
/// partly overlaps another opens a second.
#[test]
fn nested_ranges_share_one_track() {
    let mut r = definitions();
    let range = |start: u64, end: u64| {
        let a = Annotation::default().pid(PID).tid(TID).start(T0 + start).end(T0 + end);
        Record::Range(a.name(StrId(20)).domain(StrId(23)))
    };
    for step in 0..50u64 {
        let t = step * 1_000;
        r.extend([
            range(t + 100, t + 300),
            range(t + 400, t + 450),
            range(t + 350, t + 500),
            range(t + 50, t + 900),
        ]);
    }
    r.push(range(44_800, 45_200));
    let s = checked(&r);
    assert_eq!(
        s["lanes"]["ranges"], 2,
        "one track for the nested ranges, one for the range across two steps: {s}"
    );
    assert_eq!(s["slices_per_track"]["ranges (overlap 1)"], 1, "{s}");
    assert_eq!(s["lanes_without_overlap"], 0, "{s}");
}

#[test]
fn each_rank_of_a_job_is_a_process_track_named_by_its_rank() {
    let dir = tempfile::tempdir().unwrap();
    let mut sink =
        PerfettoSink::new(config::defaults(), &session_info(dir.path()), Logger::stderr()).unwrap();
    sink.consume(&sample::ranked_job()).unwrap();
    sink.finish().unwrap();
    let packets = check::dump(&dir.path().join(FILE_NAME));
    for name in ["rank 0 (node-a, 5000)", "rank 1 (node-b, 5001)"] {
        assert!(
            packets.contains(&format!("process_name: \"{name}\"")),
            "no process track {name}:\n{packets}"
        );
    }
}
