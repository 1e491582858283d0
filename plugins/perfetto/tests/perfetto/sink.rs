//! The sink on the sample session and on long runs.

use std::path::Path;

use xpuprof_archive::sample;
use xpuprof_plugin_perfetto::{config, PerfettoSink, TraceOptions, FILE_NAME};
use xpuprof_sdk::model::Record;
use xpuprof_sdk::{Logger, SessionInfo, Sink};

use crate::check;
use crate::golden;

pub fn session_info(dir: &Path) -> SessionInfo {
    SessionInfo {
        output_dir: dir.to_owned(),
        command: vec!["python3".into(), "train.py".into()],
        sources: vec!["scripted".into()],
        sinks: vec!["perfetto".into()],
        start_time: sample::T0,
        verbosity: 0,
        ..SessionInfo::default()
    }
}

/// Runs the sink over `records` in batches of `batch`; returns the output directory.
fn run(records: &[Record], opts: TraceOptions, batch: usize) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let mut sink = PerfettoSink::new(opts, &session_info(dir.path()), Logger::stderr()).unwrap();
    for b in records.chunks(batch) {
        sink.consume(b).unwrap();
    }
    sink.finish().unwrap();
    dir
}

#[test]
fn sample_session_matches_golden() {
    let dir = run(&sample::session(), config::defaults(), 5);
    golden::check("trace.perfetto-trace.txt", &check::dump(&dir.path().join(FILE_NAME)));
}

#[test]
fn sample_session_decodes_and_passes_the_checks() {
    let dir = run(&sample::session(), config::defaults(), 5);
    let s = check::check(&dir.path().join(FILE_NAME));
    // Eight device operations were joined to a launch; the unmatched kernel has no flow.
    assert_eq!(s["flows"], 8, "{s}");
    assert_eq!(s["samples"], 3, "three on-CPU samples: {s}");
    assert_eq!(s["counter_values"], 2, "{s}");
    let tracks = &s["tracks"];
    for name in [
        "GPU 0 (NVIDIA H100 80GB HBM3)",
        "stream 7 (default)",
        "stream 13",
        "python3",
        "pt_worker",
        "off-CPU",
        "ranges",
        "xpuprof: data lost",
    ] {
        assert!(tracks.get(name).is_some(), "no track {name}: {tracks}");
    }
    assert_eq!(tracks["device memory in use"], "counter");
    assert_eq!(s["slices_per_track"]["python3"], 6, "API calls of the main thread: {s}");
    assert_eq!(s["slices_per_track"]["pt_worker"], 1, "{s}");
    assert_eq!(s["slice_names"]["add_kernel(float*, float*, int)"], 2, "demangled: {s}");
    assert_eq!(s["instants"]["lost 3: cupti dropped records"], 1, "{s}");
    assert!(s["instants"].get("cudaGraphLaunch").is_none(), "no launch instant besides the API slice: {s}");
    assert_eq!(
        s["flow_places"]["thread with stack -> device"], 8,
        "every flow from a stacked API slice: {s}"
    );
    assert_eq!(s["api_slices"], 7, "{s}");
    assert_eq!(s["api_slices_with_stack"], 6, "every launch but the synchronize carries its stack: {s}");
    assert_eq!(s["lanes_without_overlap"], 0, "{s}");
    assert_eq!(s["instants"]["epoch"], 1, "the marker: {s}");
    assert_eq!(s["args"]["grid=128x1x1"], 6, "launch configuration of the six kernels: {s}");
    assert_eq!(s["args"]["block=256x1x1"], 6, "{s}");
    assert_eq!(s["args"]["bytes"], 3, "two copies and a memset: {s}");
}

#[test]
fn sample_session_says_what_its_golden_says() {
    let dir = run(&sample::session(), config::defaults(), 5);
    golden::check("trace.events.txt", &check::events(&dir.path().join(FILE_NAME)));
}

/// What the trace says (timestamps once the incremental clocks are applied, tracks, names,
/// arguments, flows, callstacks) does not depend on how it is encoded: compressed or not, in
/// small or large bundles, with its incremental state cleared every 16 KiB or never.
#[test]
fn what_the_trace_says_does_not_depend_on_its_encoding() {
    let mut records = sample::session();
    records.extend(sample::launches(3_000));
    let mut other = config::defaults();
    other.output.compress = false;
    other.reset_bytes = 16 << 10;
    let mut small_bundles = config::defaults();
    small_bundles.output.bundle_bytes = 4096;
    small_bundles.reset_bytes = 40 << 10;
    let said = |opts| check::events(&run(&records, opts, 64).path().join(FILE_NAME));
    let reference = said(config::defaults());
    assert!(reference.lines().count() > 12_000, "{} events", reference.lines().count());
    assert!(reference.lines().any(|l| l.contains("sample pid=")), "CPU samples decoded");
    for opts in [other, small_bundles] {
        let theirs = said(opts.clone());
        let first = reference.lines().zip(theirs.lines()).position(|(a, b)| a != b);
        assert!(first.is_none() && reference == theirs, "{opts:?}: first difference at event {first:?}");
    }
}

