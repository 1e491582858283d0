//! Launch-site timestamps: cheap on the application thread, exact in the session clock.
//!
//! Every launch takes two timestamps (API entry and exit) inside the vendor's API callbacks; with
//! `clock_gettime` they are half of the agent's own per-launch work (about 25 ns each in these
//! VMs). Where the kernel itself keeps `CLOCK_MONOTONIC` on the TSC (clocksource `tsc`, with an
//! invariant TSC), the application thread reads the TSC instead (about 9 ns), and the drainer
//! converts the raw values to `CLOCK_MONOTONIC` nanoseconds before they leave the process, by
//! linear interpolation between calibration pairs `(tsc, monotonic)` it takes at every drain
//! (at least every 100 ms). Within one such interval the kernel's own TSC-to-monotonic mapping
//! is linear, so interpolation is exact up to the pair readings' own error (a few ns). Anywhere
//! else the application thread calls `clock_gettime` and no conversion is done.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use crate::wire;

static USE_TSC: AtomicBool = AtomicBool::new(false);

/// Calibration pairs kept: at one per drain (every 100 ms at most), about half a minute. A
/// launch call still running after that is converted by extrapolation from the oldest pair.
const MAX_PAIRS: usize = 256;

/// A calibration pair: (TSC ticks, `CLOCK_MONOTONIC` ns).
type Pair = (u64, u64);

/// A raw timestamp for a launch entry: TSC ticks when [`Clock::new`] found the TSC usable,
/// otherwise `CLOCK_MONOTONIC` nanoseconds.
#[inline(always)]
pub fn raw() -> u64 {
    #[cfg(target_arch = "x86_64")]
    if USE_TSC.load(Ordering::Relaxed) {
        // SAFETY: rdtsc has no preconditions; USE_TSC is set only on x86_64 CPUs with an
        // invariant TSC that the kernel uses as its clocksource.
        return unsafe { core::arch::x86_64::_rdtsc() };
    }
    xpuprof_sdk::clock::now_ns()
}

/// Converts raw launch timestamps to session-clock nanoseconds.
#[derive(Debug)]
pub struct Clock {
    tsc: bool,
    pairs: Mutex<VecDeque<(u64, u64)>>,
}

impl Default for Clock {
    fn default() -> Self {
        Self::new(false)
    }
}

impl Clock {
    /// With `try_tsc`, switches [`raw`] to the TSC when this machine's TSC is usable.
    pub fn new(try_tsc: bool) -> Self {
        let tsc = try_tsc && tsc_usable();
        let c = Self { tsc, pairs: Mutex::new(VecDeque::new()) };
        if tsc {
            c.calibrate();
            USE_TSC.store(true, Ordering::Relaxed);
        }
        c
    }

    /// Whether raw timestamps are TSC ticks.
    pub fn is_tsc(&self) -> bool {
        self.tsc
    }

    /// Takes a calibration pair now.
    pub fn calibrate(&self) {
        if !self.tsc {
            return;
        }
        if let Ok(mut p) = self.pairs.lock() {
            p.push_back(pair());
            while p.len() > MAX_PAIRS {
                p.pop_front();
            }
        }
    }

    /// Rewrites the timestamps of the `MSG_LAUNCHES` entries in `entries` (raw to nanoseconds).
    /// Call [`calibrate`](Self::calibrate) after the entries were taken and before this.
    pub fn convert_entries(&self, entries: &mut [u8]) {
        if !self.tsc {
            return;
        }
        let Ok(pairs) = self.pairs.lock() else { return };
        let mut conv = Converter::new(&pairs);
        let mut o = 0;
        while o + 16 <= entries.len() {
            match entries[o] {
                wire::ENTRY_STACK => o += wire::launches::stack_entry_len(&entries[o..]),
                wire::ENTRY_LAUNCH if o + wire::LAUNCH_ENTRY_BYTES <= entries.len() => {
                    for at in [o + 16, o + 32] {
                        let raw = u64::from_le_bytes(entries[at..at + 8].try_into().unwrap_or_default());
                        if raw != 0 {
                            entries[at..at + 8].copy_from_slice(&conv.ns(raw).to_le_bytes());
                        }
                    }
                    o += wire::LAUNCH_ENTRY_BYTES;
                }
                _ => break,
            }
        }
    }
}

