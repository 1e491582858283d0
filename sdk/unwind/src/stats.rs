//! How walks ended, counted process-wide (the agents report them; the eBPF source shows them).
//!
//! Each thread counts its own walks in counters only it writes (plain loads and stores, no
//! shared cache line touched per walk: launching threads of one process do not contend); a
//! snapshot sums every live thread's counters and those of the threads that ended.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};

use crate::walk::{Cut, End};

/// Walk counters (all walks of this process, in-process and copied).
#[derive(Debug)]
pub struct Stats {
    /// Counters of threads that ended (added when they end).
    retired: Counters,
    /// Every live thread's counters.
    live: Mutex<Vec<Arc<Counters>>>,
    refreshes: AtomicU64,
}

/// A copy of the counters.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct StatsSnapshot {
    /// Walks done.
    pub walks: u64,
    /// Frames written by them.
    pub frames: u64,
    /// Steps taken by the fast path (a return address's cached frame-pointer or stack-pointer
    /// rule); the other steps went through framehop.
    pub fast_steps: u64,
    /// Return addresses whose rule was missing from the walking thread's per-address cache
    /// (looked up in the module's CFI through framehop, then cached): a cold or evicted entry.
    pub lookups: u64,
    /// Walks that reached the thread's root (`_start`, `clone`, a zero return address).
    pub root: u64,
    /// Walks stopped by the caller's depth limit.
    pub max_depth: u64,
    /// Walks cut, by [`Cut`] (indexed by `Cut as usize`).
    pub cut: [u64; Cut::COUNT],
    /// Module-list refreshes triggered by addresses outside every known module.
    pub refreshes: u64,
}

impl StatsSnapshot {
    /// Walks cut, all causes.
    pub fn cut_total(&self) -> u64 {
        self.cut.iter().sum()
    }
}

/// One thread's counters (or the ended threads' sum): walks, frames, fast steps, rule lookups,
/// then one per way a walk ends (root, depth limit, each cut).
#[derive(Debug, Default)]
struct Counters([AtomicU64; 6 + Cut::COUNT]);

const WALKS: usize = 0;
const FRAMES: usize = 1;
const FAST_STEPS: usize = 2;
const LOOKUPS: usize = 3;
const ROOT: usize = 4;
const MAX_DEPTH: usize = 5;
const CUT: usize = 6;

impl Counters {
    fn ends_at(end: End) -> usize {
        match end {
            End::Root => ROOT,
            End::MaxDepth => MAX_DEPTH,
            End::Cut(c) => CUT + c as usize,
        }
    }

    /// Adds a walk to counters only the calling thread writes.
    #[inline]
    fn add_own(&self, frames: usize, fast_steps: u64, lookups: u64, end: End) {
        let bump = |i: usize, v: u64| self.0[i].store(self.0[i].load(Relaxed) + v, Relaxed);
        bump(WALKS, 1);
        bump(FRAMES, frames as u64);
        bump(FAST_STEPS, fast_steps);
        bump(LOOKUPS, lookups);
        bump(Self::ends_at(end), 1);
    }

    /// Adds `other` (or a walk, through [`Counters::add_own`]'s shape) to shared counters.
    fn add_shared(&self, other: &Counters) {
        for (a, b) in self.0.iter().zip(&other.0) {
            a.fetch_add(b.load(Relaxed), Relaxed);
        }
    }
}

/// The calling thread's counters, registered in [`Stats::live`] while the thread lives.
struct Mine(Arc<Counters>);

impl Drop for Mine {
    fn drop(&mut self) {
        let s = stats();
        // Under the list's lock, so that a snapshot counts them exactly once.
        let mut live = s.live.lock().unwrap_or_else(|e| e.into_inner());
        s.retired.add_shared(&self.0);
        live.retain(|c| !Arc::ptr_eq(c, &self.0));
    }
}

thread_local! {
    static MINE: Mine = {
        let c = Arc::new(Counters::default());
        stats().live.lock().unwrap_or_else(|e| e.into_inner()).push(c.clone());
        Mine(c)
    };
}

static STATS: Stats = Stats {
    retired: Counters([const { AtomicU64::new(0) }; 6 + Cut::COUNT]),
    live: Mutex::new(Vec::new()),
    refreshes: AtomicU64::new(0),
};

/// The process-wide counters.
pub fn stats() -> &'static Stats {
    &STATS
}

impl Stats {
    /// Counts one walk (in the calling thread's counters).
    #[inline]
    pub(crate) fn walk(&self, frames: usize, fast_steps: u64, lookups: u64, end: End) {
        if MINE.try_with(|m| m.0.add_own(frames, fast_steps, lookups, end)).is_err() {
            // The thread is ending: straight into the shared sum.
            let one = Counters::default();
            one.add_own(frames, fast_steps, lookups, end);
            let _live = self.live.lock().unwrap_or_else(|e| e.into_inner());
            self.retired.add_shared(&one);
        }
    }

    /// Counts a module-list refresh.
    pub(crate) fn refresh(&self) {
        self.refreshes.fetch_add(1, Relaxed);
    }

    /// The counters now.
    pub fn snapshot(&self) -> StatsSnapshot {
        let sum = Counters::default();
        {
            let live = self.live.lock().unwrap_or_else(|e| e.into_inner());
            sum.add_shared(&self.retired);
            for c in live.iter() {
                sum.add_shared(c);
            }
        }
        let v = |i: usize| sum.0[i].load(Relaxed);
        let mut cut = [0; Cut::COUNT];
        for (i, c) in cut.iter_mut().enumerate() {
            *c = v(CUT + i);
        }
        StatsSnapshot {
            walks: v(WALKS),
            frames: v(FRAMES),
            fast_steps: v(FAST_STEPS),
            lookups: v(LOOKUPS),
            root: v(ROOT),
            max_depth: v(MAX_DEPTH),
            cut,
            refreshes: self.refreshes.load(Relaxed),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn walks_of_live_and_ended_threads_are_all_counted() {
        let before = stats().snapshot();
        stats().walk(3, 2, 1, End::Root);
        std::thread::spawn(|| {
            stats().walk(5, 0, 0, End::Cut(Cut::Unreadable));
            stats().walk(1, 1, 0, End::MaxDepth);
        })
        .join()
        .unwrap();
        let after = stats().snapshot();
        assert!(after.walks - before.walks >= 3);
        assert!(after.frames - before.frames >= 9);
        assert!(after.lookups > before.lookups);
        assert!(after.cut[Cut::Unreadable as usize] > before.cut[Cut::Unreadable as usize]);
        assert!(after.max_depth > before.max_depth && after.root > before.root);
    }
}