#[test]
fn uncompressed_output_holds_the_same_packets() {
    let mut plain = config::defaults();
    plain.output.compress = false;
    let a = run(&sample::session(), config::defaults(), 7);
    let b = run(&sample::session(), plain, 7);
    assert_eq!(check::dump(&a.path().join(FILE_NAME)), check::dump(&b.path().join(FILE_NAME)));
}

#[test]
fn long_run_streams_with_bounded_buffers_and_stays_valid() {
    let records = sample::launches(20_000);
    let dir = tempfile::tempdir().unwrap();
    let mut sink =
        PerfettoSink::new(config::defaults(), &session_info(dir.path()), Logger::stderr()).unwrap();
    sink.consume(&records).unwrap();
    let on_disk = std::fs::metadata(dir.path().join(FILE_NAME)).unwrap().len();
    assert!(on_disk > 64 << 10, "only {on_disk} bytes on disk before finish: not streamed");
    sink.finish().unwrap();
    let s = check::check(&dir.path().join(FILE_NAME));
    assert_eq!(s["flows"], 20_000);
    assert_eq!(s["slices_per_track"]["python3"], 20_000);
    let size = std::fs::metadata(dir.path().join(FILE_NAME)).unwrap().len();
    let per_launch = size as f64 / 20_000.0;
    eprintln!("{per_launch:.1} bytes per kernel launch ({:?})", sink.stats());
    assert!(per_launch <= 40.0, "{per_launch:.1} bytes per launch, budget 40");
}

#[test]
fn interned_data_is_emitted_again_after_each_clear() {
    let mut opts = config::defaults();
    opts.reset_bytes = 16 << 10;
    let dir = run(&sample::launches(5_000), opts, 100);
    let s = check::check(&dir.path().join(FILE_NAME));
    assert!(s["clears"].as_u64().unwrap() > 20, "incremental state was cleared: {s}");
    assert_eq!(s["flows"], 5_000);
}

#[test]
fn profiler_overhead_has_a_track_under_its_thread() {
    use xpuprof_sdk::model::{Overhead, OverheadKind, StrDef, StrId};
    let mut records = sample::session();
    records.push(Record::Str(StrDef::new(StrId(9_001), "CUPTI overhead: buffer flush")));
    records.push(Record::Overhead(
        Overhead::default()
            .pid(sample::PID)
            .tid(sample::TID)
            .start(sample::T0 + 1_000)
            .end(sample::T0 + 5_000)
            .kind(OverheadKind::BufferFlush)
            .name(StrId(9_001)),
    ));
    let dir = run(&records, config::defaults(), 5);
    let s = check::check(&dir.path().join(FILE_NAME));
    assert!(s["tracks"].get("profiler overhead").is_some(), "{s}");
    assert_eq!(s["slice_names"]["CUPTI overhead: buffer flush"], 1, "{s}");
}

/// The packets are written by hand (`src/pb.rs`), not by prost: every packet of a long run with
/// many incremental-state clears must be exactly what prost writes for the same message, so the
/// trace says what the prost-built writer said (the goldens compare the decoded packets too).
#[test]
fn hand_encoded_packets_are_what_prost_writes() {
    use prost::Message;
    use xpuprof_plugin_perfetto::proto::Trace;
    let mut opts = config::defaults();
    opts.output.compress = false;
    opts.reset_bytes = 16 << 10;
    let mut records = sample::session();
    records.extend(sample::launches(5_000));
    let dir = run(&records, opts, 64);
    let bytes = std::fs::read(dir.path().join(FILE_NAME)).unwrap();
    let trace = Trace::decode(bytes.as_slice()).expect("decodes as perfetto.protos.Trace");
    assert!(trace.packet.len() > 20_000, "{} packets", trace.packet.len());
    assert!(trace.packet.iter().filter(|p| p.sequence_flags == Some(1)).count() > 20, "clears");
    assert!(bytes == trace.encode_to_vec(), "the hand-written bytes differ from prost's encoding");
}
