//! The host's stages on a long run of kernel launches (API call + launch site + kernel per
//! launch), in records per second: decoding a source's batches (returned one by one, or onto a
//! batch vector as the pipeline does), the whole pipeline (decode, renumber, clocks, correlate;
//! symbolizer off), the correlator alone, and what each sink's input costs, lent
//! (`consume_records`) or encoded and decoded again (`consume`).

use std::time::Instant;

use criterion::{black_box, criterion_group, criterion_main, Criterion, Throughput};
use xpuprof_archive::sample;
use xpuprof_core::pipeline::batch::{RecordBatch, BATCH_RECORDS};
use xpuprof_core::pipeline::correlator::Correlator;
use xpuprof_core::pipeline::Pipeline;
use xpuprof_sdk::codec::Decoder;
use xpuprof_sdk::model::Record;

const LAUNCHES: usize = 100_000;
/// A source's batches are at most this big (the SDK emitter's flush size).
const SOURCE_BATCH: usize = 64 * 1024;

fn bench(c: &mut Criterion) {
    let batches = sample::source_batches(LAUNCHES, SOURCE_BATCH);
    let records: Vec<Record> = batches.iter().flat_map(|b| Decoder::new(b).map(Result::unwrap)).collect();
    let mut g = c.benchmark_group("pipeline");
    g.throughput(Throughput::Elements(records.len() as u64));
    g.sample_size(10);

    g.bench_function("decode", |b| {
        b.iter(|| {
            let mut n = 0usize;
            for batch in &batches {
                for r in Decoder::new(batch) {
                    n += usize::from(black_box(r).is_ok());
                }
            }
            n
        })
    });

    // What the pipeline does since each record is decoded in its place in the output batch
    // (`Decoder::next_onto`), beside the iterator above (each record returned, then moved).
    g.bench_function("decode_onto_batch", |b| {
        b.iter(|| {
            let mut out: Vec<Record> = Vec::with_capacity(BATCH_RECORDS + 64);
            let mut n = 0usize;
            for batch in &batches {
                let mut d = Decoder::new(batch);
                while let Some(r) = d.next_onto(&mut out) {
                    n += usize::from(r.is_ok());
                    if out.len() >= BATCH_RECORDS {
                        black_box(&out);
                        out.clear();
                    }
                }
            }
            n
        })
    });

    g.bench_function("decode_renumber_correlate", |b| {
        b.iter(|| {
            let mut p = Pipeline::new(1, false);
            let mut n = 0usize;
            let mut sink = |out: &mut Vec<Record>, _| {
                n += black_box(&*out).len();
                out.clear();
            };
            for batch in &batches {
                p.push(0, batch, &mut sink);
            }
            p.finish(&mut sink);
            n
        })
    });

    g.bench_function("correlate", |b| {
        b.iter(|| {
            let mut cor = Correlator::default();
            let now = Instant::now();
            let mut joined = 0usize;
            for r in &records {
                match r {
                    Record::ApiCall(call) => joined += cor.api_call(call, now).len(),
                    Record::LaunchSite(s) => joined += cor.launch_site(s, 0, now).0.len(),
                    Record::DeviceOp(op) => joined += usize::from(cor.device_op(op.clone(), now).is_some()),
                    _ => {}
                }
            }
            joined
        })
    });
    g.finish();

    // What two sinks' input costs per batch of the pipeline's output, by path.
    let out = sample::launches(LAUNCHES);
    let mut g = c.benchmark_group("sink_input_two_sinks");
    g.throughput(Throughput::Elements(out.len() as u64));
    g.sample_size(10);
    g.bench_function("lent", |b| {
        b.iter(|| {
            let mut n = 0usize;
            for chunk in out.chunks(BATCH_RECORDS) {
                let batch = RecordBatch::new(chunk.to_vec());
                for _sink in 0..2 {
                    n += black_box(batch.records()).len();
                }
            }
            n
        })
    });
    g.bench_function("encoded_and_decoded_per_sink", |b| {
        b.iter(|| {
            let mut n = 0usize;
            let mut scratch: Vec<Record> = Vec::new();
            for chunk in out.chunks(BATCH_RECORDS) {
                let batch = RecordBatch::new(chunk.to_vec());
                for _sink in 0..2 {
                    scratch.clear();
                    scratch.extend(Decoder::new(batch.encoded()).map(Result::unwrap));
                    n += black_box(&scratch).len();
                }
            }
            n
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
