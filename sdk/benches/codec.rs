//! Batch codec throughput per record kind: encoding (what every source does per record) and
//! decoding (what the host and every sink do per record), on 10 000 records of one kind with
//! realistic, varying values (times advancing, ids cycling), so varints have their usual sizes.
//!
//! `cargo bench -p xpuprof-sdk --bench codec`; figures in docs/benchmarks.md.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use xpuprof_sdk::codec::{encode, Decoder};
use xpuprof_sdk::model::*;

const N: u64 = 10_000;

fn kernel(i: u64) -> Record {
    let t = 1_000_000_000 + i * 5_000;
    Record::DeviceOp(
        DeviceOp::default()
            .kind(DeviceOpKind::Kernel)
            .pid(4242)
            .device(DeviceId(1))
            .stream(StreamId(1 + (i % 4) as u32))
            .start(t)
            .end(t + 3_000 + i % 700)
            .name(StrId(10 + (i % 50) as u32))
            .correlation(Some(Correlation { backend: backend::CUDA, id: i + 1 }))
            .kernel(Some(KernelInfo::default().grid([256, 1, 1]).block([128, 1, 1]).registers(32))),
    )
}

fn copy(i: u64) -> Record {
    let t = 1_000_000_000 + i * 5_000;
    Record::DeviceOp(
        DeviceOp::default()
            .kind(DeviceOpKind::Memcpy)
            .pid(4242)
            .device(DeviceId(1))
            .stream(StreamId(1))
            .start(t)
            .end(t + 1_500)
            .bytes(1 << 20)
            .copy(CopyKind::HostToDevice)
            .dst_device(DeviceId(1))
            .correlation(Some(Correlation { backend: backend::CUDA, id: i + 1 })),
    )
}

fn api_call(i: u64) -> Record {
    let t = 1_000_000_000 + i * 5_000;
    Record::ApiCall(
        ApiCall::default()
            .pid(4242)
            .tid(4243)
            .start(t)
            .end(t + 2_100)
            .name(StrId(3))
            .kind(ApiKind::Launch)
            .correlation(Some(Correlation { backend: backend::CUDA, id: i + 1 })),
    )
}

fn launch_site(i: u64) -> Record {
    Record::LaunchSite(
        LaunchSite::default()
            .pid(4242)
            .tid(4243)
            .time(1_000_000_000 + i * 5_000)
            .correlation(Correlation { backend: backend::CUDA, id: i + 1 })
            .api(StrId(3))
            .stack(StackId(1 + (i % 200) as u32)),
    )
}

fn cpu_sample(i: u64) -> Record {
    Record::CpuSample(
        CpuSample::default()
            .pid(4242)
            .tid(4243 + (i % 8) as u32)
            .time(1_000_000_000 + i * 10_101)
            .weight(1)
            .stack(StackId(1 + (i % 5_000) as u32)),
    )
}

fn stack(i: u64) -> Record {
    let frames = (0..24).map(|f| FrameId(1 + ((i * 7 + f) % 3_000) as u32)).collect();
    Record::Stack(StackDef::new(StackId(1 + i as u32), frames))
}

fn string(i: u64) -> Record {
    Record::Str(StrDef::new(
        StrId(1 + i as u32),
        format!("void kernel_{i}<float, 128>(float const*, float*, int)"),
    ))
}

fn clock_sync(i: u64) -> Record {
    Record::ClockSync(ClockSync::new(
        ClockDomain(0x101),
        5_000_000 + i * 12_500,
        1_000_000_000 + i * 1_000_000,
    ))
}

/// Makes the `i`-th record of one kind.
type Make = fn(u64) -> Record;

/// The kinds measured, with how each record is made.
const KINDS: &[(&str, Make)] = &[
    ("kernel", kernel),
    ("memcpy", copy),
    ("api_call", api_call),
    ("launch_site", launch_site),
    ("cpu_sample", cpu_sample),
    ("stack_24_frames", stack),
    ("string", string),
    ("clock_sync", clock_sync),
];

fn bench(c: &mut Criterion) {
    let mut enc = c.benchmark_group("codec/encode");
    enc.throughput(Throughput::Elements(N));
    for (name, make) in KINDS {
        let records: Vec<Record> = (0..N).map(make).collect();
        let mut buf = Vec::with_capacity(1 << 20);
        enc.bench_with_input(BenchmarkId::from_parameter(name), &records, |b, records| {
            b.iter(|| {
                buf.clear();
                records.iter().for_each(|r| encode(r, &mut buf));
                buf.len()
            })
        });
    }
    enc.finish();
    let mut dec = c.benchmark_group("codec/decode");
    dec.throughput(Throughput::Elements(N));
    for (name, make) in KINDS {
        let mut buf = Vec::new();
        (0..N).map(make).for_each(|r| encode(&r, &mut buf));
        dec.bench_with_input(BenchmarkId::from_parameter(name), &buf, |b, buf| {
            b.iter(|| Decoder::new(buf).map(|r| r.map(|_| 1u64).unwrap_or(0)).sum::<u64>())
        });
    }
    dec.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