/// Maps raw TSC values to nanoseconds, remembering the last interval used (a thread's entries
/// are in time order, so most lookups hit it).
struct Converter<'a> {
    pairs: &'a VecDeque<(u64, u64)>,
    /// The interval `[t0, t1)` last used, as `(t0, n0, t1, ns per tick in 32.32 fixed point)`.
    last: Option<(u64, u64, u64, u64)>,
}

impl<'a> Converter<'a> {
    fn new(pairs: &'a VecDeque<(u64, u64)>) -> Self {
        Self { pairs, last: None }
    }

    fn ns(&mut self, raw: u64) -> u64 {
        if let Some((t0, n0, t1, mult)) = self.last {
            if raw >= t0 && raw < t1 {
                return n0 + ((u128::from(raw - t0) * u128::from(mult)) >> 32) as u64;
            }
        }
        let Some((inside, (t0, n0), (t1, n1))) = interval(self.pairs, raw) else { return raw };
        if inside && t1 > t0 {
            let mult = ((u128::from(n1.saturating_sub(n0)) << 32) / u128::from(t1 - t0)) as u64;
            self.last = Some((t0, n0, t1, mult));
        }
        map((t0, n0), (t1, n1), raw)
    }
}

/// A TSC reading and the `CLOCK_MONOTONIC` reading taken between two TSC readings; the pair
/// with the tightest bracket of three tries.
fn pair() -> (u64, u64) {
    let mut best = (u64::MAX, 0, 0);
    for _ in 0..3 {
        let a = raw_tsc();
        let ns = xpuprof_sdk::clock::now_ns();
        let b = raw_tsc();
        if b.wrapping_sub(a) < best.0 {
            best = (b.wrapping_sub(a), a / 2 + b / 2 + (a & b & 1), ns);
        }
    }
    (best.1, best.2)
}

fn raw_tsc() -> u64 {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: rdtsc has no preconditions.
    return unsafe { core::arch::x86_64::_rdtsc() };
    #[cfg(not(target_arch = "x86_64"))]
    xpuprof_sdk::clock::now_ns()
}

/// The two pairs to map `raw` with, and whether `raw` lies between them (interpolation) rather
/// than outside all pairs (extrapolation over the whole span). `None` without pairs.
fn interval(pairs: &VecDeque<Pair>, raw: u64) -> Option<(bool, Pair, Pair)> {
    let (&first, &last) = (pairs.front()?, pairs.back()?);
    if pairs.len() < 2 || raw <= first.0 || raw >= last.0 {
        return Some((false, first, last));
    }
    // Pairs are in time order: find the interval holding `raw`.
    let i = pairs.partition_point(|&(t, _)| t <= raw);
    Some((true, pairs[i - 1], pairs[i]))
}

/// The line through `(t0, n0)` and `(t1, n1)` at `t`.
fn map((t0, n0): Pair, (t1, n1): Pair, t: u64) -> u64 {
    let dt = t1.saturating_sub(t0);
    if dt == 0 {
        return n0;
    }
    let (d, neg) = if t >= t0 { (t - t0, false) } else { (t0 - t, true) };
    let off = (u128::from(d) * u128::from(n1.saturating_sub(n0)) / u128::from(dt)) as u64;
    if neg {
        n0.saturating_sub(off)
    } else {
        n0 + off
    }
}

