//! The lanes of one timeline (a stream, a thread's profiler overhead): which lane each slice goes
//! on so that slices on one lane never overlap, with a lane only where work really overlaps.
//!
//! Work comes mostly in start order ([`super::Reorder`]): it goes on the first lane free at its
//! start. Some comes later than the reorder window reaches (on the H200, a ResNet-18 training
//! loop's kernel records arrived thousands of operations late: CUPTI fills activity buffers
//! side by side and hands them over whole), so each lane also keeps its last [`KEPT`] slices by
//! start: late work goes on the first lane with a gap that holds it, and opens a lane only if
//! it overlaps work on every lane. Lanes by arrival end alone put 3,537 of that run's 15,040
//! slices on lanes no overlap needed.
//!
//! Slices are written as they are placed, so a late slice can be written after one that starts
//! exactly where it ends; a reader ordering events by time then by file order would see the
//! later slice begin before the earlier one ends. Such a gap is not taken.

use std::collections::VecDeque;

/// Slices each lane keeps to place late work (16 bytes each: 1 MiB per busy lane). Work that
/// starts before the oldest kept slice of a lane cannot be checked there.
pub const KEPT: usize = 1 << 16;

/// Where [`Lanes::place`] put a slice.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Placement {
    /// The lane (0 for the timeline's main lane).
    pub lane: usize,
    /// The lane was opened by this slice.
    pub opened: bool,
    /// Every lane was taken and no lane was left to open: the slice shares the last lane.
    pub shared: bool,
}

/// One lane: where its work ends and its recent slices.
#[derive(Debug, Default)]
struct Lane {
    /// The latest end of a slice on this lane.
    end: u64,
    /// Recent slices `(start, end)` of positive length, by start.
    kept: VecDeque<(u64, u64)>,
    /// The end of the latest slice dropped from `kept`: a gap before it cannot be checked.
    floor: u64,
    /// Work was put here over other work (no lane left): its gaps are not checked any more.
    shared: bool,
}

impl Lane {
    /// Whether `[start, end)` fits on this lane: after all its work, or, for late work, in a
    /// gap between kept slices that no slice starts exactly at the end of.
    fn fits(&self, start: u64, end: u64) -> Option<usize> {
        if start >= self.end {
            return Some(self.kept.len());
        }
        if start < self.floor || self.shared {
            return None;
        }
        let at = self.kept.partition_point(|&(s, _)| s < end);
        let before_ends = at.checked_sub(1).map_or(0, |i| self.kept[i].1);
        let touches = self.kept.get(at).is_some_and(|&(s, _)| s == end);
        (before_ends <= start && !touches).then_some(at)
    }

    fn put(&mut self, at: usize, start: u64, end: u64) {
        self.end = self.end.max(end);
        if end <= start {
            return;
        }
        if self.kept.len() == KEPT {
            if let Some((_, e)) = self.kept.pop_front() {
                self.floor = self.floor.max(e);
            }
        }
        let at = at.min(self.kept.len());
        self.kept.insert(at, (start, end));
    }
}

/// The lanes of one timeline.
#[derive(Debug, Default)]
pub struct Lanes {
    lanes: Vec<Lane>,
}

impl Lanes {
    /// Puts `[start, end)` on the first lane where it overlaps nothing, opening a lane (at most
    /// `max_lanes`) when it overlaps work on every lane. A zero-length slice goes on the first
    /// lane, nested in the slice running there if any: it never opens a lane.
    pub fn place(&mut self, start: u64, end: u64, max_lanes: usize) -> Placement {
        let at = Placement { lane: 0, opened: false, shared: false };
        if end <= start && !self.lanes.is_empty() {
            return at;
        }
        let found = self.lanes.iter().enumerate().find_map(|(i, l)| l.fits(start, end).map(|k| (i, k)));
        let (placement, k) = match found {
            Some((lane, k)) => (Placement { lane, ..at }, k),
            None if self.lanes.len() < max_lanes.max(1) => {
                self.lanes.push(Lane::default());
                (Placement { lane: self.lanes.len() - 1, opened: true, shared: false }, 0)
            }
            None => {
                let last = self.lanes.len() - 1;
                self.lanes[last].shared = true;
                let k = self.lanes[last].kept.partition_point(|&(s, _)| s < start);
                (Placement { lane: last, opened: false, shared: true }, k)
            }
        };
        self.lanes[placement.lane].put(k, start, end);
        placement
    }

