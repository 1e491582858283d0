//! Damage inside an archive is skipped and counted, and the replay goes on; fuzzing of the
//! reader with raw and checksum-repaired mutations of real archives.

use std::path::Path;

use xpuprof_archive::mutate::{self, Rng};
use xpuprof_archive::ReplayStats;

use super::*;

/// Replays the archive file holding `bytes`; `Err` when it does not open.
fn replay_bytes(bytes: &[u8]) -> Result<(Vec<Record>, ReplayStats), ArchiveError> {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("trace.xpa");
    std::fs::write(&file, bytes).unwrap();
    replay_file(&file)
}

fn replay_file(file: &Path) -> Result<(Vec<Record>, ReplayStats), ArchiveError> {
    let mut reader = open(file)?;
    let mut got = Vec::new();
    let stats = reader.replay(&mut |b| {
        // Every batch handed to sinks decodes whole.
        got.extend(codec::decode_all(b).expect("a replayed batch holds only valid records"));
    })?;
    assert_eq!(got.len() as u64, stats.records);
    Ok((got, stats))
}

fn read_varint(b: &[u8], at: &mut usize) -> u64 {
    let (mut v, mut shift) = (0u64, 0);
    loop {
        let byte = b[*at];
        *at += 1;
        v |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return v;
        }
        shift += 7;
    }
}

#[test]
fn a_malformed_record_in_an_intact_chunk_is_skipped_and_counted() {
    let records = sample::session();
    let mut bytes = archive_bytes(&records);
    // The first record of the first chunk is a definition, stored raw: header byte (kind 0),
    // sequence delta, length, then its codec bytes `tag, len, payload`.
    let (at, _) = mutate::chunks(&bytes)[0];
    let mut i = at + 28;
    let header = bytes[i];
    assert_eq!(header & 0x0f, 0, "the first record is stored raw");
    i += 1;
    if header >> 4 == 0 {
        read_varint(&bytes, &mut i);
    }
    let raw_len = read_varint(&bytes, &mut i) as usize;
    assert!(raw_len < 0x7f && bytes[i + 1] < 0x7f);
    // Its codec length now claims more bytes than the record has; the chunk's checksum is
    // made valid again, so only the record decoder can notice.
    bytes[i + 1] = 0x7f;
    mutate::repair_checksums(&mut bytes);
    let (got, stats) = replay_bytes(&bytes).unwrap();
    assert_eq!(stats.skipped, 1, "exactly the bad record is skipped");
    assert_eq!(got.len(), records.len() - 1);
    assert!(is_subsequence(&got, &records));
    let e = stats.corruption.expect("the bad record is reported").to_string();
    assert!(e.contains("trace.xpa") && e.contains("not exactly one valid record"), "{e}");
}

#[test]
fn a_damaged_chunk_is_skipped_and_the_chunks_after_it_replay() {
    let records = sample::launches(12_000);
    let whole = big_archive(&records);
    let chunks = mutate::chunks(whole);
    assert!(chunks.len() > 4, "{} chunks", chunks.len());
    let (at, len) = chunks[chunks.len() / 2];
    let mut bytes = whole.clone();
    bytes[at + 28 + len / 2] ^= 0x55;
    let (got, stats) = replay_bytes(&bytes).unwrap();
    assert!(stats.skipped > 0);
    assert_eq!(stats.records + stats.skipped, records.len() as u64, "every record is delivered or counted");
    assert!(is_subsequence(&got, &records));
    assert_eq!(got.last(), records.last(), "the replay went on to the end");
    let e = stats.corruption.unwrap().to_string();
    assert!(e.contains(&format!("byte {at}")) && e.contains("checksum"), "{e}");
}

#[test]
fn a_damaged_chunk_header_is_stepped_over_to_the_next_intact_chunk() {
    let records = sample::launches(12_000);
    let whole = big_archive(&records);
    let (at, _) = mutate::chunks(whole)[2];
    let mut bytes = whole.clone();
    bytes[at + 20..at + 24].copy_from_slice(&u32::MAX.to_le_bytes()); // payload length
    let (got, stats) = replay_bytes(&bytes).unwrap();
    assert!(stats.skipped > 0);
    assert_eq!(stats.records + stats.skipped, records.len() as u64);
    assert_eq!(got.last(), records.last());
}