/// The TSC can stand in for the session clock: x86_64, an invariant TSC, and the kernel using it
/// as its clocksource (so `CLOCK_MONOTONIC` is a linear function of it between NTP updates).
fn tsc_usable() -> bool {
    if !cfg!(target_arch = "x86_64") {
        return false;
    }
    let source = std::fs::read_to_string("/sys/devices/system/clocksource/clocksource0/current_clocksource")
        .unwrap_or_default();
    if source.trim() != "tsc" {
        return false;
    }
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    cpuinfo
        .lines()
        .find(|l| l.starts_with("flags"))
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            f.contains(&"constant_tsc") && f.contains(&"nonstop_tsc")
        })
        .unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Interpolates between the pairs around `raw`; extrapolates with the rate over all pairs
    /// outside them.
    fn to_ns(pairs: &VecDeque<(u64, u64)>, raw: u64) -> u64 {
        match interval(pairs, raw) {
            Some((_, a, b)) => map(a, b, raw),
            None => raw,
        }
    }

    #[test]
    fn interpolates_between_pairs_and_extrapolates_outside() {
        // 2 ticks per ns, with a rate change at the middle pair.
        let pairs: VecDeque<(u64, u64)> = [(1000, 100), (3000, 1100), (7000, 2100)].into_iter().collect();
        assert_eq!(to_ns(&pairs, 1000), 100);
        assert_eq!(to_ns(&pairs, 2000), 600);
        assert_eq!(to_ns(&pairs, 3000), 1100);
        assert_eq!(to_ns(&pairs, 5000), 1600, "second interval: 4 ticks per ns");
        assert_eq!(to_ns(&pairs, 7000), 2100);
        // Outside: the overall rate (6000 ticks for 2000 ns).
        assert_eq!(to_ns(&pairs, 10000), 3100);
        assert_eq!(to_ns(&pairs, 700), 0);
    }

    #[test]
    fn cached_interval_agrees_with_the_exact_mapping() {
        let pairs: VecDeque<(u64, u64)> =
            (0..50u64).map(|i| (1_000_000 + i * 300_000_000 + i * i, 5_000 + i * 100_000_000)).collect();
        let mut c = Converter::new(&pairs);
        for raw in (900_000..15_000_000_000u64).step_by(7_777_777) {
            let (a, b) = (c.ns(raw), to_ns(&pairs, raw));
            assert!(a.abs_diff(b) <= 1, "raw {raw}: {a} vs {b}");
        }
    }

    #[test]
    fn converts_launch_entries_in_place() {
        let clock = Clock { tsc: true, pairs: Mutex::new([(0, 0), (1000, 500)].into_iter().collect()) };
        let mut b = Vec::new();
        b.extend_from_slice(&[wire::ENTRY_STACK, 0, 2, 0, 0, 0, 0, 0]);
        b.extend_from_slice(&7u64.to_le_bytes());
        b.extend_from_slice(&400u64.to_le_bytes()); // frames are not timestamps
        b.extend_from_slice(&800u64.to_le_bytes());
        let launch = b.len();
        let mut e = [0u8; wire::LAUNCH_ENTRY_BYTES];
        e[0] = wire::ENTRY_LAUNCH;
        e[16..24].copy_from_slice(&200u64.to_le_bytes());
        e[32..40].copy_from_slice(&600u64.to_le_bytes());
        b.extend_from_slice(&e);
        e[32..40].copy_from_slice(&0u64.to_le_bytes()); // still running: stays 0
        b.extend_from_slice(&e);
        clock.convert_entries(&mut b);
        let u = |at: usize| u64::from_le_bytes(b[at..at + 8].try_into().unwrap());
        assert_eq!((u(16), u(24)), (400, 800), "stack frames untouched");
        assert_eq!((u(launch + 16), u(launch + 32)), (100, 300));
        let second = launch + wire::LAUNCH_ENTRY_BYTES;
        assert_eq!((u(second + 16), u(second + 32)), (100, 0));
    }

    #[test]
    fn tsc_pairs_track_the_session_clock() {
        if !tsc_usable() {
            xpuprof_testkit::skip::missing(
                "the TSC is not this machine's clocksource (or lacks constant_tsc/nonstop_tsc)",
            );
            return;
        }
        let clock = Clock { tsc: true, pairs: Mutex::new(VecDeque::new()) };
        clock.calibrate();
        let t = raw_tsc();
        let ns = xpuprof_sdk::clock::now_ns();
        std::thread::sleep(std::time::Duration::from_millis(20));
        clock.calibrate();
        let err = to_ns(&clock.pairs.lock().unwrap(), t).abs_diff(ns);
        assert!(err < 5_000, "TSC-derived time is {err} ns off CLOCK_MONOTONIC");
    }
}
