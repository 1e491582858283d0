//! A launch's stack built from the launching thread's previous one where it still holds: the
//! native walk takes the previous walk's outer frames once every stack word their steps read
//! is read again and found unchanged ([`xpuprof_unwind::local::walk_reusing`]), and the Python
//! chain keeps the previous capture's resolved frames where every field read of them is
//! unchanged ([`xpuprof_python::own`]). Both are exact: what is reused is what the full
//! capture would have found; what they save is the waiting of each read for the one before.
//!
//! Off by default: on the development machine (`scripts/bench-launch-reuse.sh`, the CUDA test
//! double under a 50-frame Python loop) the native reuse costs about what it saves (1.02x the
//! full capture) and the Python one more (1.27x): the comparison must read every word the walk
//! reads (see `xpuprof_unwind`'s and `xpuprof_python`'s `reuse` modules for why nothing less is
//! exact), and with the stack in L1 the walk's dependent reads are cheap. On ResNet-18 training
//! on an H200 it did not pay either (native 1.08x, native + Python 1.03x the full capture's step
//! time; 3,842 launches checked, 0 differ: `docs/benchmarks.md`, #29).
//!
//! [`ReuseMode::Check`] captures every launch both ways, records the full capture, and counts
//! the launches whose two stacks differ (none, if reuse is exact): the mode a GPU run uses to
//! show it on real programs.
//!
//! The mode is the process's: `XPUPROF_LAUNCH_REUSE=off|native|on|check` in the target's
//! environment (read at the first launch; `off` when unset), or set while the program runs with
//! the exported `int xpuprof_launch_reuse(int mode)` (0 off, 1 on, 2 check, 3 native, -1 only
//! asks; returns the mode before), whose counts `int xpuprof_launch_reuse_counts(uint64_t *out,
//! int n)` writes: launches whose native walk reused frames, whose Python frames did, launches
//! checked, and of those the ones whose two stacks differed.

use std::os::raw::c_int;
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Mutex};

use crate::python::PythonFrames;
use crate::stack::{self, Bounds, Registers};
use crate::timestamps as stamp;
use crate::wire;

/// The most frames a stack keeps.
const MAX_FRAMES: usize = wire::MAX_STACK_FRAMES;

/// How a launch's stack is captured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ReuseMode {
    /// Capture every launch in full.
    #[default]
    Off,
    /// Reuse the thread's previous native frames where every stack word read of them is
    /// unchanged; Python frames in full.
    Native,
    /// Reuse the previous native frames and the previous Python frames.
    On,
    /// Both ways; the full capture is recorded, the launches whose two stacks differ (the
    /// reuse of [`ReuseMode::On`]) are counted.
    Check,
}

impl std::str::FromStr for ReuseMode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "off" => Ok(ReuseMode::Off),
            "native" => Ok(ReuseMode::Native),
            "on" => Ok(ReuseMode::On),
            "check" => Ok(ReuseMode::Check),
            other => Err(format!("XPUPROF_LAUNCH_REUSE={other:?}: expected off, native, on or check")),
        }
    }
}

/// The process's mode: 0 before the environment was read, then [`encode`]d.
static MODE: AtomicU8 = AtomicU8::new(0);

fn encode(m: ReuseMode) -> u8 {
    match m {
        ReuseMode::Off => 1,
        ReuseMode::Native => 2,
        ReuseMode::On => 3,
        ReuseMode::Check => 4,
    }
}

fn decode(v: u8) -> ReuseMode {
    match v {
        2 => ReuseMode::Native,
        3 => ReuseMode::On,
        4 => ReuseMode::Check,
        _ => ReuseMode::Off,
    }
}

/// The mode now (one atomic load per launch; the environment is read at the first).
#[inline]
pub fn mode() -> ReuseMode {
    match MODE.load(Ordering::Relaxed) {
        0 => from_env(),
        v => decode(v),
    }
}

#[cold]
fn from_env() -> ReuseMode {
    let m = match std::env::var("XPUPROF_LAUNCH_REUSE") {
        Ok(v) if !v.is_empty() => v.parse().unwrap_or_else(|e: String| {
            crate::say("agent", &format!("{e}; launch stacks reuse nothing"));
            ReuseMode::Off
        }),
        _ => ReuseMode::Off,
    };
    let _ = MODE.compare_exchange(0, encode(m), Ordering::Relaxed, Ordering::Relaxed);
    decode(MODE.load(Ordering::Relaxed))
}

