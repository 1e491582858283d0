//! How much of each launch's stack the agent captures, switched while the program runs, so that
//! one process can be timed in adjacent windows with launch stacks off, with native frames only,
//! and in full (issue #29's method: the same process's steps under each setting, not processes
//! compared across this machine's noise).
//!
//! The exported `int xpuprof_launch_detail(int level)` sets the level: 0 records launch entries
//! without a stack (the launch path of `launch_stacks = "off"`), 1 native frames only (that of
//! `python = "off"`), 2 native and Python frames (the agent's configuration, the default); -1
//! only asks; 4 added to a level times each outermost launch's entry (the agent's own work at
//! the launch: walk, Python frames, hash, entry). It returns the level before, or -1 for a
//! number it does not know. A level never adds what the configuration left out: with
//! `launch_stacks = "off"` no level walks a stack.
//!
//! `int xpuprof_launch_rule_spill(int on)` switches the second level behind each launching
//! thread's native rule cache (on by
//! default: a rule evicted from the first level is found in a hash probe, not in the CFI).
//!
//! `int xpuprof_launch_counts(uint64_t *out, int n)` writes what the process's native walks
//! did so far, for a benchmark's windows to tell apart: walks, frames, frames stepped by a
//! cached rule, return addresses whose rule was looked up in the CFI (not cached, or evicted),
//! module-list refreshes (each empties the rule caches); then the timed entries, their clock
//! ticks in all, in the native walk and in the Python frames, the clock now, the frames of the
//! timed entries' stacks, and the autograd engine threads' timed entries apart.

use std::os::raw::c_int;
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Mutex};

/// Launch entries without a stack.
pub const ENTRIES: u8 = 0;
/// Native frames, no Python frames.
pub const NATIVE: u8 = 1;
/// Native and Python frames, as configured.
pub const FULL: u8 = 2;
/// Added to a level: each outermost launch's entry is timed ([`xpuprof_launch_counts`]).
pub const TIMED: u8 = 4;

static LEVEL: AtomicU8 = AtomicU8::new(FULL);

/// The level now with the [`TIMED`] bit (one relaxed load per launch).
#[inline]
pub fn level() -> u8 {
    LEVEL.load(Ordering::Relaxed)
}

/// Sets (`level` 0, 1 or 2, plus 4 to time each launch's entry) or only reads (-1) the
/// process's launch detail; returns the level before, -1 for a level it does not know.
#[no_mangle]
pub extern "C" fn xpuprof_launch_detail(level: c_int) -> c_int {
    match level {
        -1 => c_int::from(self::level()),
        0..=2 | 4..=6 => c_int::from(LEVEL.swap(level as u8, Ordering::Relaxed)),
        _ => -1,
    }
}

/// A thread's timed entries and their clock ticks ([`crate::timestamps::raw`] units): in all,
/// in the native walk, in the Python frames' capture and merge; and the frames of their
/// stacks; written by that thread only.
#[derive(Debug, Default)]
pub(crate) struct Timing([AtomicU64; 8]);

static TIMINGS: Mutex<Vec<Arc<Timing>>> = Mutex::new(Vec::new());

impl Timing {
    /// A new thread's timing, summed by [`xpuprof_launch_counts`] from now on.
    pub(crate) fn register() -> Arc<Timing> {
        let t = Arc::new(Timing::default());
        if let Ok(mut all) = TIMINGS.lock() {
            all.push(t.clone());
        }
        t
    }

    /// One entry that took `ticks`, of which `walk` in the native walk and `python` in the
    /// Python frames, for a stack of `frames` frames; on an autograd engine thread (`engine`:
    /// counted apart too).
    #[inline]
    pub(crate) fn add(&self, ticks: u64, walk: u64, python: u64, frames: u64, engine: bool) {
        let e = u64::from(engine);
        for (a, v) in self.0.iter().zip([1, ticks, walk, python, frames, e, e * ticks, e * python]) {
            a.store(a.load(Ordering::Relaxed).wrapping_add(v), Ordering::Relaxed);
        }
    }
}

