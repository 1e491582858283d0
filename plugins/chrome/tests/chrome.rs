//! Integration tests of the chrome sink: golden file, and the structural rules Perfetto's JSON
//! importer applies (slices nest per track, flows have both ends, every track is named).

use std::collections::{HashMap, HashSet};
use std::path::Path;

use serde_json::Value;
use xpuprof_archive::sample;
use xpuprof_plugin_chrome::{ChromeSink, TraceOptions};
use xpuprof_sdk::model::Record;
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
    let (mut pids, mut threads) = (HashSet::new(), HashSet::new());
    for e in events.iter().filter(|e| e["ph"] == "M") {
        match e["name"].as_str().unwrap() {
            "process_name" => pids.insert(e["pid"].as_i64().unwrap()),
            "thread_name" => threads.insert(track(e)),
            other => panic!("unexpected metadata {other}"),
        };
        assert!(e["args"]["name"].as_str().is_some_and(|n| !n.is_empty()));
    }
    let mut slices: HashMap<(i64, i64), Vec<(i64, i64)>> = HashMap::new();
    for e in events.iter().filter(|e| e["ph"] != "M") {
        let ph = e["ph"].as_str().unwrap();
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
    let enclosed =
        |t: (i64, i64), ts: i64| slices.get(&t).is_some_and(|v| v.iter().any(|&(s, e)| s <= ts && ts <= e));
    let mut flows: HashMap<i64, Vec<&Value>> = HashMap::new();
    for e in events.iter().filter(|e| e["ph"] == "s" || e["ph"] == "f") {
        assert_eq!((e["cat"].as_str(), e["name"].as_str()), (Some("flow"), Some("launch")));
        assert!(enclosed(track(e), ns(&e["ts"])), "flow end outside any slice: {e}");
        flows.entry(e["id"].as_i64().unwrap()).or_default().push(e);
    }
    for (id, ends) in &flows {
        let phs: Vec<_> = ends.iter().map(|e| e["ph"].as_str().unwrap()).collect();
        assert_eq!(phs, ["s", "f"], "flow {id}");
        assert_eq!(ends[1]["bp"], "e");
    }
    let mut ranges: HashMap<(String, i64), Vec<&str>> = HashMap::new();
    for e in events.iter().filter(|e| e["ph"] == "b" || e["ph"] == "e") {
        ranges
            .entry((e["cat"].to_string(), e["id"].as_i64().unwrap()))
            .or_default()
            .push(e["ph"].as_str().unwrap());
    }
    assert!(ranges.values().all(|v| v == &["b", "e"]), "{ranges:?}");
    flows.len()
}

#[test]
fn sample_session_matches_golden() {
    golden::check("trace.json", &run(&sample::session()));
}

#[test]
fn sample_session_is_structurally_valid() {
    let text = run(&sample::session());
    // Ten device ops were joined to a launch; the unmatched one has no arrow.
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
    let records = sample::launches(5_000);
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
    use xpuprof_sdk::model::{Overhead, OverheadKind, StrDef, StrId};
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
