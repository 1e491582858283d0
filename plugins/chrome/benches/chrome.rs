//! Chrome sink throughput: writing a long run of launches as Trace Event JSON.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use xpuprof_archive::sample;
use xpuprof_plugin_chrome::{TraceOptions, TraceWriter};

fn bench(c: &mut Criterion) {
    let records = sample::launches(100_000);
    let mut g = c.benchmark_group("chrome");
    g.throughput(Throughput::Elements(records.len() as u64));
    g.sample_size(10);
    g.bench_function("write", |b| {
        b.iter(|| {
            let out = std::io::BufWriter::new(std::io::sink());
            let mut w = TraceWriter::new(out, TraceOptions { cpu_samples: true }).unwrap();
            for r in &records {
                w.record(r).unwrap();
            }
            w.bytes()
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
