//! Throughput of the summary sink on a launch-bound stream: per launch one API call, one launch
//! site and one kernel, over 50 kernel names and 8 threads (the budget of docs/architecture.md,
//! "Design principles": post-processing >= 1M launches/s on one core).

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use xpuprof_plugin_summary::config::SummaryConfig;
use xpuprof_plugin_summary::SummarySink;
use xpuprof_sdk::model::*;
use xpuprof_sdk::{Logger, SessionInfo};

const LAUNCHES: u64 = 100_000;

fn records() -> Vec<Record> {
    let mut r = vec![Record::Str(StrDef::default().id(StrId(1)).text("cudaLaunchKernel".into()))];
    for k in 0..50 {
        r.push(Record::Str(StrDef::default().id(StrId(10 + k)).text(format!("kernel_{k}"))));
    }
    let corr = |id| Correlation { backend: backend::CUDA, id };
    for i in 0..LAUNCHES {
        let (t, tid) = (1_000_000 + i * 2_000, 100 + (i % 8) as u32);
        r.push(Record::ApiCall(
            ApiCall::default()
                .pid(100)
                .tid(tid)
                .start(t)
                .end(t + 1_500 + i % 300)
                .name(StrId(1))
                .correlation(Some(corr(i))),
        ));
        r.push(Record::LaunchSite(
            LaunchSite::default()
                .pid(100)
                .tid(tid)
                .time(t)
                .correlation(corr(i))
                .api(StrId(1))
                .stack(StackId(1)),
        ));
        r.push(Record::DeviceOp(
            DeviceOp::default()
                .kind(DeviceOpKind::Kernel)
                .pid(100)
                .device(DeviceId(1))
                .stream(StreamId(1))
                .start(t + 5_000)
                .end(t + 5_000 + 1_000 + (i * 7919) % 900)
                .name(StrId(10 + (i % 50) as u32))
                .correlation(Some(corr(i)))
                .kernel(Some(KernelInfo::default().grid([64, 1, 1]).block([256, 1, 1]).registers(32)))
                .launch(Some(LaunchRef::default().tid(tid).stack(StackId(1)).api(StrId(1)).time(t))),
        ));
    }
    r
}

fn bench(c: &mut Criterion) {
    let recs = records();
    let mut g = c.benchmark_group("summary");
    g.throughput(Throughput::Elements(LAUNCHES));
    g.sample_size(10);
    g.bench_function("consume_launches", |b| {
        b.iter_batched(
            || SummarySink::new(SummaryConfig::default(), SessionInfo::default(), Logger::stderr()),
            |mut sink| {
                for batch in recs.chunks(4096) {
                    sink.add(batch);
                }
                sink.report()
            },
            BatchSize::LargeInput,
        )
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
