//! pprof sink throughput: aggregating a long run of launches and writing profile.pb.gz.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use xpuprof_archive::sample;
use xpuprof_plugin_pprof::{PprofSink, ProfileOptions};
use xpuprof_sdk::{SessionInfo, Sink};

fn bench(c: &mut Criterion) {
    let records = sample::launches(100_000);
    let dir = tempfile::tempdir().unwrap();
    let session = SessionInfo {
        output_dir: dir.path().to_owned(),
        command: vec![],
        sources: vec![],
        sinks: vec!["pprof".into()],
        start_time: 0,
        verbosity: 0,
        ..SessionInfo::default()
    };
    let mut g = c.benchmark_group("pprof");
    g.throughput(Throughput::Elements(records.len() as u64));
    g.sample_size(10);
    g.bench_function("aggregate_and_write", |b| {
        b.iter(|| {
            let mut sink = PprofSink::new(ProfileOptions::default(), &session).unwrap();
            sink.consume(&records).unwrap();
            sink.finish().unwrap()
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
