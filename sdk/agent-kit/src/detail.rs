//! How much of each launch's stack the agent captures, switched while the program runs, so that
//! one process can be timed in adjacent windows with launch stacks off, with native frames only,
//! and in full (issue #29's method: the same process's steps under each setting, not processes
//! compared across this machine's noise).
//!
//! The exported `int xpuprof_launch_detail(int level)` sets the level: 0 records launch entries
//! without a stack (the launch path of `launch_stacks = "off"`), 1 native frames only (that of
//! `python = "off"`), 2 native and Python frames (the agent's configuration, the default); -1
//! only asks. It returns the level before, or -1 for a number it does not know. A level never
//! adds what the configuration left out: with `launch_stacks = "off"` no level walks a stack.

use std::os::raw::c_int;
use std::sync::atomic::{AtomicU8, Ordering};

/// Launch entries without a stack.
pub const ENTRIES: u8 = 0;
/// Native frames, no Python frames.
pub const NATIVE: u8 = 1;
/// Native and Python frames, as configured.
pub const FULL: u8 = 2;

static LEVEL: AtomicU8 = AtomicU8::new(FULL);

/// The level now (one relaxed load per launch).
#[inline]
pub fn level() -> u8 {
    LEVEL.load(Ordering::Relaxed)
}

/// Sets (`level` 0, 1 or 2) or only reads (-1) the process's launch detail; returns the level
/// before, -1 for a level it does not know.
#[no_mangle]
pub extern "C" fn xpuprof_launch_detail(level: c_int) -> c_int {
    match level {
        -1 => c_int::from(self::level()),
        0..=2 => c_int::from(LEVEL.swap(level as u8, Ordering::Relaxed)),
        _ => -1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_round_trip_through_the_exported_switch() {
        let before = xpuprof_launch_detail(-1);
        assert_eq!(xpuprof_launch_detail(0), before);
        assert_eq!(level(), ENTRIES);
        assert_eq!(xpuprof_launch_detail(1), 0);
        assert_eq!(level(), NATIVE);
        assert_eq!(xpuprof_launch_detail(3), -1, "an unknown level is refused");
        assert_eq!(level(), NATIVE, "and leaves the level as it was");
        xpuprof_launch_detail(before);
    }
}
