//! The calling thread's stack, captured at a launch: the registers the walk starts from, the
//! stack bounds it may read, and the walk itself.
//!
//! [`walk`] is the one entry point the launch-site path calls. Today it follows frame pointers
//! ([`fp`]); unwinding with the binaries' CFI tables (`.eh_frame`, with framehop) where the
//! frame-pointer chain breaks goes behind the same function, so the callers do not change:
//! [`Registers`] then carries the program counter too.

pub mod fp;

/// The registers a walk starts from, read at the entry of the agent's callback.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Registers {
    /// Frame pointer (`rbp` / `x29`).
    pub fp: usize,
    /// Stack pointer.
    pub sp: usize,
}

/// The part of the thread's stack a walk may read: `[lo, hi)`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Bounds {
    /// Lowest readable address (at most the stack pointer at the walk's start).
    pub lo: usize,
    /// One past the highest address (the stack's top).
    pub hi: usize,
}

/// Writes the return addresses of the calling thread's stack, innermost first, into `out`;
/// returns how many were written. Reads only inside `bounds` (clamped below by `regs.sp`).
#[inline]
pub fn walk(regs: Registers, bounds: Bounds, out: &mut [u64]) -> usize {
    fp::walk(regs.fp, bounds.lo.max(regs.sp), bounds.hi, out)
}

/// The stack bounds of the calling thread.
pub fn thread_bounds() -> Bounds {
    // SAFETY: `attr` is initialised by pthread_getattr_np before use and destroyed after; the
    // out-pointers are valid locals.
    unsafe {
        let mut attr: libc::pthread_attr_t = std::mem::zeroed();
        if libc::pthread_getattr_np(libc::pthread_self(), &mut attr) != 0 {
            return Bounds::default();
        }
        let mut addr: *mut libc::c_void = std::ptr::null_mut();
        let mut size: libc::size_t = 0;
        let ok = libc::pthread_attr_getstack(&attr, &mut addr, &mut size) == 0;
        libc::pthread_attr_destroy(&mut attr);
        if ok {
            Bounds { lo: addr as usize, hi: addr as usize + size }
        } else {
            Bounds::default()
        }
    }
}

/// The caller's frame pointer and stack pointer registers.
#[inline(always)]
pub fn registers() -> Registers {
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
    Registers { fp, sp }
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
    fn hash_separates_order_and_length() {
        assert_ne!(hash(&[1, 2]), hash(&[2, 1]));
        assert_ne!(hash(&[1]), hash(&[1, 0]));
        assert_eq!(hash(&[5, 6]), hash(&[5, 6]));
    }
}
