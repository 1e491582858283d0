//! Per-device kernel timeline: busy time (the length of the exact union of kernel intervals),
//! idle gaps, and busy time per capture window, computed at the end from the
//! [`IntervalUnion`] that took the kernels in whatever order they arrived.
//!
//! An idle gap is a hole of the union between two kernels: no kernel of the device ran in it,
//! whatever order the records came in. Time before the first and after the last kernel is not a
//! gap, and with capture windows neither is a hole that leaves a window (the device was not
//! watched there). Gaps at least `threshold` long are counted and summed; the [`TOP_GAPS`]
//! largest are kept with the user's CPU sample taken last before each started (samples in
//! xpuprof's own code passed over and counted apart, [`LeadUp`]).

use crate::samples::{LeadUp, SampleIndex};
use crate::union::IntervalUnion;

/// Largest gaps listed per device.
pub const TOP_GAPS: usize = 5;

/// One idle gap.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Gap {
    /// End of the kernel before the gap.
    pub start: u64,
    /// Start of the kernel after it.
    pub end: u64,
    /// The user's CPU sample taken last at or before `start`, and the profiler's after it.
    pub cpu_before: LeadUp,
}

impl Gap {
    /// Length in ns.
    pub fn duration(&self) -> u64 {
        self.end - self.start
    }
}

/// Kernels of one device, as they arrive.
#[derive(Debug, Default)]
pub struct Timeline {
    union: IntervalUnion,
    /// Kernels seen.
    pub kernels: u64,
}

/// What [`Timeline::finish`] found.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct DeviceTimeline {
    /// Kernels seen.
    pub kernels: u64,
    /// Length of the union of kernel intervals (inside the capture windows, when there are).
    pub busy: u64,
    /// Gaps at least the threshold long.
    pub gaps_over: u64,
    /// Their total length, ns.
    pub gap_total: u64,
    /// The largest gaps, longest first.
    pub top: Vec<Gap>,
    /// Busy time inside each capture window, in the order of the windows given.
    pub window_busy: Vec<u64>,
    /// Kernels that arrived after their place had left the merge map (merged exactly).
    pub late: u64,
    /// Disjoint pieces of the union.
    pub pieces: u64,
}

impl Timeline {
    /// A timeline keeping `cap` pieces mergeable.
    pub fn new(cap: usize) -> Self {
        Self { union: IntervalUnion::new(cap), kernels: 0 }
    }

    /// Adds a kernel interval.
    #[inline]
    pub fn push(&mut self, start: u64, end: u64) {
        self.kernels += 1;
        self.union.insert(start, end);
    }

    /// Busy time, gaps and per-window busy time. `windows` are the capture windows (empty: the
    /// whole run was watched); `samples` must be finished.
    pub fn finish(self, windows: &[(u64, u64)], threshold: u64, samples: &SampleIndex) -> DeviceTimeline {
        let late = self.union.late();
        let watched = merged(windows);
        let mut per_window = WindowSweep::new(windows);
        let mut out = DeviceTimeline { kernels: self.kernels, late, ..DeviceTimeline::default() };
        let mut w = 0; // first merged window not ended before the current piece
        let mut prev_end: Option<u64> = None;
        for (s, e) in self.union.finish() {
            out.pieces += 1;
            per_window.add(s, e);
            out.busy += if watched.is_empty() { e - s } else { overlap(&watched, &mut w, s, e) };
            if let Some(p) = prev_end {
                if s - p >= threshold.max(1) && inside_one(&watched, p, s) {
                    out.gap(p, s);
                }
            }
            prev_end = Some(e);
        }
        out.window_busy = per_window.finish();
        for g in &mut out.top {
            g.cpu_before = samples.lead_up(g.start);
        }
        out
    }
}

impl DeviceTimeline {
    /// Counts a gap; keeps it if it is among the largest (ties: the earlier one).
    fn gap(&mut self, start: u64, end: u64) {
        let len = end - start;
        self.gaps_over += 1;
        self.gap_total += len;
        let pos = self.top.iter().position(|g| g.duration() < len).unwrap_or(self.top.len());
        if pos < TOP_GAPS {
            self.top.insert(pos, Gap { start, end, cpu_before: LeadUp::default() });
            self.top.truncate(TOP_GAPS);
        }
    }
}

/// The windows sorted by start, overlapping ones merged.
fn merged(windows: &[(u64, u64)]) -> Vec<(u64, u64)> {
    let mut sorted = windows.to_vec();
    sorted.sort_unstable();
    let mut out: Vec<(u64, u64)> = Vec::with_capacity(windows.len());
    for (s, e) in sorted {
        match out.last_mut() {
            Some(p) if s <= p.1 => p.1 = p.1.max(e),
            _ => out.push((s, e)),
        }
    }
    out
}

