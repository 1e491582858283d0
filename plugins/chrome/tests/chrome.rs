//! Integration tests of the chrome sink: golden file, and the structural rules Perfetto's JSON
//! importer applies (slices nest per track, flows have both ends, every track is named).

use std::collections::{HashMap, HashSet};
use std::path::Path;

use serde_json::Value;
use xpuprof_archive::sample;
use xpuprof_plugin_chrome::{ChromeSink, TraceOptions, DEVICE_BASE, LANE_STEP, STREAM_BASE};
use xpuprof_sdk::model::*;
use xpuprof_sdk::{Logger, SessionInfo, Sink};

use xpuprof_testkit::golden;

fn session_info(dir: &Path) -> SessionInfo {
    SessionInfo {
        output_dir: dir.to_owned(),
        command: vec!["python3".into(), "train.py".into()],
        sources: vec!["scripted".into()],
        sinks: vec!["chrome".into()],
        start_time: sample::T0,
        verbosity: 0,
        ..SessionInfo::default()
    }
}

/// Runs the sink over `records` in batches and returns trace.json's text.
fn run(records: &[Record]) -> String {
    let dir = tempfile::tempdir().unwrap();
    let opts = TraceOptions { cpu_samples: true };
    let mut sink = ChromeSink::new(opts, session_info(dir.path()), 256 << 20, Logger::stderr()).unwrap();
    for batch in records.chunks(5) {
        sink.consume(batch).unwrap();
    }
    let files = sink.finish().unwrap();
    std::fs::read_to_string(&files[0]).unwrap()
}

fn ns(v: &Value) -> i64 {
    (v.as_f64().unwrap() * 1000.0).round() as i64
}

fn track(e: &Value) -> (i64, i64) {
    (e["pid"].as_i64().unwrap(), e["tid"].as_i64().unwrap_or(0))
}

/// Checks the rules Perfetto's importer applies; returns the number of flows.
fn check_structure(text: &str) -> usize {
    let doc: Value = serde_json::from_str(text).expect("trace.json is valid JSON");
    let events = doc["traceEvents"].as_array().unwrap();
    // Every process and thread is named by a metadata event before its first event.
    let (mut pids, mut threads) = (HashSet::new(), HashSet::new());
    let mut slices: HashMap<(i64, i64), Vec<(i64, i64)>> = HashMap::new();
    for e in events {
        let ph = e["ph"].as_str().unwrap();
        if ph == "M" {
            match e["name"].as_str().unwrap() {
                "process_name" => pids.insert(e["pid"].as_i64().unwrap()),
                "thread_name" => threads.insert(track(e)),
                other => panic!("unexpected metadata {other}"),
            };
            assert!(e["args"]["name"].as_str().is_some_and(|n| !n.is_empty()));
            continue;
        }
        assert!(pids.contains(&e["pid"].as_i64().unwrap()), "unnamed process: {e}");
        if ph != "C" {
            assert!(threads.contains(&track(e)), "unnamed thread: {e}");
        }
        if ph == "X" {
            let start = ns(&e["ts"]);
            slices.entry(track(e)).or_default().push((start, start + ns(&e["dur"])));
        }
    }
    for (t, v) in &mut slices {
        v.sort_by_key(|&(s, e)| (s, -e));
        let mut open: Vec<i64> = Vec::new();
        for &(s, e) in v.iter() {
            while open.last().is_some_and(|&end| end <= s) {
                open.pop();
            }
            if let Some(&end) = open.last() {
                assert!(e <= end, "slice [{s},{e}) on {t:?} overlaps its parent ending at {end}");
            }
            open.push(e);
        }
    }
    check_flows(events);
    let mut ranges: HashMap<(String, i64), Vec<&str>> = HashMap::new();
    for e in events.iter().filter(|e| e["ph"] == "b" || e["ph"] == "e") {
        ranges
            .entry((e["cat"].to_string(), e["id"].as_i64().unwrap()))
            .or_default()
            .push(e["ph"].as_str().unwrap());
    }
    assert!(ranges.values().all(|v| v == &["b", "e"]), "{ranges:?}");
    check_stacks(&doc);
    check_flows(events)
}