    /// How many lanes the timeline has.
    pub fn len(&self) -> usize {
        self.lanes.len()
    }

    /// Whether no slice was placed yet.
    pub fn is_empty(&self) -> bool {
        self.lanes.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lanes_of(l: &mut Lanes, slices: &[(u64, u64)]) -> Vec<usize> {
        slices.iter().map(|&(s, e)| l.place(s, e, 16).lane).collect()
    }

    #[test]
    fn work_in_start_order_opens_lanes_only_for_real_overlap() {
        let mut l = Lanes::default();
        assert_eq!(lanes_of(&mut l, &[(0, 10), (5, 8), (10, 12), (12, 12), (11, 20)]), [0, 1, 0, 0, 1]);
        assert_eq!(l.len(), 2);
        let mut z = Lanes::default();
        assert_eq!(lanes_of(&mut z, &[(5, 8), (6, 6)]), [0, 0], "a zero-length slice nests");
        assert_eq!(z.len(), 1);
    }

    #[test]
    fn late_work_goes_in_a_gap_of_the_first_lane() {
        let mut l = Lanes::default();
        // A serial stream whose records came in two batches, the later half first.
        assert_eq!(lanes_of(&mut l, &[(100, 110), (120, 130), (140, 150)]), [0, 0, 0]);
        assert_eq!(lanes_of(&mut l, &[(0, 10), (20, 30), (111, 119), (131, 139)]), [0, 0, 0, 0]);
        assert_eq!(l.len(), 1, "a serial stream is one lane, whatever its arrival order");
        // Late work that really overlaps takes the next lane; one that overlaps only the start
        // of a slice too.
        assert_eq!(lanes_of(&mut l, &[(25, 40), (95, 105)]), [1, 1]);
        assert_eq!(l.len(), 2);
    }

    #[test]
    fn late_work_ending_where_a_written_slice_starts_takes_no_gap() {
        let mut l = Lanes::default();
        assert_eq!(lanes_of(&mut l, &[(100, 110), (120, 130)]), [0, 0]);
        // [110, 120) fills the gap exactly: it would be written after the slice starting at 120.
        assert_eq!(lanes_of(&mut l, &[(110, 120)]), [1]);
        // Starting where a written slice ends is fine.
        assert_eq!(lanes_of(&mut l, &[(0, 10), (10, 20)]), [0, 0]);
    }

    #[test]
    fn a_gap_older_than_the_kept_slices_is_not_taken() {
        let mut l = Lanes::default();
        for i in 0..KEPT as u64 + 1 {
            assert_eq!(l.place(10 * i + 10, 10 * i + 15, 16).lane, 0);
        }
        // The first slice [10, 15) was dropped: the gap before it cannot be checked.
        assert_eq!(l.place(0, 5, 16).lane, 1);
        assert_eq!(l.place(26, 29, 16).lane, 0, "a kept gap still is");
    }

    #[test]
    fn beyond_the_last_lane_work_shares_it() {
        let mut l = Lanes::default();
        let p: Vec<Placement> =
            [(0, 100), (0, 100), (10, 20), (50, 60)].map(|(s, e)| l.place(s, e, 2)).into();
        // [50, 60) overlaps [0, 100) on the shared lane: its gap after [10, 20) is not taken.
        assert_eq!(
            p.iter().map(|p| (p.lane, p.opened, p.shared)).collect::<Vec<_>>(),
            [(0, true, false), (1, true, false), (1, false, true), (1, false, true)]
        );
    }
}