#[test]
fn junk_after_the_end_marker_is_reported() {
    let records = sample::session();
    let mut bytes = archive_bytes(&records);
    bytes.extend_from_slice(b"left over from an older, longer file");
    let (got, stats) = replay_bytes(&bytes).unwrap();
    assert_eq!(got, records);
    let e = stats.corruption.expect("junk is reported").to_string();
    assert!(e.contains("36 bytes of unknown data after the end marker"), "{e}");
}

#[test]
fn every_bit_of_the_file_header_and_its_copy_is_recovered_from() {
    let records = sample::session();
    let bytes = archive_bytes(&records);
    let region = mutate::header_region(&bytes);
    let meta_len = u32::from_le_bytes(bytes[12..16].try_into().unwrap()) as usize;
    assert_eq!(
        region,
        (16 + meta_len + 4) + (28 + 4 + meta_len),
        "the header and its copy chunk, as written"
    );
    for at in 0..region {
        for bit in 0..8 {
            let mut damaged = bytes.clone();
            damaged[at] ^= 1 << bit;
            let what = format!("bit {bit} of byte {at}");
            let dir = tempfile::tempdir().unwrap();
            let file = dir.path().join("trace.xpa");
            std::fs::write(&file, &damaged).unwrap();
            let reader = open(&file).unwrap_or_else(|e| panic!("{what}: {e}"));
            assert_eq!(reader.meta(), &meta(), "{what}: the session facts survive");
            let (got, stats) = replay_file(&file).unwrap_or_else(|e| panic!("{what}: {e}"));
            assert!(got == records, "{what}: {} of {} records replayed", got.len(), records.len());
            assert_eq!(stats.skipped, 0, "{what}");
            assert!(stats.damaged_places >= 1, "{what}: the damage is counted");
            match stats.corruption {
                Some(ArchiveError::Corrupt { offset, .. }) if offset as usize <= region => {}
                other => panic!("{what}: the damage must be reported inside the header: {other:?}"),
            }
        }
    }
}

/// The real archives the fuzzers start from: the sample session, a long run of launches, and
/// the frozen archive of the scripted source.
fn seeds() -> Vec<Vec<u8>> {
    let mut seeds = vec![archive_bytes(&sample::session()), big_archive(&sample::launches(12_000)).clone()];
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/model/archive/trace.xpa");
    seeds.push(std::fs::read(&fixture).unwrap_or_else(|e| panic!("{}: {e}", fixture.display())));
    seeds
}

/// Iterations per seed archive: `XPUPROF_FUZZ_ITERS`, default small enough for CI.
fn iterations(default: usize) -> usize {
    std::env::var("XPUPROF_FUZZ_ITERS").ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// Fuzzes the reader: each mutation must open with a clear error or replay without panicking,
/// hand out only valid records, and report damage.
fn fuzz(mutation: fn(&[u8], &mut Rng) -> Vec<u8>, seed: u64) {
    let seeds = seeds();
    let n = iterations(300);
    let mut rng = Rng::new(seed);
    for (k, original) in seeds.iter().enumerate() {
        let n = if original.len() > 100_000 { n / 10 } else { n };
        for it in 0..n {
            let bytes = mutation(original, &mut rng);
            let result = std::panic::catch_unwind(|| replay_bytes(&bytes));
            let Ok(result) = result else { panic!("seed archive {k}, iteration {it}: the reader panicked") };
            if let Ok((_, stats)) = result {
                if bytes != *original {
                    assert!(stats.corruption.is_some() || stats.skipped == 0, "seed {k}, iteration {it}");
                }
            }
        }
    }
}

#[test]
fn fuzz_raw_mutations_of_real_archives() {
    fuzz(mutate::raw, 1);
}

#[test]
fn fuzz_checksum_repaired_mutations_of_real_archives() {
    fuzz(mutate::repaired, 2);
}
