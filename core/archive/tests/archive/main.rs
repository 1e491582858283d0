//! Integration tests of the archive: exact replay, size per launch, and damage handling.

use std::path::Path;

use proptest::prelude::*;
use xpuprof_archive::{open, sample, ArchiveError, Meta, Writer};
use xpuprof_sdk::codec;
use xpuprof_sdk::model::Record;

mod damage;

fn meta() -> Meta {
    Meta {
        command: vec!["python3".into(), "train.py".into()],
        sources: vec!["scripted".into()],
        sinks: vec!["archive".into(), "folded".into()],
        start_time: sample::T0,
        codec_version: codec::CODEC_VERSION,
        writer: "test".into(),
        host: "node-1".into(),
        clock_pair: Some(xpuprof_archive::ClockPair {
            wall_ns: 1_700_000_000_000_000_000,
            session_ns: sample::T0,
            uncertainty_ns: 120,
        }),
    }
}

/// Writes `records` in batches of `batch` and returns the archive directory's parent.
fn write(dir: &Path, records: &[Record], batch: usize) -> u64 {
    let mut w = Writer::create(&dir.join("archive"), &meta()).unwrap();
    for b in records.chunks(batch) {
        for r in b {
            w.write(r).unwrap();
        }
        w.end_batch().unwrap();
    }
    w.finish().unwrap().bytes
}

fn encoded(records: &[Record]) -> Vec<u8> {
    let mut out = Vec::new();
    for r in records {
        codec::encode(r, &mut out);
    }
    out
}

/// Replays everything at `path`; returns the bytes delivered and the damage reported.
fn replay(path: &Path) -> Result<(Vec<u8>, u64, Option<ArchiveError>), ArchiveError> {
    let mut reader = open(path)?;
    let mut got = Vec::new();
    let stats = reader.replay(&mut |b| got.extend_from_slice(b))?;
    Ok((got, stats.records, stats.corruption))
}

#[test]
fn replay_reproduces_the_records_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let records = sample::session();
    write(dir.path(), &records, 3);
    // Accepts the output directory, the archive directory and the file.
    for p in [dir.path().to_owned(), dir.path().join("archive"), dir.path().join("archive/trace.xpa")] {
        let (got, n, damage) = replay(&p).unwrap();
        assert!(damage.is_none(), "{damage:?}");
        assert_eq!(n, records.len() as u64);
        assert_eq!(got, encoded(&records));
    }
    assert_eq!(open(dir.path()).unwrap().meta(), &meta());
}

#[test]
fn frames_keep_their_source_place() {
    use xpuprof_sdk::model::{FrameDef, FrameId, FrameKind, ModuleId, StrId};
    let dir = tempfile::tempdir().unwrap();
    let mut records = sample::session();
    let place = |id, file, line, start| {
        let f = FrameDef::default().id(FrameId(id)).kind(FrameKind::FileOffset).module(ModuleId(1));
        Record::Frame(f.address(0x77).name(StrId(8)).file(StrId(file)).line(line).start_line(start))
    };
    let at = records.iter().position(|r| matches!(r, Record::Stack(_))).unwrap();
    records.insert(at, place(900, 5, 307, 290));
    records.insert(at, place(901, 6, 12, 0));
    write(dir.path(), &records, 4);
    let (got, _, damage) = replay(dir.path()).unwrap();
    assert!(damage.is_none(), "{damage:?}");
    assert_eq!(codec::decode_all(&got).unwrap(), records);
}

#[test]
fn long_run_replays_exactly_and_stays_under_32_bytes_per_launch() {
    let n = 100_000;
    let dir = tempfile::tempdir().unwrap();
    let records = sample::launches(n);
    let bytes = write(dir.path(), &records, 1000);
    let per_launch = bytes as f64 / n as f64;
    eprintln!("archive: {bytes} bytes for {n} launches (API call + launch site + kernel): {per_launch:.2} bytes/launch");
    assert!(per_launch <= 32.0, "{per_launch:.2} bytes per launch");
    let (got, count, damage) = replay(dir.path()).unwrap();
    assert!(damage.is_none(), "{damage:?}");
    assert_eq!(count, records.len() as u64);
    assert!(got == encoded(&records), "replayed bytes differ");
}

#[test]
fn missing_archive_says_what_to_do() {
    let dir = tempfile::tempdir().unwrap();
    let err = open(dir.path()).unwrap_err().to_string();
    assert!(err.contains("--sink archive"), "{err}");
}

#[test]
fn a_crash_leaves_the_flushed_prefix_readable() {
    let dir = tempfile::tempdir().unwrap();
    let records = sample::launches(30_000);
    let mut w = Writer::create(&dir.path().join("archive"), &meta()).unwrap();
    for b in records.chunks(1000) {
        for r in b {
            w.write(r).unwrap();
        }
        w.end_batch().unwrap();
    }
    drop(w); // no finish: the process died
    let (got, n, damage) = replay(dir.path()).unwrap();
    let err = damage.expect("a cut-short archive is reported").to_string();
    assert!(err.contains("cut short") && err.contains("trace.xpa"), "{err}");
    assert!(n > 0 && n < records.len() as u64, "{n}");
    // Every chunk written before the crash is delivered (a location's last chunk may have gone
    // out before another's, so some records in between are missing).
    let got = codec::decode_all(&got).unwrap();
    assert!(is_subsequence(&got, &records));
    assert!(got.len() as u64 == n && n >= 29_000 - 1000, "{n}");
}

