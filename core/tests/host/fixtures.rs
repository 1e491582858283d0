//! The event model's frozen fixtures (`tests/fixtures/model/`, see its `make.sh`): batches and an
//! archive written by an older xpuprof must still decode and replay identically.
//!
//! - each batch stream is decoded and every record printed field by field (the fields the
//!   fixtures were written with; fields added later must read as their defaults and are not
//!   printed) and compared with `golden/<stream>.txt`;
//! - the archive is replayed with `xpuprof report` through folded, chrome and summary and the
//!   outputs compared with `golden/report/`.
//!
//! `XPUPROF_BLESS=1` rewrites the golden files (only when a sink's output changes on purpose;
//! the fixtures themselves are never regenerated).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use xpuprof_sdk::codec::Decoder;
use xpuprof_sdk::model::*;

use super::common::*;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/model")
}

fn check_golden(name: &str, actual: &str) {
    let path = fixtures().join("golden").join(name);
    if std::env::var_os("XPUPROF_BLESS").is_some_and(|v| v == "1") {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, actual).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("failed to read {}: {e} (run with XPUPROF_BLESS=1)", path.display()));
    if actual != expected {
        let i = actual.lines().zip(expected.lines()).position(|(a, e)| a != e);
        let at = i.map_or_else(
            || format!("{} lines vs {} expected", actual.lines().count(), expected.lines().count()),
            |i| {
                format!(
                    "line {}:\n  got:      {}\n  expected: {}",
                    i + 1,
                    actual.lines().nth(i).unwrap_or_default(),
                    expected.lines().nth(i).unwrap_or_default()
                )
            },
        );
        panic!("{name} differs from its golden file at {at}\nXPUPROF_BLESS=1 regenerates it");
    }
}

/// Splits a batch-stream file, `(length: u32le, batch)*`, into its batches.
fn batches(bytes: &[u8]) -> Vec<&[u8]> {
    let mut out = Vec::new();
    let mut rest = bytes;
    while !rest.is_empty() {
        let (len, tail) = rest.split_at(4);
        let len = u32::from_le_bytes(len.try_into().unwrap()) as usize;
        let (batch, tail) = tail.split_at(len);
        out.push(batch);
        rest = tail;
    }
    out
}

fn corr(c: Option<Correlation>) -> String {
    c.map_or_else(|| "-".to_owned(), |c| format!("{}:{}", c.backend, c.id))
}

/// One line per record with the fields the fixtures were written with.
fn dump(r: &Record) -> String {
    match r {
        Record::Str(d) => format!("Str id={} text={:?}", d.id.0, d.text),
        Record::Process(d) => format!("Process pid={} ppid={} command={}", d.pid, d.ppid, d.command.0),
        Record::Thread(d) => format!("Thread pid={} tid={} name={}", d.pid, d.tid, d.name.0),
        Record::Device(d) => format!(
            "Device id={} vendor={:?} index={} name={} uuid={:02x?} compute_units={} memory_bytes={}",
            d.id.0, d.vendor, d.index, d.name.0, d.uuid, d.compute_units, d.memory_bytes
        ),
        Record::Stream(d) => format!(
            "Stream id={} device={} pid={} native_id={} name={}",
            d.id.0, d.device.0, d.pid, d.native_id, d.name.0
        ),
        Record::Module(d) => format!("Module id={} path={} build_id={:02x?}", d.id.0, d.path.0, d.build_id),
        Record::Frame(d) => format!(
            "Frame id={} kind={:?} module={} address={:#x} pid={} name={} inlined={:?}",
            d.id.0,
            d.kind,
            d.module.0,
            d.address,
            d.pid,
            d.name.0,
            d.inlined.iter().map(|s| s.0).collect::<Vec<_>>()
        ),
        Record::Stack(d) => {
            format!("Stack id={} frames={:?}", d.id.0, d.frames.iter().map(|f| f.0).collect::<Vec<_>>())
        }
        Record::ApiCall(e) => format!(
            "ApiCall pid={} tid={} start={} end={} name={} correlation={} external={} result={}",
            e.pid,
            e.tid,
            e.start,
            e.end,
            e.name.0,
            corr(e.correlation),
            e.external.map_or_else(|| "-".to_owned(), |x| format!("{}:{}", x.kind, x.id)),
            e.result
        ),
        Record::DeviceOp(e) => dump_op(e),
        Record::LaunchSite(e) => format!(
            "LaunchSite pid={} tid={} time={} correlation={} api={} stack={}",
            e.pid,
            e.tid,
            e.time,
            corr(Some(e.correlation)),
            e.api.0,
            e.stack.0
        ),
        Record::CpuSample(e) => format!(
            "CpuSample pid={} tid={} time={} kind={:?} weight={} stack={}",
            e.pid, e.tid, e.time, e.kind, e.weight, e.stack.0
        ),
        Record::Marker(a) | Record::Range(a) => format!(
            "{} pid={} tid={} start={} end={} name={} domain={}",
            if matches!(r, Record::Marker(_)) { "Marker" } else { "Range" },
            a.pid,
            a.tid,
            a.start,
            a.end,
            a.name.0,
            a.domain.0
        ),
        Record::Counter(e) => format!(
            "Counter pid={} device={} time={} name={} value={}",
            e.pid, e.device.0, e.time, e.name.0, e.value
        ),
        Record::Loss(e) => {
            format!("Loss pid={} time={} cause={} count={}", e.pid, e.time, e.cause.0, e.count)
        }
        Record::ClockSync(e) => format!(
            "ClockSync domain={} source_time={} session_time={}",
            e.domain.0, e.source_time, e.session_time
        ),
        // Kinds added after the fixtures were written cannot occur in them.
        other => format!("{other:?}"),
    }
}

