//! Integration tests of the dump sink: every record of the sample session, definitions
//! included, becomes one line of valid JSON naming its kind; the limit is kept and counted.

use xpuprof_archive::sample;
use xpuprof_plugin_dump::DumpSink;
use xpuprof_sdk::{Logger, Sink};

fn run(limit: u64) -> Vec<serde_json::Value> {
    let dir = tempfile::tempdir().unwrap();
    let mut sink = DumpSink::new(dir.path(), "records.jsonl", limit, Logger::stderr()).unwrap();
    for batch in sample::session().chunks(5) {
        sink.consume(batch).unwrap();
    }
    let files = sink.finish().unwrap();
    assert_eq!(files, [dir.path().join("records.jsonl")]);
    let text = std::fs::read_to_string(&files[0]).unwrap();
    text.lines().map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}"))).collect()
}

#[test]
fn every_record_is_one_json_line_with_its_kind_definitions_included() {
    let records = sample::session();
    let lines = run(0);
    assert_eq!(lines.len(), records.len());
    let kinds: Vec<&str> = lines.iter().map(|l| l["record"].as_str().unwrap()).collect();
    for k in ["Str", "Process", "Device", "Stack", "ApiCall", "LaunchSite", "DeviceOp", "CpuSample"] {
        assert!(kinds.contains(&k), "no {k} line: {kinds:?}");
    }
    assert!(lines.iter().all(|l| l.get("debug").is_none()), "every record's fields were read");
    // A definition's text and an event's ids are there to read.
    let strings: Vec<&str> =
        lines.iter().filter(|l| l["record"] == "Str").filter_map(|l| l["text"].as_str()).collect();
    assert!(!strings.is_empty());
    let op = lines.iter().find(|l| l["record"] == "DeviceOp").unwrap();
    assert!(op["start"].as_u64().is_some() && op["device"].as_u64().is_some(), "{op}");
}

#[test]
fn the_limit_keeps_the_first_records() {
    let lines = run(3);
    assert_eq!(lines.len(), 3);
    assert_eq!(
        lines[0]["record"],
        serde_json::Value::from(xpuprof_toolbox::json_lines::kind(&sample::session()[0]))
    );
}