/// Sets the process's mode; returns the one before.
pub fn set_mode(m: ReuseMode) -> ReuseMode {
    let before = mode();
    MODE.store(encode(m), Ordering::Relaxed);
    before
}

/// Sets (`mode` 0 off, 1 on, 2 check, 3 native) or only reads (-1) the process's reuse mode;
/// returns the mode before (same numbers), -1 for a number it does not know.
#[no_mangle]
pub extern "C" fn xpuprof_launch_reuse(mode: c_int) -> c_int {
    let number = |m| match m {
        ReuseMode::Off => 0,
        ReuseMode::On => 1,
        ReuseMode::Check => 2,
        ReuseMode::Native => 3,
    };
    let m = match mode {
        -1 => return number(self::mode()),
        0 => ReuseMode::Off,
        1 => ReuseMode::On,
        2 => ReuseMode::Check,
        3 => ReuseMode::Native,
        _ => return -1,
    };
    number(set_mode(m))
}

/// Writes the first `n` (at most 4) of the process's [`ReuseCounts`] to `out` (native, python,
/// checked, differed); returns how many it wrote.
///
/// # Safety
/// `out` points to `n` writable `uint64_t`s.
#[no_mangle]
pub unsafe extern "C" fn xpuprof_launch_reuse_counts(out: *mut u64, n: c_int) -> c_int {
    let c = counts();
    let v = [c.native, c.python, c.checked, c.differed];
    let k = (n.max(0) as usize).min(v.len());
    if out.is_null() {
        return 0;
    }
    // SAFETY: the caller gives `n` writable words at `out`; `k <= n`.
    unsafe { std::ptr::copy_nonoverlapping(v.as_ptr(), out, k) };
    k as c_int
}

/// What reuse did (per thread, or summed by [`counts`]).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct ReuseCounts {
    /// Launches whose native walk took frames of the previous walk.
    pub native: u64,
    /// Launches whose Python frames took frames of the previous capture.
    pub python: u64,
    /// Launches captured both ways ([`ReuseMode::Check`]).
    pub checked: u64,
    /// Of those, launches whose two stacks differed.
    pub differed: u64,
}

/// A thread's counts, written by that thread only (no shared cache line per launch).
#[derive(Debug, Default)]
pub(crate) struct ThreadCounts([AtomicU64; 4]);

impl ThreadCounts {
    /// A new thread's counts, summed by [`counts`] from now on.
    pub(crate) fn register() -> Arc<ThreadCounts> {
        let c = Arc::new(ThreadCounts::default());
        if let Ok(mut all) = ALL.lock() {
            all.push(c.clone());
        }
        c
    }

    #[inline]
    fn bump(&self, i: usize, by: bool) {
        if by {
            let a = &self.0[i];
            a.store(a.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
        }
    }
}

static ALL: Mutex<Vec<Arc<ThreadCounts>>> = Mutex::new(Vec::new());

/// The counts of every thread that captured a launch stack.
pub fn counts() -> ReuseCounts {
    let mut s = [0u64; 4];
    if let Ok(all) = ALL.lock() {
        for t in all.iter() {
            for (s, a) in s.iter_mut().zip(&t.0) {
                *s += a.load(Ordering::Relaxed);
            }
        }
    }
    ReuseCounts { native: s[0], python: s[1], checked: s[2], differed: s[3] }
}

/// A thread's capture buffers, reused from launch to launch (not zeroed again).
pub(crate) struct Buffers {
    /// The walk's output, and the stack pointer of each frame (where Python frames go).
    frames: Box<[u64; MAX_FRAMES]>,
    sps: Box<[u64; MAX_FRAMES]>,
    /// The walk's output with Python frames merged in: the launch's stack.
    pub merged: Box<[u64; MAX_FRAMES]>,
    /// The full capture of [`ReuseMode::Check`], made on first use.
    check: Option<Box<[[u64; MAX_FRAMES]; 3]>>,
    /// With a timed capture ([`crate::detail::TIMED`]): the clock when the native walk ended and
    /// when the Python frames were merged in.
    pub walked: u64,
    pub merged_at: u64,
}

impl Buffers {
    pub(crate) fn new() -> Self {
        Buffers {
            frames: Box::new([0; MAX_FRAMES]),
            sps: Box::new([0; MAX_FRAMES]),
            merged: Box::new([0; MAX_FRAMES]),
            check: None,
            walked: 0,
            merged_at: 0,
        }
    }

