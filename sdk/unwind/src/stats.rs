//! How walks ended, counted process-wide (the agents report them; the eBPF source shows them).

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use crate::walk::{Cut, End};

/// Walk counters (all walks of this process, in-process and copied).
#[derive(Debug, Default)]
pub struct Stats {
    walks: AtomicU64,
    frames: AtomicU64,
    fast_steps: AtomicU64,
    root: AtomicU64,
    max_depth: AtomicU64,
    cut: [AtomicU64; Cut::COUNT],
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

static STATS: Stats = Stats {
    walks: AtomicU64::new(0),
    frames: AtomicU64::new(0),
    fast_steps: AtomicU64::new(0),
    root: AtomicU64::new(0),
    max_depth: AtomicU64::new(0),
    cut: [const { AtomicU64::new(0) }; Cut::COUNT],
    refreshes: AtomicU64::new(0),
};

/// The process-wide counters.
pub fn stats() -> &'static Stats {
    &STATS
}

impl Stats {
    /// Counts one walk.
    pub(crate) fn walk(&self, frames: usize, fast_steps: u64, end: End) {
        self.walks.fetch_add(1, Relaxed);
        self.frames.fetch_add(frames as u64, Relaxed);
        if fast_steps > 0 {
            self.fast_steps.fetch_add(fast_steps, Relaxed);
        }
        match end {
            End::Root => &self.root,
            End::MaxDepth => &self.max_depth,
            End::Cut(c) => &self.cut[c as usize],
        }
        .fetch_add(1, Relaxed);
    }

    /// Counts a module-list refresh.
    pub(crate) fn refresh(&self) {
        self.refreshes.fetch_add(1, Relaxed);
    }

    /// The counters now.
    pub fn snapshot(&self) -> StatsSnapshot {
        let mut cut = [0; Cut::COUNT];
        for (c, a) in cut.iter_mut().zip(&self.cut) {
            *c = a.load(Relaxed);
        }
        StatsSnapshot {
            walks: self.walks.load(Relaxed),
            frames: self.frames.load(Relaxed),
            fast_steps: self.fast_steps.load(Relaxed),
            root: self.root.load(Relaxed),
            max_depth: self.max_depth.load(Relaxed),
            cut,
            refreshes: self.refreshes.load(Relaxed),
        }
    }
}