/// Length of `[s, e)` inside the disjoint sorted `watched`; `w` moves forward with `s`.
fn overlap(watched: &[(u64, u64)], w: &mut usize, s: u64, e: u64) -> u64 {
    while *w < watched.len() && watched[*w].1 <= s {
        *w += 1;
    }
    watched[*w..].iter().take_while(|x| x.0 < e).map(|x| e.min(x.1).saturating_sub(s.max(x.0))).sum()
}

/// True when no windows were given or one of them holds all of `[s, e]`.
fn inside_one(watched: &[(u64, u64)], s: u64, e: u64) -> bool {
    if watched.is_empty() {
        return true;
    }
    let i = watched.partition_point(|w| w.0 <= s);
    i > 0 && watched[i - 1].1 >= e
}

/// Busy time inside each (possibly overlapping) window: the union's busy time before each
/// window edge, found in one pass over the pieces.
struct WindowSweep<'a> {
    windows: &'a [(u64, u64)],
    /// Window edges, sorted, with the busy time before each once passed.
    edges: Vec<(u64, u64)>,
    next: usize,
    busy: u64,
}

impl<'a> WindowSweep<'a> {
    fn new(windows: &'a [(u64, u64)]) -> Self {
        let mut edges: Vec<(u64, u64)> = windows.iter().flat_map(|&(s, e)| [(s, 0), (e, 0)]).collect();
        edges.sort_unstable();
        edges.dedup();
        Self { windows, edges, next: 0, busy: 0 }
    }

    fn add(&mut self, s: u64, e: u64) {
        while self.next < self.edges.len() && self.edges[self.next].0 < e {
            let t = self.edges[self.next].0;
            self.edges[self.next].1 = self.busy + t.saturating_sub(s);
            self.next += 1;
        }
        self.busy += e - s;
    }

    fn finish(mut self) -> Vec<u64> {
        for edge in &mut self.edges[self.next..] {
            edge.1 = self.busy;
        }
        let at = |t: u64| {
            let i = self.edges.partition_point(|x| x.0 < t);
            self.edges[i].1
        };
        self.windows.iter().map(|&(s, e)| at(e) - at(s)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(kernels: &[(u64, u64)], windows: &[(u64, u64)], threshold: u64) -> DeviceTimeline {
        let mut t = Timeline::new(2);
        for &(s, e) in kernels {
            t.push(s, e);
        }
        t.finish(windows, threshold, &SampleIndex::default())
    }

    #[test]
    fn overlapping_and_out_of_order_kernels_merge() {
        let t = run(&[(100, 200), (150, 300), (1000, 1100), (500, 600), (590, 700)], &[], 250);
        // Busy: [100,300] + [500,700] + [1000,1100] = 200 + 200 + 100.
        assert_eq!(t.busy, 500);
        // Gaps: 300..500 (200, under threshold), 700..1000 (300).
        assert_eq!((t.gaps_over, t.gap_total), (1, 300));
        assert_eq!((t.top[0].start, t.top[0].end), (700, 1000));
    }

    #[test]
    fn a_late_kernel_fills_a_gap_already_seen() {
        // The kernel at 400..600 comes after the map moved the first pieces out.
        let t = run(&[(0, 100), (1000, 1100), (2000, 2100), (3000, 3100), (400, 600)], &[], 1);
        assert_eq!(t.busy, 600);
        assert!(t.late > 0);
        let gaps: Vec<(u64, u64)> = t.top.iter().map(|g| (g.start, g.end)).collect();
        assert_eq!(gaps, [(1100, 2000), (2100, 3000), (600, 1000), (100, 400)]);
    }

    #[test]
    fn windows_clip_busy_time_and_holes_between_windows_are_not_gaps() {
        let windows = [(0, 1000), (5000, 6000)];
        // 900..1100 crosses the first window's end; 1100..5200 is a hole between windows.
        let t = run(&[(100, 200), (900, 1100), (5200, 5300), (5500, 5600)], &windows, 100);
        assert_eq!(t.busy, 100 + 100 + 100 + 100);
        assert_eq!(t.window_busy, [200, 200]);
        let gaps: Vec<(u64, u64)> = t.top.iter().map(|g| (g.start, g.end)).collect();
        assert_eq!(gaps, [(200, 900), (5300, 5500)]);
    }

    #[test]
    fn overlapping_windows_each_get_their_busy_time() {
        let t = run(&[(0, 100), (200, 300)], &[(50, 250), (0, 1000)], 1);
        assert_eq!(t.window_busy, [100, 200]);
    }
}