    /// Walks the stack from `regs` and merges the thread's Python frames (none where `python`
    /// is `None`) into `merged[..depth]`, reusing per `mode`; returns the frames of the stack and the registers
    /// of its first frame outside `own_code` (for the trampoline). With `timed`, notes when each
    /// part ended ([`Buffers::walked`], [`Buffers::merged_at`]).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn capture(
        &mut self,
        mode: ReuseMode,
        regs: Registers,
        bounds: Bounds,
        own_code: &[(u64, u64)],
        python: Option<&PythonFrames>,
        depth: usize,
        counts: &ThreadCounts,
        timed: bool,
    ) -> (usize, Option<Registers>) {
        let Some(python) = python else {
            // Native frames only ([`crate::detail::NATIVE`]), as `python = "off"` has them.
            let depth = depth.min(MAX_FRAMES);
            let (frames, sps) = (&mut self.frames[..depth], &mut self.sps[..depth]);
            let (w, first) = stack::walk_with_sp(regs, bounds, own_code, frames, sps);
            self.walked = timed.then(stamp::raw).unwrap_or(0);
            self.merged[..w.len].copy_from_slice(&frames[..w.len]);
            self.merged_at = self.walked;
            return (w.len, first);
        };
        let depth = depth.min(MAX_FRAMES);
        let native = mode != ReuseMode::Off;
        let reuse_python = matches!(mode, ReuseMode::On | ReuseMode::Check);
        let (frames, sps) = (&mut self.frames[..depth], &mut self.sps[..depth]);
        let (w, first, reused) = if native {
            stack::walk_reusing(regs, bounds, own_code, frames, sps)
        } else {
            let (w, first) = stack::walk_with_sp(regs, bounds, own_code, frames, sps);
            (w, first, 0)
        };
        self.walked = timed.then(stamp::raw).unwrap_or(0);
        let merged = &mut self.merged[..depth];
        let (n, py_reused) = python.merge_reusing(&frames[..w.len], &sps[..w.len], merged, reuse_python);
        self.merged_at = timed.then(stamp::raw).unwrap_or(0);
        counts.bump(0, reused > 0);
        counts.bump(1, py_reused);
        if mode != ReuseMode::Check {
            return (n, first);
        }
        // The full capture, compared; the launch records it.
        let check = self.check.get_or_insert_with(|| Box::new([[0; MAX_FRAMES]; 3]));
        let [frames, sps, full] = &mut **check;
        let (frames, sps) = (&mut frames[..depth], &mut sps[..depth]);
        let (w, full_first) = stack::walk_with_sp(regs, bounds, own_code, frames, sps);
        let full_n = python.merge_reusing(&frames[..w.len], &sps[..w.len], &mut full[..depth], false).0;
        let same = full[..full_n] == self.merged[..n] && full_first.map(|r| r.ip) == first.map(|r| r.ip);
        counts.bump(2, true);
        counts.bump(3, !same);
        self.merged[..full_n].copy_from_slice(&full[..full_n]);
        (full_n, full_first)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_parse_and_round_trip_through_the_exported_switch() {
        assert_eq!("check".parse(), Ok(ReuseMode::Check));
        assert!("yes".parse::<ReuseMode>().unwrap_err().contains("off, native, on or check"));
        assert_eq!(ReuseMode::default(), ReuseMode::Off);
        let before = xpuprof_launch_reuse(-1);
        assert_eq!(xpuprof_launch_reuse(2), before);
        assert_eq!(mode(), ReuseMode::Check);
        assert_eq!(xpuprof_launch_reuse(0), 2);
        assert_eq!(mode(), ReuseMode::Off);
        assert_eq!(xpuprof_launch_reuse(3), 0);
        assert_eq!(mode(), ReuseMode::Native);
        assert_eq!(xpuprof_launch_reuse(7), -1, "an unknown mode is refused");
        xpuprof_launch_reuse(before);
    }
}