/// True when `got` is `all` with some records left out, in the same order.
fn is_subsequence(got: &[Record], all: &[Record]) -> bool {
    let mut it = all.iter();
    got.iter().all(|g| it.any(|a| a == g))
}

/// Replays `bytes`, a damaged copy of `archive` (the archive of `original`) whose checksums
/// were not repaired: the records delivered must be original ones in their order (damaged
/// chunks left out, the intact ones after them still replayed), and any change must be
/// reported with the file and a byte offset inside it.
fn damaged_replay(bytes: &[u8], archive: &[u8], original: &[Record]) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("trace.xpa");
    std::fs::write(&file, bytes).unwrap();
    match replay(&file) {
        Err(e) => assert!(e.to_string().contains("trace.xpa"), "{e}"),
        Ok((got, n, damage)) => {
            let got = codec::decode_all(&got).unwrap();
            assert_eq!(got.len() as u64, n);
            assert!(is_subsequence(&got, original), "delivered records are not original ones in order");
            if bytes != archive {
                let e = damage.expect("damage must be reported");
                assert!(e.to_string().contains("trace.xpa"), "{e}");
                assert!(
                    matches!(e, ArchiveError::Corrupt { offset, .. } if offset <= bytes.len() as u64),
                    "{e}"
                );
            }
        }
    }
}

fn archive_bytes(records: &[Record]) -> Vec<u8> {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), records, 4);
    std::fs::read(dir.path().join("archive/trace.xpa")).unwrap()
}

#[test]
fn every_truncation_delivers_what_is_intact_and_reports_where() {
    let records = sample::session();
    let bytes = archive_bytes(&records);
    for cut in 0..bytes.len() {
        damaged_replay(&bytes[..cut], &bytes, &records);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn corrupted_bytes_never_panic(flips in proptest::collection::vec((any::<prop::sample::Index>(), 1u8..=255), 1..6)) {
        let records = sample::session();
        let archive = archive_bytes(&records);
        let mut bytes = archive.clone();
        for (at, x) in flips {
            let i = at.index(bytes.len());
            bytes[i] ^= x;
        }
        damaged_replay(&bytes, &archive, &records);
    }

    /// A run long enough for several chunks per location, damaged and cut anywhere.
    #[test]
    fn damaged_multi_chunk_archives_deliver_every_intact_chunk(
        at in any::<prop::sample::Index>(),
        x in 1u8..=255,
        cut in any::<prop::sample::Index>(),
    ) {
        let records = sample::launches(12_000);
        let whole = big_archive(&records);
        let mut bytes = whole.clone();
        let i = at.index(bytes.len());
        bytes[i] ^= x;
        damaged_replay(&bytes, whole, &records);
        damaged_replay(&whole[..cut.index(whole.len())], whole, &records);
    }
}

/// The archive of `records` written in batches of 1000, built once per test binary.
fn big_archive(records: &[Record]) -> &'static Vec<u8> {
    static BYTES: std::sync::OnceLock<Vec<u8>> = std::sync::OnceLock::new();
    BYTES.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), records, 1000);
        std::fs::read(dir.path().join("archive/trace.xpa")).unwrap()
    })
}

#[test]
fn extreme_field_values_survive() {
    use xpuprof_sdk::model::*;
    let mut records = sample::session();
    records.push(Record::ApiCall(
        ApiCall::default()
            .pid(u32::MAX)
            .start(u64::MAX)
            .end(3)
            .name(StrId(u32::MAX))
            .correlation(Some(Correlation { backend: u32::MAX, id: u64::MAX }))
            .external(Some(ExternalId { kind: 7, id: u64::MAX - 1 }))
            .result(i64::MIN),
    ));
    let mut op = match &records.iter().rev().find(|r| matches!(r, Record::DeviceOp(_))) {
        Some(Record::DeviceOp(op)) => op.clone(),
        _ => unreachable!(),
    };
    op.kind = DeviceOpKind::Other;
    op.copy = CopyKind::PeerToPeer;
    op.bytes = u64::MAX;
    op.clock = ClockDomain(9);
    op.correlation = None;
    op.graph = Some(GraphInfo::default().graph(u64::MAX).node(0));
    records.push(Record::DeviceOp(op));
    records
        .push(Record::ClockSync(ClockSync::default().domain(ClockDomain(2)).source_time(5).session_time(6)));
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), &records, 10);
    let (got, _, damage) = replay(dir.path()).unwrap();
    assert!(damage.is_none(), "{damage:?}");
    // What a sink would have received is the codec round trip of these records.
    assert!(got == encoded(&records), "replayed bytes differ");
}
