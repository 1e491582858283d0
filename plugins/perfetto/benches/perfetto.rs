//! Perfetto sink throughput and size: writing a long run of launches (per launch: an API call,
//! its launch site and its kernel, so three records) as a Perfetto trace. Prints the bytes per
//! launch of each configuration next to the throughput.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use xpuprof_archive::sample;
use xpuprof_plugin_perfetto::{config, TraceOptions, TraceWriter};

const LAUNCHES: usize = 100_000;

fn write(records: &[xpuprof_sdk::model::Record], opts: &TraceOptions) -> u64 {
    let mut w = TraceWriter::new(std::io::sink(), opts.clone());
    for r in records {
        w.record(r).unwrap();
    }
    w.finish().unwrap().1.file_bytes
}

fn bench(c: &mut Criterion) {
    let records = sample::launches(LAUNCHES);
    let mut g = c.benchmark_group("perfetto");
    g.throughput(Throughput::Elements(records.len() as u64));
    g.sample_size(10);
    let mut plain = config::defaults();
    plain.output.compress = false;
    let mut bare = config::defaults();
    bare.args = false;
    for (name, opts) in
        [("write", config::defaults()), ("write_uncompressed", plain), ("write_no_args", bare)]
    {
        let bytes = write(&records, &opts);
        eprintln!("perfetto/{name}: {:.1} bytes per launch", bytes as f64 / LAUNCHES as f64);
        g.bench_function(name, |b| b.iter(|| write(&records, &opts)));
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
