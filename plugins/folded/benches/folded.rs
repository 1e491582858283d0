//! Folded sink throughput: aggregating a long run of launches and rendering the lines.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use xpuprof_archive::sample;
use xpuprof_plugin_folded::{FoldedBuilder, FoldedOptions, View};

fn bench(c: &mut Criterion) {
    let records = sample::launches(100_000);
    let mut g = c.benchmark_group("folded");
    g.throughput(Throughput::Elements(records.len() as u64));
    g.sample_size(10);
    g.bench_function("build_and_write", |b| {
        b.iter(|| {
            let mut fb = FoldedBuilder::new(FoldedOptions::default());
            for r in &records {
                fb.add(r);
            }
            let mut out = Vec::new();
            fb.write(View::All, &mut out).unwrap();
            out.len()
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