/// Every `sf` (an event's innermost stack frame) names a node of the `stackFrames` dictionary,
/// every node's parent is a node, and no event carries a stack id in `args` that points at
/// nothing. Returns the number of API events with a stack.
fn check_stacks(doc: &Value) -> usize {
    let empty = serde_json::Map::new();
    let frames = doc.get("stackFrames").and_then(Value::as_object).unwrap_or(&empty);
    for (id, f) in frames {
        assert!(f["name"].as_str().is_some_and(|n| !n.is_empty()), "frame {id} without a name: {f}");
        if let Some(p) = f.get("parent") {
            assert!(frames.contains_key(p.as_str().unwrap()), "frame {id}'s parent {p} is no frame");
        }
    }
    let mut api = 0;
    for e in doc["traceEvents"].as_array().unwrap() {
        assert!(e["args"].get("stack").is_none(), "a stack id in args: {e}");
        if let Some(sf) = e.get("sf") {
            let id = sf.as_u64().unwrap_or_else(|| panic!("sf is not an integer: {e}")).to_string();
            assert!(frames.contains_key(&id), "sf {id} is not in stackFrames: {e}");
            api += usize::from(e["cat"] == "api");
        }
    }
    api
}

/// The function names of the stack `sf` points at, root first.
fn stack_of(doc: &Value, e: &Value) -> Vec<String> {
    let frames = doc["stackFrames"].as_object().unwrap();
    let mut out = Vec::new();
    let mut at = e.get("sf").map(|v| v.as_u64().unwrap().to_string());
    while let Some(id) = at {
        let f = &frames[&id];
        out.push(f["name"].as_str().unwrap().to_owned());
        at = f.get("parent").map(|p| p.as_str().unwrap().to_owned());
    }
    out.reverse();
    out
}

/// Checks the launch arrows (flow events v2, the form both viewers read: catapult's
/// trace_event_importer and Perfetto's JSON parser bind a `bind_id` with `flow_out` / `flow_in`
/// to the complete event carrying it): every `flow_in` has exactly one `flow_out` with its id,
/// on an API call on a host thread, starting no later than the device work it points at (both
/// importers pair the ends in timestamp order); every id is a non-zero integer below 2^53
/// (catapult reads JSON numbers as doubles and ignores a 0 id); no v1 flow event is left (their
/// ids would share Perfetto's flow id space with the v2 ids). Returns the number of arrows.
fn check_flows(events: &[Value]) -> usize {
    let mut starts: HashMap<u64, &Value> = HashMap::new();
    let mut ends: Vec<&Value> = Vec::new();
    for e in events {
        assert!(!matches!(e["ph"].as_str(), Some("s" | "t" | "f")), "a v1 flow event: {e}");
        let Some(id) = e.get("bind_id") else { continue };
        let id = id.as_u64().unwrap_or_else(|| panic!("bind_id is not an integer: {e}"));
        assert!(id != 0 && id < 1 << 53, "bind_id out of range: {e}");
        assert_eq!(e["ph"], "X", "a flow end on an event that is no slice: {e}");
        match (e.get("flow_out"), e.get("flow_in")) {
            (Some(Value::Bool(true)), None) => {
                assert_eq!(e["cat"], "api", "a flow starts at an API call: {e}");
                assert!(starts.insert(id, e).is_none(), "two flows start with id {id}");
            }
            (None, Some(Value::Bool(true))) => ends.push(e),
            _ => panic!("a flow end needs one of flow_out / flow_in, true: {e}"),
        }
    }
    for e in &ends {
        let id = e["bind_id"].as_u64().unwrap();
        let start = starts.get(&id).unwrap_or_else(|| panic!("flow {id} has no start: {e}"));
        assert!(ns(&start["ts"]) <= ns(&e["ts"]), "flow {id} ends before it starts: {start} -> {e}");
        assert_ne!(track(start), track(e), "flow {id} starts and ends on one track");
        assert!(e["args"].get("correlation").is_none(), "the arrow's start carries the correlation: {e}");
    }
    ends.len()
}

