//! Host-side cost of one ring-buffer record: decode, unwind the copied user stack with the
//! binaries' CFI (`xpuprof_unwind::remote`), normalise its frames against this process's maps,
//! intern, encode the `CpuSample`. The record is a real one: this benchmark's own registers and
//! 16 KiB of its stack, as the BPF program copies them. No root needed.
//!
//! `python/merge_15_frames`: what a sample of a Python process adds — its 15 Python frames (read
//! from a live CPython 3.11 blocked 15 calls deep, as BPF hands them: code object + instruction
//! pointer) resolved to labels through the caches, merged into a 40-frame native stack in
//! place of its eval-loop frame, and interned as named frames.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use xpuprof_plugin_ebpf::{Handler, Interpreters, PyStack, StackEvent};
use xpuprof_sdk::{Emitter, Logger};
use xpuprof_unwind::Registers;

/// Bytes of user stack in the record: 16 KiB of this thread's stack (the walk reads only the
/// words it needs, so a larger `ustack_copy_bytes` adds nothing here; a 64 KiB copy would read
/// past this thread's stack top).
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
    let pid = std::process::id();
    let event = StackEvent {
        weight: 10_101_010,
        comm: *b"bench\0\0\0\0\0\0\0\0\0\0\0",
        ..StackEvent::sample(pid, pid, &regs, COPY)
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

/// The interpreter the Python case runs (CI's; the case is skipped with a message without it).
const PYTHON: &str = "/usr/bin/python3.11";
/// Python frames of the blocked script: 14 nested calls under the module's frame.
const DEPTH: usize = 15;

fn python_merge(c: &mut Criterion) {
    use std::io::{BufRead, BufReader, Write};
    use std::process::{Command, Stdio};
    use xpuprof_python::chain::{self, RawFrame};
    use xpuprof_python::cpython_offsets::Frames;
    use xpuprof_python::target::Target;

    assert!(
        std::path::Path::new(PYTHON).exists(),
        "python/merge_15_frames needs {PYTHON}: install it with scripts/install-deps.sh"
    );
    let script = format!(
        "import sys\ndef f(n):\n    if n == 0:\n        print('ready', flush=True)\n        sys.stdin.readline()\n    else:\n        f(n - 1)\nf({})\n",
        DEPTH - 2
    );
    let mut child = Command::new(PYTHON)
        .args(["-c", &script])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("start python");
    let mut line = String::new();
    BufReader::new(child.stdout.as_mut().unwrap()).read_line(&mut line).unwrap();
    let pid = child.id();
    let maps = std::fs::read_to_string(format!("/proc/{pid}/maps")).unwrap();
    let paths = maps.lines().filter_map(|l| l.split_whitespace().nth(5));
    let mut py = Interpreters::default();
    py.discover(pid, 1, paths).expect("CPython found in the child");
    // The frames as BPF reads them: code object and instruction pointer, entry marked.
    let target = Target::find(pid).unwrap().unwrap();
    let state = target.threads().unwrap()[0].state;
    let mut raw = [RawFrame::default(); 64];
    let mem = xpuprof_python::memory::ProcessMemory { pid };
    let (n, _) = chain::walk(&mem, target.layout, state, Some(target.code_type), &mut raw).unwrap();
    assert!(matches!(target.layout.frames, Frames::Interpreter { .. }), "3.11 or later");
    let mut stack = PyStack::default();
    for (i, f) in raw[..n].iter().enumerate() {
        stack.code[i] = f.code;
        let identity = xpuprof_python::code::identity(&mem, target.layout, f.code).unwrap();
        stack.instr[i] =
            f.offset.min(u64::from(u32::MAX)) | (u64::from(identity) << 32) | (u64::from(f.entry) << 63);
    }
    stack.frames = n as u32;
    // 40 native frames, the interpreter's eval loop 25 frames from the root, 256 stack bytes
    // each; the eval-loop call's marker on the C stack inside its frame.
    let native: Vec<u64> =
        (0..40u64).map(|i| if i == 15 { target.eval.0 + 16 } else { 0x40_0000 + i * 64 }).collect();
    let sp: Vec<u64> = (0..40u64).map(|i| 0x7ff0_0000 + i * 256).collect();
    for (f, mark) in raw[..n].iter().zip(stack.cstack.iter_mut()) {
        if f.entry {
            *mark = sp[15] + 64;
        }
    }
    let (mut int, mut em) = (xpuprof_toolbox::Interner::default(), Emitter::detached());
    let mut addrs = Vec::with_capacity(64);
    let mut frames = Vec::with_capacity(64);
    let mut g = c.benchmark_group("python");
    g.throughput(Throughput::Elements(1));
    g.bench_function("merge_15_frames", |b| {
        b.iter(|| {
            addrs.clear();
            addrs.extend_from_slice(&native);
            py.merge_into(pid, &stack, &mut addrs, &sp);
            frames.clear();
            for &a in &addrs {
                if xpuprof_python::is_python_frame(a) {
                    frames.push(py.named_frame(a, &mut int, &mut em));
                }
            }
            std::hint::black_box(&frames);
        })
    });
    g.finish();
    assert_eq!(addrs.len(), 40 - 1 + n, "{n} Python frames in place of the eval-loop frame");
    let _ = child.stdin.take().map(|mut s| s.write_all(b"\n"));
    let _ = child.wait();
}

criterion_group!(benches, handle, python_merge);
criterion_main!(benches);
