//! Archive write and read throughput, in records per second, on a long run of kernel launches.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use xpuprof_archive::{open, sample, Meta, Writer};

const LAUNCHES: usize = 100_000;

fn write(dir: &std::path::Path, records: &[xpuprof_sdk::model::Record]) -> u64 {
    let mut w = Writer::create(dir, &Meta::default()).unwrap();
    for batch in records.chunks(1024) {
        for r in batch {
            w.write(r).unwrap();
        }
        w.end_batch().unwrap();
    }
    w.finish().unwrap().bytes
}

/// Replays the archive in `dir`, as decoded records or re-encoded codec batches; returns how
/// many records (or bytes) came out.
fn read(dir: &std::path::Path, records: bool) -> usize {
    let mut reader = open(dir).unwrap();
    let mut n = 0usize;
    let stats = if records {
        reader.replay_records(&mut |batch| n += batch.len())
    } else {
        reader.replay(&mut |batch| n += batch.len())
    };
    assert!(stats.unwrap().corruption.is_none());
    n
}

fn bench(c: &mut Criterion) {
    let records = sample::launches(LAUNCHES);
    let dir = tempfile::tempdir().unwrap();
    let bytes = write(dir.path(), &records);
    eprintln!(
        "archive: {:.2} bytes per launch (API call + launch site + kernel)",
        bytes as f64 / LAUNCHES as f64
    );

    let mut g = c.benchmark_group("archive");
    g.throughput(Throughput::Elements(records.len() as u64));
    g.sample_size(10);
    g.bench_function("write", |b| b.iter(|| write(dir.path(), &records)));
    g.bench_function("read_records", |b| b.iter(|| read(dir.path(), true)));
    g.bench_function("read_and_encode", |b| b.iter(|| read(dir.path(), false)));
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
