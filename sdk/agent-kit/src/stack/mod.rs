//! The calling thread's stack, captured at a launch: the registers the walk starts from, the
//! stack bounds it may read, and the walk itself.
//!
//! [`walk`] is the one entry point the launch-site path calls. It unwinds with
//! [`xpuprof_unwind`]: frame pointers where the code keeps them (a cached rule per address),
//! the binaries' CFI (`.eh_frame`) where it does not (libraries built without frame pointers,
//! the Level Zero loader, libtorch), so the stack reaches the launching function and its
//! callers. The agent's own frames and the vendor's callback machinery are left out, and the
//! walk reports where the application's side of the stack starts: the registers the
//! trampoline hands to the eBPF source, so both capture paths start at the same frame.

pub mod fp;

pub use xpuprof_unwind::{Registers, Walk};

/// The part of the thread's stack a walk may read: `[lo, hi)`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Bounds {
    /// Lowest readable address (at most the stack pointer at the walk's start).
    pub lo: usize,
    /// One past the highest address (the stack's top).
    pub hi: usize,
}

/// Writes the calling thread's stack into `out`, innermost first, leaving out the leading
/// frames inside `own_code` (sorted or not: the profiler's own code and the vendor's callback
/// library). The first frame written is the return address into the first frame outside it.
/// Returns the walk and the registers of that first frame (for [`crate::trampoline::call`]).
/// Reads only inside `bounds` (clamped below by `regs.sp`).
#[inline]
pub fn walk(
    regs: Registers,
    bounds: Bounds,
    own_code: &[(u64, u64)],
    out: &mut [u64],
) -> (Walk, Option<Registers>) {
    walk_with_sp(regs, bounds, own_code, out, &mut [])
}

/// [`walk`] that also writes each frame's stack pointer: `sp_out[i]`, as far as it goes, for
/// the frame in `out[i]` (what places Python frames: [`crate::python::PythonFrames::merge`]).
#[inline]
pub fn walk_with_sp(
    regs: Registers,
    bounds: Bounds,
    own_code: &[(u64, u64)],
    out: &mut [u64],
    sp_out: &mut [u64],
) -> (Walk, Option<Registers>) {
    let skip = |a: u64| own_code.iter().any(|&(s, e)| a >= s && a < e);
    xpuprof_unwind::local::walk_skipping_with_sp(regs, bounds.lo as u64, bounds.hi as u64, out, sp_out, skip)
}

/// [`walk_with_sp`] that reuses the calling thread's previous walk of this function where its
/// frames still hold (every stack word their steps read is read again and compared:
/// [`xpuprof_unwind::local::walk_reusing`]); also returns how many frames it reused.
#[inline]
pub fn walk_reusing(
    regs: Registers,
    bounds: Bounds,
    own_code: &[(u64, u64)],
    out: &mut [u64],
    sp_out: &mut [u64],
) -> (Walk, Option<Registers>, usize) {
    let skip = |a: u64| own_code.iter().any(|&(s, e)| a >= s && a < e);
    xpuprof_unwind::local::walk_reusing(regs, bounds.lo as u64, bounds.hi as u64, out, sp_out, skip)
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

/// The registers at this point of the calling function (inlined into it): the start of a walk
/// from an API callback.
#[inline(always)]
pub fn registers() -> Registers {
    Registers::here()
}

/// Mixes a stack into a 64-bit key (distinct stacks collide with negligible probability).
///
/// Four independent lanes take every fourth frame (so the multiplications of neighbouring
/// frames overlap instead of waiting for each other), then the lanes are mixed together.
pub fn hash(frames: &[u64]) -> u64 {
    const K: u64 = 0xFF51_AFD7_ED55_8CCD;
    let mut lanes = [
        0x9E37_79B9_7F4A_7C15 ^ frames.len() as u64,
        0xC2B2_AE3D_27D4_EB4F,
        0x1656_67B1_9E37_79F9,
        0x27D4_EB2F_1656_67C5,
    ];
    let mix = |h: u64, f: u64| {
        let h = (h ^ f).wrapping_mul(K);
        h ^ h >> 32
    };
    let mut chunks = frames.chunks_exact(4);
    for c in &mut chunks {
        for (l, &f) in lanes.iter_mut().zip(c) {
            *l = mix(*l, f);
        }
    }
    for (l, &f) in lanes.iter_mut().zip(chunks.remainder()) {
        *l = mix(*l, f);
    }
    let h = lanes.iter().fold(0u64, |h, &l| mix(h.rotate_left(17), l));
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
        // Frames four apart land in one lane: their order still counts, as does a lane's place.
        assert_ne!(hash(&[1, 0, 0, 0, 2]), hash(&[2, 0, 0, 0, 1]));
        assert_ne!(hash(&[1, 2, 3, 4]), hash(&[2, 1, 3, 4]));
        assert_ne!(hash(&[0, 0, 0, 0]), hash(&[0, 0, 0]));
        let stacks: std::collections::HashSet<u64> =
            (0..10_000u64).map(|i| hash(&[0x40_1000 + i % 100, 0x40_2000 + i / 100, 0x40_3000])).collect();
        assert_eq!(stacks.len(), 10_000, "distinct stacks, distinct keys");
    }

    #[inline(never)]
    fn walk_here(own: &[(u64, u64)]) -> (Vec<u64>, Option<Registers>) {
        let mut out = [0u64; 64];
        let (w, start) = walk(registers(), thread_bounds(), own, &mut out);
        (out[..w.len].to_vec(), start)
    }

    #[test]
    fn own_frames_are_left_out_and_the_start_is_the_first_kept_frame() {
        let mut runs = Vec::new();
        for i in 0..2 {
            // First the whole stack; then without its first frame (walk_here's own address).
            let own: Vec<(u64, u64)> =
                runs.first().map(|(all, _): &(Vec<u64>, _)| vec![(all[0], all[0] + 1)]).unwrap_or_default();
            runs.push(walk_here(&own));
            assert!(runs[i].0.len() > 3, "{:x?}", runs[i].0);
        }
        let (all, (kept, start)) = (&runs[0].0, &runs[1]);
        let start = start.expect("a caller-side start");
        assert_eq!(kept[0], start.ip);
        assert_eq!(&kept[..], &all[1..], "the same frames after the left-out one");
    }
}
