//! Host-side cost of one ring-buffer record: decode, normalise 24 user frames against this
//! process's maps, intern, encode the `CpuSample`. No root needed.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use xpuprof_plugin_ebpf::decode::{StackEvent, EV_SAMPLE, MAX_KSTACK, MAX_USTACK, SP_WORDS};
use xpuprof_plugin_ebpf::handler::Handler;
use xpuprof_sdk::{Emitter, Logger};

/// A sample of this process whose frames are addresses inside this benchmark's own code.
fn sample_event(frames: usize) -> StackEvent {
    let base = sample_event as fn(usize) -> StackEvent as usize as u64;
    let mut ustack = [0u64; MAX_USTACK];
    for (i, f) in ustack.iter_mut().take(frames).enumerate() {
        *f = base + 16 * i as u64 + 1;
    }
    StackEvent {
        kind: EV_SAMPLE,
        pid: std::process::id(),
        tid: std::process::id(),
        backend: 0,
        time: xpuprof_sdk::clock::now_ns(),
        weight: 10_101_010,
        correlation: 0,
        cookie: 0,
        user_sp: 0,
        user_bp: 0,
        ustack_bytes: (frames * 8) as i32,
        kstack_bytes: 0,
        comm: *b"bench\0\0\0\0\0\0\0\0\0\0\0",
        sp_words: [0; SP_WORDS],
        ustack,
        kstack: [0; MAX_KSTACK],
    }
}

fn handle(c: &mut Criterion) {
    let event = sample_event(24);
    // Ring-buffer records are 8-byte aligned; so is this copy.
    let mut words = vec![0u64; std::mem::size_of::<StackEvent>() / 8];
    // SAFETY: `words` is exactly as large as a StackEvent and 8-byte aligned, as StackEvent needs.
    unsafe { std::ptr::write(words.as_mut_ptr().cast::<StackEvent>(), event) };
    // SAFETY: viewing initialised u64s as bytes over the same memory.
    let record = unsafe { std::slice::from_raw_parts(words.as_ptr().cast::<u8>(), words.len() * 8) };
    let mut h = Handler::new(Emitter::detached(), Logger::stderr(), std::process::id(), &[], Vec::new());
    let mut g = c.benchmark_group("handler");
    g.throughput(Throughput::Elements(1));
    let mut n = 0u64;
    g.bench_function("sample_24_frames", |b| {
        b.iter(|| {
            h.handle(record);
            n += 1;
            if n % 100_000 == 0 {
                h.emitter.take_buffer();
            }
        })
    });
    g.finish();
}

criterion_group!(benches, handle);
criterion_main!(benches);