fn dump_op(e: &DeviceOp) -> String {
    let mut s = format!(
        "DeviceOp kind={:?} pid={} device={} stream={} start={} end={} clock={} name={} bytes={} copy={:?} correlation={}",
        e.kind,
        e.pid,
        e.device.0,
        e.stream.0,
        e.start,
        e.end,
        e.clock.0,
        e.name.0,
        e.bytes,
        e.copy,
        corr(e.correlation)
    );
    if let Some(k) = &e.kernel {
        let _ = write!(
            s,
            " kernel=grid{:?}/block{:?}/shared{}/regs{}",
            k.grid, k.block, k.shared_memory, k.registers
        );
    }
    if let Some(g) = &e.graph {
        let _ = write!(s, " graph={}/{}", g.graph, g.node);
    }
    if let Some(l) = &e.launch {
        let _ = write!(s, " launch=tid{}/stack{}/api{}/time{}", l.tid, l.stack.0, l.api.0, l.time);
    }
    s
}

fn decode_stream(name: &str) -> String {
    let bytes = std::fs::read(fixtures().join(name)).unwrap();
    let mut out = String::new();
    for (i, b) in batches(&bytes).into_iter().enumerate() {
        let mut d = Decoder::new(b);
        for r in d.by_ref() {
            let r = r.unwrap_or_else(|e| panic!("{name}: batch {i}: {e}"));
            out.push_str(&dump(&r));
            out.push('\n');
        }
        assert_eq!(d.skipped(), 0, "{name}: batch {i}: records of a known kind were skipped");
    }
    out
}

#[test]
fn old_scripted_source_batches_decode_identically() {
    check_golden("scripted.batches.txt", &decode_stream("scripted.batches"));
}

#[test]
fn old_host_side_batches_decode_identically() {
    check_golden("sample.batches.txt", &decode_stream("sample.batches"));
}

#[test]
fn old_archive_replays_identically_through_report() {
    for p in ["folded", "chrome", "summary"] {
        require_plugin(p);
    }
    let out = tempfile::tempdir().unwrap();
    let o = run_in(
        out.path(),
        &["report", fixtures().to_str().unwrap(), "--sink", "folded,chrome,summary", "-o", "replayed"],
    );
    assert!(o.status.success(), "xpuprof report of the fixture archive failed:\n{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("replayed 101 records"), "{err}");
    for f in ["profile.folded", "trace.json", "summary.txt", "summary.json"] {
        let got = std::fs::read_to_string(out.path().join("replayed").join(f)).unwrap();
        check_golden(&format!("report/{f}"), &got);
    }
}
