//! Decoder throughput on a synthetic stream of kernel records and launch sites.

use std::mem::offset_of;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use xpuprof_plugin_cupti::wire;
use xpuprof_plugin_cupti::Decoder;
use xpuprof_sdk::{Emitter, Logger};
use xpuprof_toolbox::agent_host::StreamDecoder;

fn stream(n: usize) -> Vec<u8> {
    let mut b = Vec::new();
    let at = wire::begin_message(&mut b, wire::MSG_HELLO);
    for v in [42u32, 130000, wire::PROTOCOL, wire::FLAG_MONOTONIC_TIMESTAMPS] {
        b.extend_from_slice(&v.to_le_bytes());
    }
    wire::end_message(&mut b, at);
    type Kernel = cupti_sys::CUpti_ActivityKernel10;
    let size = std::mem::size_of::<Kernel>();
    let (start, end, correlation) =
        (offset_of!(Kernel, start), offset_of!(Kernel, end), offset_of!(Kernel, correlationId));
    let at = wire::begin_message(&mut b, wire::MSG_RECORDS);
    b.extend_from_slice(&(n as u32).to_le_bytes());
    b.extend_from_slice(&0u32.to_le_bytes());
    for _ in 0..n {
        b.extend_from_slice(&(size as u16).to_le_bytes());
    }
    while b.len() % 8 != 0 {
        b.push(0);
    }
    for i in 0..n {
        let mut r = vec![0u8; size];
        r[..4].copy_from_slice(&10u32.to_le_bytes());
        r[start..start + 8].copy_from_slice(&(1000 + i as u64).to_le_bytes());
        r[end..end + 8].copy_from_slice(&(2000 + i as u64).to_le_bytes());
        r[correlation..correlation + 4].copy_from_slice(&(i as u32 + 1).to_le_bytes());
        b.extend_from_slice(&r);
    }
    wire::end_message(&mut b, at);
    b
}

fn bench(c: &mut Criterion) {
    let n = 10_000;
    let s = stream(n);
    let mut g = c.benchmark_group("cupti-decode");
    g.throughput(Throughput::Elements(n as u64));
    g.bench_function("kernel records", |bch| {
        bch.iter(|| {
            let mut d = Decoder::new(Logger::stderr());
            let mut e = Emitter::detached();
            d.feed(1, &s, &mut e);
            d.finish(&mut e);
            e.take_buffer().len()
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
