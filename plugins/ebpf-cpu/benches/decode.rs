//! Host-side cost of one ring-buffer record: decode, unwind the copied user stack with the
//! binaries' CFI (`xpuprof_unwind::remote`), normalise its frames against this process's maps,
//! intern, encode the `CpuSample`. The record is a real one: this benchmark's own registers and
//! 16 KiB of its stack, as the BPF program copies them. No root needed.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use xpuprof_plugin_ebpf::decode::{StackEvent, EV_SAMPLE, MAX_KSTACK};
use xpuprof_plugin_ebpf::handler::Handler;
use xpuprof_plugin_ebpf::python::PyStack;
use xpuprof_sdk::{Emitter, Logger};
use xpuprof_unwind::Registers;

/// Bytes of user stack in the record (the default `ustack_copy_bytes`).
const COPY: usize = 16384;

/// A sample of this thread: its registers here and the stack above them, as one 8-byte aligned
/// ring-buffer record (header, then the copy).
#[inline(never)]
fn record_here(depth: u32) -> Vec<u64> {
    if depth > 0 {
        return std::hint::black_box(record_here(depth - 1));
    }
    let regs = Registers::here();
    let hdr = std::mem::size_of::<StackEvent>();
    let mut words = vec![0u64; (hdr + COPY) / 8];
    let event = StackEvent {
        kind: EV_SAMPLE,
        pid: std::process::id(),
        tid: std::process::id(),
        backend: 0,
        time: xpuprof_sdk::clock::now_ns(),
        weight: 10_101_010,
        correlation: 0,
        cookie: 0,
        user_ip: regs.ip,
        user_sp: regs.sp,
        user_bp: regs.bp,
        flags: 0,
        ustack_bytes: COPY as i32,
        kstack_bytes: 0,
        pad: 0,
        comm: *b"bench\0\0\0\0\0\0\0\0\0\0\0",
        kstack: [0; MAX_KSTACK],
        py: PyStack::default(),
    };
    // SAFETY: `words` is larger than a StackEvent and 8-byte aligned, as StackEvent needs.
    unsafe { std::ptr::write(words.as_mut_ptr().cast::<StackEvent>(), event) };
    // As BPF does: at most COPY bytes, not past the end of the stack's mapping.
    let len = (mapping_end(regs.sp) - regs.sp).min(COPY as u64) as usize;
    // SAFETY: `[sp, sp + len)` lies in this thread's stack mapping, below its end.
    let stack = unsafe { std::slice::from_raw_parts(regs.sp as *const u8, len) };
    // SAFETY: viewing the initialised words as bytes over the same memory.
    let bytes = unsafe { std::slice::from_raw_parts_mut(words.as_mut_ptr().cast::<u8>(), words.len() * 8) };
    bytes[hdr..hdr + len].copy_from_slice(stack);
    let at = std::mem::offset_of!(StackEvent, ustack_bytes);
    bytes[at..at + 4].copy_from_slice(&(len as i32).to_ne_bytes());
    words.truncate((hdr + len).div_ceil(8));
    words
}

/// The end of this process's mapping that contains `addr` (`/proc/self/maps`).
fn mapping_end(addr: u64) -> u64 {
    let maps = std::fs::read_to_string("/proc/self/maps").expect("read /proc/self/maps");
    maps.lines()
        .filter_map(|l| {
            let (s, e) = l.split_whitespace().next()?.split_once('-')?;
            Some((u64::from_str_radix(s, 16).ok()?, u64::from_str_radix(e, 16).ok()?))
        })
        .find(|&(s, e)| s <= addr && addr < e)
        .map_or(addr, |(_, e)| e)
}

fn handle(c: &mut Criterion) {
    let words = record_here(20);
    // SAFETY: viewing initialised u64s as bytes over the same memory.
    let record = unsafe { std::slice::from_raw_parts(words.as_ptr().cast::<u8>(), words.len() * 8) };
    let mut h =
        Handler::new(Emitter::detached(), Logger::stderr(), std::process::id(), &[], Vec::new(), false);
    let mut g = c.benchmark_group("handler");
    g.throughput(Throughput::Elements(1));
    let mut n = 0u64;
    g.bench_function("sample_16k_stack_copy", |b| {
        b.iter(|| {
            h.handle(record);
            n += 1;
            if n % 100_000 == 0 {
                h.emitter.take_buffer();
            }
        })
    });
    g.finish();
    let s = h.stack_stats();
    eprintln!("walks cut: {:?}, at the depth limit: {}", s.cut, s.max_depth);
}

criterion_group!(benches, handle);
criterion_main!(benches);