#[test]
fn sample_session_matches_golden() {
    golden::check("trace.json", &run(&sample::session()));
}

#[test]
fn sample_session_is_structurally_valid() {
    let text = run(&sample::session());
    // Eight device ops were joined to a launch; the unmatched one has no arrow and names its
    // launching process and correlation id itself.
    assert_eq!(check_structure(&text), 8);
    let doc: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(doc["metadata"]["command"], serde_json::json!(["python3", "train.py"]));
    assert_eq!(doc["metadata"]["losses"]["cupti dropped records"], 3);
    let names: Vec<_> = doc["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["ph"] == "M")
        .map(|e| e["args"]["name"].as_str().unwrap().to_owned())
        .collect();
    assert!(names.contains(&"GPU 0 (NVIDIA H100 80GB HBM3)".to_owned()), "{names:?}");
    assert!(names.contains(&"stream 13".to_owned()), "{names:?}");
    assert!(names.contains(&"python3 (4242)".to_owned()), "{names:?}");
}

#[test]
fn long_run_streams_and_stays_valid() {
    let records = sample::launches(20_000);
    let dir = tempfile::tempdir().unwrap();
    let opts = TraceOptions { cpu_samples: true };
    let mut sink = ChromeSink::new(opts, session_info(dir.path()), 256 << 20, Logger::stderr()).unwrap();
    sink.consume(&records).unwrap();
    // Written while recording, not at the end.
    let size = std::fs::metadata(dir.path().join("trace.json")).unwrap().len();
    assert!(size > 1 << 20, "only {size} bytes on disk before finish");
    sink.finish().unwrap();
    let text = std::fs::read_to_string(dir.path().join("trace.json")).unwrap();
    assert_eq!(check_structure(&text), 20_000);
}

#[test]
fn warns_once_the_file_passes_the_size_limit() {
    let dir = tempfile::tempdir().unwrap();
    let opts = TraceOptions { cpu_samples: true };
    let mut sink = ChromeSink::new(opts, session_info(dir.path()), 1 << 20, Logger::stderr()).unwrap();
    // Enough for the streams' reorder windows to release work before the end.
    let records = sample::launches(20_000);
    sink.consume(&records[..200]).unwrap();
    assert!(!sink.size_warning_given());
    for b in records[200..].chunks(500) {
        sink.consume(b).unwrap();
    }
    assert!(sink.size_warning_given(), "no warning past 1 MB");
    sink.finish().unwrap();
}

use xpuprof_testkit::host;

/// The session start is the real clock at record time: masked for the comparison.
fn mask_start_time(text: &str) -> String {
    let Some(i) = text.rfind("\"start_time_ns\":") else { return text.to_owned() };
    let rest = &text[i + 16..];
    let end = rest.find(',').unwrap_or(rest.len());
    format!("{}\"start_time_ns\":0{}", &text[..i], &rest[end..])
}

#[test]
fn scripted_session_through_the_host_matches_golden_and_is_valid() {
    let Some(bin) = host::xpuprof(&["scripted", "chrome"]) else { return };
    let out = tempfile::tempdir().unwrap();
    host::record(&bin, "chrome", out.path());
    let text = std::fs::read_to_string(out.path().join("trace.json")).unwrap();
    assert!(check_structure(&text) > 0);
    golden::check("scripted.trace.json", &mask_start_time(&text));
}

#[test]
fn profiler_overhead_is_shown_on_its_thread() {
    let recs = vec![
        Record::Str(StrDef::new(StrId(1), "CUPTI overhead: buffer flush")),
        Record::Overhead(
            Overhead::default()
                .pid(7)
                .tid(8)
                .start(1_000)
                .end(3_000)
                .kind(OverheadKind::BufferFlush)
                .name(StrId(1)),
        ),
    ];
    let text = run(&recs);
    check_structure(&text);
    let doc: Value = serde_json::from_str(&text).unwrap();
    let ev: Vec<&Value> =
        doc["traceEvents"].as_array().unwrap().iter().filter(|e| e["cat"] == "overhead").collect();
    assert_eq!(ev.len(), 2, "{text}");
    assert_eq!((ev[0]["ph"].as_str(), ev[1]["ph"].as_str()), (Some("b"), Some("e")));
    assert_eq!(ev[0]["name"], "CUPTI overhead: buffer flush");
    assert_eq!(ev[0]["args"]["kind"], "buffer flush");
    assert_eq!((track(ev[0]), ns(&ev[1]["ts"]) - ns(&ev[0]["ts"])), ((7, 8), 2_000));
}

/// Two processes with the same correlation ids, two devices, overlapping work on one stream, work
/// without a launch and a correlation id too large for a flow id: every arrow has both ends and
/// the right ones, every device track is named, ids never mix up the processes.
#[test]
fn every_flow_has_both_ends_and_every_device_track_its_name() {
    let corr = |id| Some(Correlation { backend: 1, id });
    let mut recs = vec![
        Record::Str(StrDef::new(StrId(1), "cudaLaunchKernel")),
        Record::Str(StrDef::new(StrId(2), "k")),
        Record::Device(DeviceDef::default().id(DeviceId(1)).index(0)),
        Record::Device(DeviceDef::default().id(DeviceId(2)).index(1)),
        Record::Stream(StreamDef::default().id(StreamId(1)).device(DeviceId(1)).pid(100).native_id(7)),
        Record::Stream(StreamDef::default().id(StreamId(2)).device(DeviceId(2)).pid(200).native_id(7)),
    ];
    let mut expected = Vec::new();
    for (i, pid, stream) in [(0u64, 100u32, 1u32), (0, 200, 2), (1, 100, 1), (1, 200, 2)] {
        let t = 1_000_000 + i * 10_000;
        let id = 1 + i;
        let call = ApiCall::default().pid(pid).tid(pid).start(t).end(t + 2_000).name(StrId(1));
        recs.push(Record::ApiCall(call.correlation(corr(id))));
        let launch = LaunchRef::default().tid(pid).time(t);
        // Two kernels per launch on the same stream, the second overlapping the first (an
        // overflow lane).
        for (start, end) in [(t + 5_000, t + 9_000), (t + 6_000, t + 8_500)] {
            let op = DeviceOp::default().kind(DeviceOpKind::Kernel).pid(pid).stream(StreamId(stream));
            let op = op.start(start).end(end).name(StrId(2)).correlation(corr(id)).launch(Some(launch));
            recs.push(Record::DeviceOp(op));
            expected.push((pid, (stream - 1) as i64, id));
        }
    }
    // No launch: no arrow, its process and correlation in args.
    let op = DeviceOp::default().kind(DeviceOpKind::Kernel).pid(100).stream(StreamId(1)).name(StrId(2));
    recs.push(Record::DeviceOp(op.start(2_000_000).end(2_001_000).correlation(corr(9))));
    // A correlation id too large for a flow id: no arrow either, counted.
    let big = 1 << 40;
    let call = ApiCall::default().pid(100).tid(100).start(3_000_000).end(3_001_000).name(StrId(1));
    recs.push(Record::ApiCall(call.correlation(corr(big))));
    let op = DeviceOp::default().kind(DeviceOpKind::Kernel).pid(100).stream(StreamId(1)).name(StrId(2));
    let op = op.start(3_005_000).end(3_006_000).correlation(corr(big));
    recs.push(Record::DeviceOp(op.launch(Some(LaunchRef::default().tid(100).time(3_000_000)))));

    let text = run(&recs);
    assert_eq!(check_structure(&text), 8);
    let doc: Value = serde_json::from_str(&text).unwrap();
    let events = doc["traceEvents"].as_array().unwrap();
    assert_eq!(doc["metadata"]["flows_not_drawn"], 2, "the API call and the kernel of the large id");
    let names: HashMap<(i64, i64), &str> = events
        .iter()
        .filter(|e| e["ph"] == "M")
        .map(|e| (track(e), e["args"]["name"].as_str().unwrap()))
        .collect();
    // Both ends of each arrow: the kernel's flow comes from its own process's call with its id.
    let calls: HashMap<u64, &Value> = events
        .iter()
        .filter(|e| e.get("flow_out").is_some())
        .map(|e| (e["bind_id"].as_u64().unwrap(), e))
        .collect();
    let mut seen = Vec::new();
    for k in events.iter().filter(|e| e["ph"] == "X" && e["cat"] == "kernel") {
        let (pid, tid) = track(k);
        assert!(pid >= i64::from(DEVICE_BASE) && tid >= i64::from(STREAM_BASE), "{k}");
        assert!(names[&(pid, 0)].starts_with("GPU "), "device process named: {names:?}");
        assert!(names[&(pid, tid)].starts_with("stream 7"), "stream thread named: {names:?}");
        let Some(id) = k.get("bind_id") else {
            assert!(k["args"]["pid"] == 100 && k["args"]["correlation"].is_u64(), "{k}");
            continue;
        };
        let call = calls[&id.as_u64().unwrap()];
        let stream = (tid - i64::from(STREAM_BASE)) % i64::from(LANE_STEP) - 1;
        seen.push((
            call["pid"].as_u64().unwrap() as u32,
            stream,
            call["args"]["correlation"].as_u64().unwrap(),
        ));
    }
    seen.sort();
    expected.sort();
    assert_eq!(seen, expected);
    let lanes: HashSet<i64> = events.iter().filter(|e| e["cat"] == "kernel").map(|e| track(e).1).collect();
    assert_eq!(lanes.len(), 4, "two streams, each with an overflow lane: {lanes:?}");
    assert!(names.values().any(|n| n.ends_with("(overlap 1)")), "{names:?}");
}

/// Kernel `name` of process 10 on stream 1 at `start` (1 µs long), joined to the launch of
/// correlation id `corr` on thread 10.
fn launched_kernel(name: StrId, start: u64, corr: u64) -> Record {
    let op = DeviceOp::default().kind(DeviceOpKind::Kernel).pid(10).stream(StreamId(1)).name(name);
    let op = op.start(start).end(start + 1_000).correlation(Some(Correlation { backend: 1, id: corr }));
    Record::DeviceOp(op.launch(Some(LaunchRef::default().tid(10).time(start - 2_000))))
}

/// A runtime call and the driver call it makes, given one correlation id by their backend: one
/// arrow, from the first of them written, so that no flow id starts twice.
#[test]
fn nested_calls_with_one_correlation_id_start_one_arrow() {
    let corr = Some(Correlation { backend: 1, id: 5 });
    let call = |start, end, name| {
        Record::ApiCall(
            ApiCall::default().pid(10).tid(10).start(start).end(end).name(StrId(name)).correlation(corr),
        )
    };
    let recs = vec![
        Record::Str(StrDef::new(StrId(1), "cudaLaunchKernel")),
        Record::Str(StrDef::new(StrId(2), "cuLaunchKernel")),
        Record::Str(StrDef::new(StrId(3), "k")),
        call(1_500, 2_500, 2),
        call(1_000, 3_000, 1),
        launched_kernel(StrId(3), 5_000, 5),
    ];
    let text = run(&recs);
    assert_eq!(check_structure(&text), 1);
    let doc: Value = serde_json::from_str(&text).unwrap();
    let starts: Vec<&Value> =
        doc["traceEvents"].as_array().unwrap().iter().filter(|e| e.get("flow_out").is_some()).collect();
    assert_eq!(starts.len(), 1, "{text}");
    assert_eq!(starts[0]["name"], "cuLaunchKernel", "the first written");
}

/// A correlation id used again by a later call of the same process (the scripted source's fixed
/// ids do this): the first call's arrow stays, the later call and its work get none, counted.
#[test]
fn a_reused_correlation_id_starts_no_second_arrow() {
    let corr = Some(Correlation { backend: 1, id: 5 });
    let call = |tid, start| {
        Record::ApiCall(
            ApiCall::default()
                .pid(10)
                .tid(tid)
                .start(start)
                .end(start + 1_000)
                .name(StrId(1))
                .correlation(corr),
        )
    };
    let work = |start| launched_kernel(StrId(2), start, 5);
    let recs = vec![
        Record::Str(StrDef::new(StrId(1), "cudaLaunchKernel")),
        Record::Str(StrDef::new(StrId(2), "k")),
        call(10, 1_000),
        work(3_000),
        call(11, 9_000),
        work(11_000),
    ];
    let text = run(&recs);
    assert_eq!(check_structure(&text), 1);
    let doc: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(doc["metadata"]["flows_not_drawn"], 2, "{text}");
    let kernels: Vec<&Value> =
        doc["traceEvents"].as_array().unwrap().iter().filter(|e| e["cat"] == "kernel").collect();
    assert_eq!(kernels[0]["bind_id"], 5);
    assert!(kernels[1].get("bind_id").is_none() && kernels[1]["args"]["correlation"] == 5, "{text}");
}

/// API events carry their launch's stack (`sf` into `stackFrames`), whatever order the call,
/// its launch site and its work arrive in; CPU samples carry theirs the same way.
#[test]
fn api_events_carry_their_launch_stack() {
    let text = run(&sample::session());
    let doc: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(check_stacks(&doc), 6, "every launch but the synchronize: {text}");
    let events = doc["traceEvents"].as_array().unwrap();
    let launch = events.iter().find(|e| e["cat"] == "api" && e["args"]["correlation"] == 2).unwrap();
    assert_eq!(stack_of(&doc, launch), ["main", "train_step", "forward", "libtorch_cuda.so+0x1a2b"]);
    let sample = events.iter().find(|e| e["cat"] == "cpu").unwrap();
    assert_eq!(stack_of(&doc, sample).last().unwrap(), "c10::cuda::CUDAStream::launch", "{sample}");
    // The site first (activity buffers), or no site at all (the stack the correlator joined).
    let site = Record::LaunchSite(
        LaunchSite::default()
            .pid(sample::PID)
            .tid(sample::TID)
            .time(sample::T0)
            .correlation(Correlation { backend: backend::CUDA, id: 1 })
            .stack(StackId(2)),
    );
    let call = |id| {
        Record::ApiCall(
            ApiCall::default()
                .pid(sample::PID)
                .tid(sample::TID)
                .start(sample::T0 + id * 1_000)
                .end(sample::T0 + id * 1_000 + 500)
                .name(StrId(11))
                .correlation(Some(Correlation { backend: backend::CUDA, id })),
        )
    };
    let mut work = DeviceOp::default().kind(DeviceOpKind::Kernel).pid(sample::PID).device(DeviceId(1));
    work = work.stream(StreamId(1)).start(sample::T0 + 9_000).end(sample::T0 + 9_500).name(StrId(15));
    work = work.correlation(Some(Correlation { backend: backend::CUDA, id: 2 }));
    work =
        work.launch(Some(LaunchRef::default().tid(sample::TID).stack(StackId(1)).time(sample::T0 + 2_000)));
    let mut recs: Vec<Record> = sample::session().into_iter().filter(Record::is_definition).collect();
    recs.extend([site, call(1), call(2), Record::DeviceOp(work)]);
    let text = run(&recs);
    let doc: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(check_stacks(&doc), 2, "{text}");
    assert_eq!(check_structure(&text), 1, "the arrow from call 2 to its kernel: {text}");
}

/// A serial stream whose records arrive out of order, with zero-length work inside its kernels,
/// is one lane; only a kernel that really overlaps another opens a second. Allocations are a
/// memory counter of their device, not slices.
#[test]
fn lanes_only_for_real_overlap_and_allocations_as_a_counter() {
    let kernel = |start: u64, dur: u64| {
        let op =
            DeviceOp::default().kind(DeviceOpKind::Kernel).pid(10).device(DeviceId(1)).stream(StreamId(1));
        op.start(start).end(start + dur).name(StrId(1))
    };
    let mut ops = Vec::new();
    for i in 0..100u64 {
        ops.push(kernel(10_000 + i * 10_000, 9_000));
        ops.push(kernel(10_000 + i * 10_000 + 4_000, 0).kind(DeviceOpKind::Sync));
    }
    for four in ops.chunks_mut(4) {
        four.rotate_left(2);
    }
    ops.push(kernel(10_000 + 50 * 10_000 + 1_000, 3_000));
    let mem = |kind, start, bytes| {
        DeviceOp::default().kind(kind).pid(10).device(DeviceId(1)).start(start).end(start).bytes(bytes)
    };
    ops.push(mem(DeviceOpKind::Alloc, 2_000, 4096));
    ops.push(mem(DeviceOpKind::Alloc, 1_000, 1024));
    ops.push(mem(DeviceOpKind::Free, 3_000, 1024));
    let mut recs = vec![Record::Str(StrDef::new(StrId(1), "k"))];
    recs.extend(ops.into_iter().map(Record::DeviceOp));
    let text = run(&recs);
    check_structure(&text);
    let doc: Value = serde_json::from_str(&text).unwrap();
    let events = doc["traceEvents"].as_array().unwrap();
    let lane = |n: u32| {
        events.iter().filter(|e| e["ph"] == "X" && e["tid"] == STREAM_BASE + 1 + n * LANE_STEP).count()
    };
    assert_eq!((lane(0), lane(1), lane(2)), (200, 1, 0), "{text}");
    assert_eq!(doc["metadata"]["device_overlaps"], 0);
    let memory: Vec<u64> = events
        .iter()
        .filter(|e| e["ph"] == "C" && e["name"] == "memory in use (allocations)")
        .map(|e| e["args"]["value"].as_u64().unwrap())
        .collect();
    assert_eq!(memory, [1024, 5120, 4096], "in start order: {text}");
    assert!(!events.iter().any(|e| e["cat"] == "alloc" || e["cat"] == "free"), "{text}");
}

/// A serial stream whose records come in batches handed over out of order, each later than the
/// reorder window reaches (CUPTI's side-by-side activity buffers on the H200), is one lane; a
/// late kernel that really overlaps another opens a second.
#[test]
fn work_later_than_the_reorder_window_goes_in_the_gap_it_fits() {
    let kernel = |start: u64, dur: u64| {
        let op =
            DeviceOp::default().kind(DeviceOpKind::Kernel).pid(10).device(DeviceId(1)).stream(StreamId(1));
        op.start(start).end(start + dur).name(StrId(1))
    };
    let batch = xpuprof_toolbox::timeline::WINDOW as u64 + 1_000;
    let mut ops: Vec<DeviceOp> = (0..4 * batch).map(|i| kernel(10_000 + i * 10_000, 9_000)).collect();
    // Batches 1, 0, 3, 2: batch 0 arrives after more than a window of later work.
    for pair in ops.chunks_mut(2 * batch as usize) {
        pair.rotate_left(batch as usize);
    }
    ops.push(kernel(11_000, 3_000));
    let mut recs = vec![Record::Str(StrDef::new(StrId(1), "k"))];
    recs.extend(ops.into_iter().map(Record::DeviceOp));
    let text = run(&recs);
    check_structure(&text);
    let doc: Value = serde_json::from_str(&text).unwrap();
    let events = doc["traceEvents"].as_array().unwrap();
    let lane = |n: u32| {
        events.iter().filter(|e| e["ph"] == "X" && e["tid"] == STREAM_BASE + 1 + n * LANE_STEP).count()
    };
    assert_eq!((lane(0), lane(1), lane(2)), (4 * batch as usize, 1, 0));
    assert_eq!(doc["metadata"]["device_overlaps"], 0);
}

/// Compile-time work (its launch stack holds the `[compile]` frame the source put there) has the
/// category `kernel,compile`; the steady state keeps `kernel`.
#[test]
fn compile_time_work_has_its_own_category() {
    let frame = |id: u32, name: u32| {
        Record::Frame(
            FrameDef::default().id(FrameId(id)).kind(FrameKind::Synthetic).pid(10).name(StrId(name)),
        )
    };
    let stack = |id: u32, frames: &[u32]| {
        Record::Stack(
            StackDef::default().id(StackId(id)).frames(frames.iter().map(|f| FrameId(*f)).collect()),
        )
    };
    let kernel = |start: u64, corr: u64, st: u32| match launched_kernel(StrId(3), start, corr) {
        Record::DeviceOp(op) => {
            let l = op.launch.unwrap();
            Record::DeviceOp(op.launch(Some(l.stack(StackId(st)))))
        }
        r => r,
    };
    let recs = vec![
        Record::Str(StrDef::new(StrId(1), "[compile]")),
        Record::Str(StrDef::new(StrId(2), "main (/w/train.py:88)")),
        Record::Str(StrDef::new(StrId(3), "k")),
        frame(1, 1),
        frame(2, 2),
        stack(1, &[1, 2]),
        stack(2, &[2]),
        kernel(5_000, 1, 1),
        kernel(9_000, 2, 2),
    ];
    let text = run(&recs);
    let doc: Value = serde_json::from_str(&text).unwrap();
    let cats: Vec<&str> = doc["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["name"] == "k")
        .map(|e| e["cat"].as_str().unwrap())
        .collect();
    assert_eq!(cats, ["kernel,compile", "kernel"], "{text}");
}

/// A CPU sample in xpuprof's own code in the target reads as the profiler's: its frames under
/// one `[xpuprof]` frame above the agent's outermost one.
#[test]
fn xpuprofs_own_code_is_under_one_xpuprof_frame() {
    let mut recs: Vec<Record> = sample::session().into_iter().filter(Record::is_definition).collect();
    let texts =
        ["/opt/xpuprof/lib/libxpuprof_cupti_agent.so", "xpuprof_python::own::Interpreter::read_chain"];
    for (i, t) in texts.iter().enumerate() {
        recs.push(Record::Str(StrDef::new(StrId(900 + i as u32), *t)));
    }
    recs.push(Record::Module(ModuleDef::default().id(ModuleId(90)).path(StrId(900))));
    let own = FrameDef::default().id(FrameId(90)).kind(FrameKind::FileOffset).module(ModuleId(90));
    recs.push(Record::Frame(own.address(0x40).pid(sample::PID).name(StrId(901))));
    let frames = vec![FrameId(4), FrameId(90), FrameId(2), FrameId(1)];
    recs.push(Record::Stack(StackDef::default().id(StackId(90)).frames(frames)));
    let s = CpuSample::default().pid(sample::PID).tid(sample::TID).time(sample::T0 + 1_000).weight(1_000_000);
    recs.push(Record::CpuSample(s.stack(StackId(90))));
    let text = run(&recs);
    let doc: Value = serde_json::from_str(&text).unwrap();
    let events = doc["traceEvents"].as_array().unwrap();
    let sample = events.iter().find(|e| e["cat"] == "cpu").unwrap();
    assert_eq!(
        stack_of(&doc, sample),
        [
            "main",
            "train_step",
            "forward",
            "[xpuprof]",
            "xpuprof_python::own::Interpreter::read_chain",
            "c10::cuda::CUDAStream::launch"
        ]
    );
}
