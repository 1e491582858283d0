//! The launch-stack walk: frame pointers, bounded by the calling thread's stack.
//!
//! Runs on application threads inside the CUPTI API-entry callback, so it must be cheap: no
//! allocation, no locks, a few nanoseconds per frame. Every frame pointer is checked against the
//! thread's stack bounds (`[sp, stack top)`) and must grow monotonically, so a frame chain broken
//! by code without frame pointers ends the walk instead of reading wild memory.

/// The stack bounds of the calling thread: `(lowest, highest)` address.
pub fn thread_stack_bounds() -> (usize, usize) {
    // SAFETY: `attr` is initialised by pthread_getattr_np before use and destroyed after; the
    // out-pointers are valid locals.
    unsafe {
        let mut attr: libc::pthread_attr_t = std::mem::zeroed();
        if libc::pthread_getattr_np(libc::pthread_self(), &mut attr) != 0 {
            return (0, 0);
        }
        let mut addr: *mut libc::c_void = std::ptr::null_mut();
        let mut size: libc::size_t = 0;
        let ok = libc::pthread_attr_getstack(&attr, &mut addr, &mut size) == 0;
        libc::pthread_attr_destroy(&mut attr);
        if ok {
            (addr as usize, addr as usize + size)
        } else {
            (0, 0)
        }
    }
}

/// The caller's frame pointer and stack pointer registers.
#[inline(always)]
pub fn registers() -> (usize, usize) {
    let fp: usize;
    let sp: usize;
    #[cfg(target_arch = "x86_64")]
    // SAFETY: reads two registers into locals; no memory is touched.
    unsafe {
        std::arch::asm!("mov {fp}, rbp", "mov {sp}, rsp", fp = out(reg) fp, sp = out(reg) sp, options(nomem, nostack, preserves_flags));
    }
    #[cfg(target_arch = "aarch64")]
    // SAFETY: reads two registers into locals; no memory is touched.
    unsafe {
        std::arch::asm!("mov {fp}, x29", "mov {sp}, sp", fp = out(reg) fp, sp = out(reg) sp, options(nomem, nostack, preserves_flags));
    }
    (fp, sp)
}

/// Calls the correlation trampoline `xpuprof_agent_launch(backend, id)` with the frame pointer
/// register set to `fp`, the frame the agent's own walk starts from. The eBPF source's uprobe
/// unwinds from the registers at the trampoline's entry; with `rbp = fp` its walk starts where
/// the agent's does, whatever this Rust code (built without frame pointers) kept in `rbp`.
#[inline(always)]
pub fn call_trampoline(fp: usize, backend: u32, id: u64) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: rbp is saved and restored around the call; the stack stays 16-byte aligned at the
    // call (push + sub 8); the callee is an `extern "C" fn(u32, u64)` that touches no memory of
    // ours, and every register the C ABI lets it clobber is declared clobbered.
    unsafe {
        std::arch::asm!(
            "push rbp",
            "mov rbp, {fp}",
            "sub rsp, 8",
            "call {f}",
            "add rsp, 8",
            "pop rbp",
            fp = in(reg) fp,
            f = sym crate::xpuprof_agent_launch,
            in("edi") backend,
            in("rsi") id,
            clobber_abi("C"),
        );
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = fp;
        crate::xpuprof_agent_launch(backend, id);
    }
}

/// Walks the frame-pointer chain from `fp`, writing return addresses into `out`.
///
/// Only addresses inside `[lo, hi)` are read (`lo` is at most the current stack pointer, so the
/// memory is mapped). Returns the number of frames written.
pub fn walk(mut fp: usize, lo: usize, hi: usize, out: &mut [u64]) -> usize {
    let mut n = 0;
    while n < out.len() {
        if fp < lo || fp % 8 != 0 || fp.saturating_add(16) > hi {
            break;
        }
        // SAFETY: `fp .. fp + 16` lies inside the live part of this thread's stack (checked above).
        let (next, ra) = unsafe { (*(fp as *const usize), *((fp + 8) as *const usize)) };
        if ra < 0x1000 {
            break;
        }
        out[n] = ra as u64;
        n += 1;
        if next <= fp {
            break;
        }
        fp = next;
    }
    n
}

/// Mixes a stack into a 64-bit key (distinct stacks collide with negligible probability).
pub fn hash(frames: &[u64]) -> u64 {
    let mut h: u64 = 0x9E37_79B9_7F4A_7C15 ^ frames.len() as u64;
    for &f in frames {
        h = (h ^ f).wrapping_mul(0xFF51_AFD7_ED55_8CCD);
        h ^= h >> 32;
    }
    h | 1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn walks_a_synthetic_chain_and_stops_at_bounds() {
        // Three frames: [next fp, return address] pairs laid out upwards.
        let mut stack = [0usize; 16];
        let base = stack.as_ptr() as usize;
        let at = |i: usize| base + i * 8;
        stack[0] = at(4);
        stack[1] = 0x40_1000;
        stack[4] = at(8);
        stack[5] = 0x40_2000;
        stack[8] = 0; // chain end: next < fp
        stack[9] = 0x40_3000;
        std::hint::black_box(&mut stack);
        let mut out = [0u64; 8];
        let n = walk(at(0), base, base + 16 * 8, &mut out);
        assert_eq!(&out[..n], &[0x40_1000, 0x40_2000, 0x40_3000]);
        let n = walk(at(0), base, at(5), &mut out);
        assert_eq!(n, 1, "a frame past the stack top is not read");
        assert_eq!(walk(at(0) + 3, base, base + 128, &mut out), 0, "misaligned frame pointer");
    }

    #[test]
    fn trampoline_call_restores_registers() {
        let (fp, _) = registers();
        let before = std::hint::black_box(0x1234_5678_u64);
        call_trampoline(fp, 1, 42);
        call_trampoline(0, 0, 0);
        assert_eq!(std::hint::black_box(before), 0x1234_5678);
        assert_eq!(registers().0, fp, "rbp is restored");
    }

    #[test]
    fn hash_separates_order_and_length() {
        assert_ne!(hash(&[1, 2]), hash(&[2, 1]));
        assert_ne!(hash(&[1]), hash(&[1, 0]));
        assert_eq!(hash(&[5, 6]), hash(&[5, 6]));
    }
}
