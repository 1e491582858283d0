//! Per-device kernel timeline: busy time (the union of kernel intervals) and idle gaps, computed
//! in one pass with bounded memory.
//!
//! Device operations do not arrive sorted by start time (streams and sources interleave), so
//! each device keeps a reorder buffer of the [`REORDER_WINDOW`] most recent kernel intervals in a
//! min-heap; the earliest is merged into the running busy interval when the buffer is full. A
//! kernel that arrives after intervals later than its start were already merged ("late") is
//! still added to the busy time where it extends the current interval, and counted in
//! `late_ops` so the user knows the gap list may be approximate.
//!
//! An idle gap is a stretch between two kernels on the same device where no kernel ran; time
//! before the first and after the last kernel is not a gap. Gaps at least `threshold` long are
//! counted and summed; the [`TOP_GAPS`] largest are kept with the CPU sample taken last before
//! each started.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use crate::cpu::{SampleRef, SampleRing};

/// Kernel intervals held back per device to put them in start order.
pub const REORDER_WINDOW: usize = 4096;
/// Largest gaps listed per device.
pub const TOP_GAPS: usize = 5;

/// One idle gap.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Gap {
    /// Last kernel end before the gap.
    pub start: u64,
    /// First kernel start after it.
    pub end: u64,
    /// CPU sample taken last at or before `start`, when samples exist.
    pub cpu_before: Option<SampleRef>,
}

impl Gap {
    /// Length in ns.
    pub fn duration(&self) -> u64 {
        self.end - self.start
    }
}

/// Busy time and gaps of one device.
#[derive(Debug, Default)]
pub struct Timeline {
    pending: BinaryHeap<Reverse<(u64, u64)>>,
    current: Option<(u64, u64)>,
    /// Sum of merged busy intervals, ns.
    pub busy: u64,
    /// Gaps at least the threshold long.
    pub gaps_over: u64,
    /// Their total length, ns.
    pub gap_total: u64,
    /// The largest gaps, longest first.
    pub top: Vec<Gap>,
    /// Kernels that arrived after later work was already merged.
    pub late_ops: u64,
    /// Kernels seen.
    pub kernels: u64,
}

impl Timeline {
    /// Adds a kernel interval.
    #[inline]
    pub fn push(&mut self, start: u64, end: u64, threshold: u64, ring: &SampleRing) {
        self.kernels += 1;
        self.pending.push(Reverse((start, end.max(start))));
        if self.pending.len() > REORDER_WINDOW {
            self.merge_earliest(threshold, ring);
        }
    }

    /// Merges everything still buffered; call once at the end.
    pub fn finish(&mut self, threshold: u64, ring: &SampleRing) {
        while !self.pending.is_empty() {
            self.merge_earliest(threshold, ring);
        }
        if let Some((s, e)) = self.current.take() {
            self.busy += e - s;
        }
    }

    fn merge_earliest(&mut self, threshold: u64, ring: &SampleRing) {
        let Some(Reverse((start, end))) = self.pending.pop() else { return };
        let Some((cs, ce)) = self.current else {
            self.current = Some((start, end));
            return;
        };
        if start < cs {
            self.late_ops += 1;
        }
        if start <= ce {
            self.current = Some((cs, ce.max(end)));
            return;
        }
        self.busy += ce - cs;
        self.current = Some((start, end));
        if start - ce >= threshold {
            self.record_gap(ce, start, ring);
        }
    }

    /// Counts a gap; keeps it (looking up the CPU sample before it) only if it is among the
    /// largest, so the sample search runs a few times per device, not once per gap.
    fn record_gap(&mut self, start: u64, end: u64, ring: &SampleRing) {
        let len = end - start;
        self.gaps_over += 1;
        self.gap_total += len;
        let pos = self.top.iter().position(|g| g.duration() < len).unwrap_or(self.top.len());
        if pos < TOP_GAPS {
            self.top.insert(pos, Gap { start, end, cpu_before: ring.latest_at_or_before(start) });
            self.top.truncate(TOP_GAPS);
        }
    }

    /// Offers a CPU sample that arrived after some gaps were found: it replaces a gap's
    /// `cpu_before` when it is later than the one found so far but still at or before the gap.
    #[inline]
    pub fn offer_sample(&mut self, s: SampleRef) {
        for g in &mut self.top {
            if s.time <= g.start && g.cpu_before.is_none_or(|b| s.time > b.time) {
                g.cpu_before = Some(s);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overlapping_and_out_of_order_kernels_merge() {
        let ring = SampleRing::default();
        let mut t = Timeline::default();
        for (s, e) in [(100, 200), (150, 300), (1000, 1100), (500, 600), (590, 700)] {
            t.push(s, e, 250, &ring);
        }
        t.finish(250, &ring);
        // Busy: [100,300] + [500,700] + [1000,1100] = 200 + 200 + 100.
        assert_eq!(t.busy, 500);
        // Gaps: 300..500 (200, under threshold), 700..1000 (300).
        assert_eq!((t.gaps_over, t.gap_total), (1, 300));
        assert_eq!((t.top[0].start, t.top[0].end, t.late_ops), (700, 1000, 0));
    }
}
