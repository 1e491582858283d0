//! The GIL's hand-over record: which thread state took it last (`last_holder`) and how many times
//! a thread other than the last holder took it (`switch_number`, never decreasing). Python code
//! runs, and a thread's frames change, only while its thread holds the GIL; so while both stay
//! the same, no thread but the last holder has changed its frames. [`crate::autograd`] rescans
//! the interpreter's threads only when they change.

use std::sync::atomic::{AtomicU64, Ordering};

use crate::cpython_offsets::{GilAt, Layout, GIL_LAST_HOLDER, GIL_LOCKED, GIL_SWITCH_NUMBER};
use crate::memory::{Memory, ProcessMemory};

/// The GIL's `(switch_number, last_holder)` at one moment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Switches {
    /// Times a thread other than the last holder took the GIL.
    pub number: u64,
    /// The thread state that took it last (0: none yet).
    pub holder: u64,
}

/// The GIL of an interpreter, found and checked once.
#[derive(Debug, Clone, Copy)]
pub struct Gil {
    /// Address of its `struct _gil_runtime_state`.
    addr: u64,
}

impl Gil {
    /// The GIL of the interpreter state `interp` (3.12 and later keep a pointer to it there)
    /// or of `_PyRuntime` at `runtime` (3.9 to 3.11); `None` when it cannot be found or does not
    /// look like a GIL (`locked` other than 0 or 1: a wrong layout, or a build without GIL).
    /// Its fields are read through `process_vm_readv` here, once.
    pub fn find(layout: &Layout, runtime: Option<u64>, interp: u64, free_threaded: bool) -> Option<Gil> {
        if free_threaded {
            return None;
        }
        let mem = ProcessMemory { pid: std::process::id() };
        let addr = match layout.gil {
            GilAt::Runtime(at) => runtime? + at,
            GilAt::Interpreter(at) if interp != 0 => mem.u64(interp + at).ok()?,
            GilAt::Interpreter(_) => return None,
        };
        let locked = mem.u32(addr + GIL_LOCKED).ok()?;
        mem.u64(addr + GIL_SWITCH_NUMBER).ok()?;
        (addr % 8 == 0 && locked <= 1).then_some(Gil { addr })
    }

    /// The hand-over record now. The holder is loaded first: a thread taking the GIL stores
    /// the holder before the number, so a pair read in the middle of a take pairs the new
    /// number with the old holder or the new holder with the old number, and differs from
    /// every pair read after the take: it can make a rescan, never hide one.
    #[inline]
    pub fn read(&self) -> Switches {
        // SAFETY: `addr` was checked by `find`: an 8-aligned `_gil_runtime_state` inside
        // `_PyRuntime` (static) or inside the interpreter state (alive as long as the
        // interpreter, which the caller checked is initialised); both words are naturally
        // aligned, written by CPython with relaxed atomic stores or under the GIL's mutex.
        unsafe {
            let holder = (*((self.addr + GIL_LAST_HOLDER) as *const AtomicU64)).load(Ordering::Acquire);
            let number = (*((self.addr + GIL_SWITCH_NUMBER) as *const AtomicU64)).load(Ordering::Acquire);
            Switches { number, holder }
        }
    }
}
