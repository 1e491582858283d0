//! The frame-pointer walk: follows the `[saved fp, return address]` chain from the frame pointer
//! at the callback's entry.
//!
//! Runs on application threads inside the vendor's API-entry callback, so it must be cheap: no
//! allocation, no locks, a few nanoseconds per frame. Every frame pointer is checked against the
//! thread's stack bounds (`[sp, stack top)`) and must grow monotonically, so a frame chain broken
//! by code without frame pointers ends the walk instead of reading wild memory.

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
}