fn timings() -> [u64; 8] {
    let mut s = [0u64; 8];
    if let Ok(all) = TIMINGS.lock() {
        for t in all.iter() {
            for (s, a) in s.iter_mut().zip(&t.0) {
                *s = s.wrapping_add(a.load(Ordering::Relaxed));
            }
        }
    }
    s
}

/// Turns on (1, the default) or off (0), or only reads (-1), the spill of the native rule cache
/// ([`xpuprof_unwind::set_rule_spill`]: a rule evicted from a thread's rule cache is found
/// again in a hash probe, not looked up in the CFI again); returns whether it was on, -1 for a
/// number it does not know. The stacks are the same either way.
#[no_mangle]
pub extern "C" fn xpuprof_launch_rule_spill(on: c_int) -> c_int {
    match on {
        -1 => c_int::from(xpuprof_unwind::rule_spill_on()),
        0 | 1 => c_int::from(xpuprof_unwind::set_rule_spill(on == 1)),
        _ => -1,
    }
}

/// Counts written by [`xpuprof_launch_counts`].
pub const COUNTS: usize = 14;

/// Writes the first `n` (at most [`COUNTS`]) of the process's launch counts to `out`: walks,
/// frames, fast steps, rule lookups, module-list refreshes, timed entries, their clock ticks in
/// all, in the native walk, in the Python frames, the clock now (ticks: TSC or nanoseconds,
/// whichever launch entries are stamped with), the frames of the timed entries' stacks, and of
/// the timed entries those of autograd engine threads, their ticks and their Python frames'
/// ticks; returns how many it wrote.
///
/// # Safety
/// `out` points to `n` writable `uint64_t`s.
#[no_mangle]
pub unsafe extern "C" fn xpuprof_launch_counts(out: *mut u64, n: c_int) -> c_int {
    let s = xpuprof_unwind::stats().snapshot();
    let [timed, ticks, walk, python, frames, engine, engine_ticks, engine_python] = timings();
    let now = crate::timestamps::raw();
    let v = [
        s.walks,
        s.frames,
        s.fast_steps,
        s.lookups,
        s.refreshes,
        timed,
        ticks,
        walk,
        python,
        now,
        frames,
        engine,
        engine_ticks,
        engine_python,
    ];
    let k = (n.max(0) as usize).min(v.len());
    if out.is_null() {
        return 0;
    }
    // SAFETY: the caller gives `n` writable words at `out`; `k <= n`.
    unsafe { std::ptr::copy_nonoverlapping(v.as_ptr(), out, k) };
    k as c_int
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
        assert_eq!(xpuprof_launch_detail(7), -1, "an unknown level is refused");
        assert_eq!(level(), NATIVE, "and leaves the level as it was");
        xpuprof_launch_detail(before);
    }

    #[test]
    fn rule_spill_switch_round_trips() {
        let before = xpuprof_launch_rule_spill(-1);
        assert_eq!(before, 1, "on by default");
        assert_eq!(xpuprof_launch_rule_spill(0), 1);
        assert_eq!(xpuprof_launch_rule_spill(-1), 0);
        assert_eq!(xpuprof_launch_rule_spill(2), -1, "an unknown value is refused");
        assert_eq!(xpuprof_launch_rule_spill(before), 0);
    }

    #[test]
    fn counts_are_written_up_to_the_room_given() {
        let mut out = [u64::MAX; COUNTS + 1];
        // SAFETY: COUNTS + 1 writable words.
        assert_eq!(unsafe { xpuprof_launch_counts(out.as_mut_ptr(), COUNTS as c_int + 1) }, COUNTS as c_int);
        assert_eq!(out[COUNTS], u64::MAX, "nothing past the counts");
        assert!(out[9] > 0, "the clock");
        // SAFETY: 2 writable words.
        assert_eq!(unsafe { xpuprof_launch_counts(out.as_mut_ptr(), 2) }, 2);
    }
}
