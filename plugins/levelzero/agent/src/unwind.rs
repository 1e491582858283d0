//! The launch-stack walk through the binaries' unwind tables (`_Unwind_Backtrace`).
//!
//! Why not the agent kit's frame-pointer walk: the callbacks run inside the loader and its tracing
//! layer, which Debian builds without frame pointers, so a frame-pointer chain read in the callback
//! does not reach the application's launching function (the frame every launch stack must show).
//! The unwind tables (`.eh_frame`, present in every C++ library) do. When the kit's walk gains its
//! CFI path (`xpuprof_agent_kit::stack::walk`), this file goes.

use std::os::raw::{c_int, c_void};

/// Most frames of a launch stack.
pub const MAX_FRAMES: usize = 128;

struct Walk<'a> {
    frames: &'a mut [u64],
    n: usize,
}

extern "C" {
    fn _Unwind_Backtrace(
        trace: extern "C" fn(ctx: *mut c_void, arg: *mut c_void) -> c_int,
        arg: *mut c_void,
    ) -> c_int;
    fn _Unwind_GetIP(ctx: *mut c_void) -> usize;
}

extern "C" fn step(ctx: *mut c_void, arg: *mut c_void) -> c_int {
    // SAFETY: `arg` is the `Walk` passed to _Unwind_Backtrace by `stack` below, alive for the walk.
    let w = unsafe { &mut *(arg as *mut Walk<'_>) };
    // SAFETY: `ctx` is the unwinder's context for this frame.
    let ip = unsafe { _Unwind_GetIP(ctx) } as u64;
    if ip == 0 || w.n == w.frames.len() {
        return 5; // _URC_END_OF_STACK
    }
    w.frames[w.n] = ip;
    w.n += 1;
    0
}

/// The calling thread's stack as return addresses, innermost first, through the binaries'
/// unwind tables (the loader and its tracing layer are built without frame pointers).
pub fn stack(frames: &mut [u64]) -> usize {
    let mut w = Walk { frames, n: 0 };
    // SAFETY: `step` only writes inside `w.frames`; `w` outlives the call.
    unsafe { _Unwind_Backtrace(step, &mut w as *mut Walk<'_> as *mut c_void) };
    w.n
}

/// A stack's hash (FNV-1a over the addresses), never 0.
pub fn stack_hash(frames: &[u64]) -> u64 {
    let mut h = 0xcbf2_9ce4_8422_2325u64;
    for f in frames {
        h = (h ^ f).wrapping_mul(0x100_0000_01b3);
    }
    h.max(1)
}
