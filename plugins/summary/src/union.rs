//! The exact union of half-open intervals `[start, end)` inserted in any order: a device's busy
//! time is its length, its idle gaps are the holes between its pieces.
//!
//! Device work does not arrive in start order (streams, buffers and the correlator's wait for
//! launch stacks interleave it), and a kernel may arrive long after work that started later was
//! seen. Every interval is therefore kept until the end, in three places, and nothing is ever
//! approximated:
//!
//! - **open**: a sorted map of disjoint pieces (touching ones merged), at most `cap` of them,
//!   where a new interval merges with what it overlaps (`O(log n)`);
//! - **done**: when the map is over `cap`, its earliest pieces move to a delta-encoded log
//!   (two varints each: the hole before the piece and its length, 2 to 6 bytes for kernels a
//!   few microseconds apart), sorted and disjoint, which goes to a temporary file past 1 MiB
//!   ([`PieceLog`]);
//! - **late**: an interval starting before the end of the log (more than about `cap` pieces
//!   late) goes to a plain list (16 bytes each, counted) and is merged at [`IntervalUnion::finish`].
//!
//! Memory is bounded whatever the number of intervals or pieces: at most `cap` map entries
//! (about 30 bytes each), the log's buffer (1 MiB at most; past that the log's 2 to 6 bytes per
//! piece go to the temporary file), and 16 bytes per late interval.

use std::collections::BTreeMap;

use crate::piece_log::PieceLog;

/// Pieces kept mergeable per device by default (about 2 MiB of map at most).
pub const DEFAULT_CAP: usize = 65_536;

/// The union of the intervals inserted so far.
#[derive(Debug)]
pub struct IntervalUnion {
    open: BTreeMap<u64, u64>,
    cap: usize,
    done: PieceLog,
    late: Vec<(u64, u64)>,
}

impl Default for IntervalUnion {
    fn default() -> Self {
        Self::new(DEFAULT_CAP)
    }
}

impl IntervalUnion {
    /// A union that keeps at most `cap` pieces mergeable (at least 1).
    pub fn new(cap: usize) -> Self {
        Self::with_spill(cap, 0)
    }

    /// As [`IntervalUnion::new`], the log going to a file past `spill_at` bytes (0: 1 MiB).
    pub fn with_spill(cap: usize, spill_at: usize) -> Self {
        Self { open: BTreeMap::new(), cap: cap.max(1), done: PieceLog::new(spill_at), late: Vec::new() }
    }

    /// Adds `[start, end)` (an `end` before `start` is read as `start`: a zero-length interval
    /// is a point that still splits a hole).
    pub fn insert(&mut self, start: u64, end: u64) {
        let end = end.max(start);
        if self.done.pieces > 0 && start < self.done.end {
            self.late.push((start, end));
            return;
        }
        // Work mostly arrives in start order: it extends the last piece or starts a new one.
        if let Some(mut last) = self.open.last_entry() {
            if start >= *last.key() && start <= *last.get() {
                *last.get_mut() = end.max(*last.get());
                return;
            }
            if start > *last.get() {
                self.open.insert(start, end);
                if self.open.len() > self.cap {
                    self.retire();
                }
                return;
            }
        }
        let (mut s, mut e) = (start, end);
        if let Some((&ps, &pe)) = self.open.range(..=s).next_back() {
            if pe >= s {
                s = ps;
                e = e.max(pe);
                self.open.remove(&ps);
            }
        }
        while let Some((&ns, &ne)) = self.open.range(s..).next() {
            if ns > e {
                break;
            }
            e = e.max(ne);
            self.open.remove(&ns);
        }
        self.open.insert(s, e);
        if self.open.len() > self.cap {
            self.retire();
        }
    }

    /// Moves the earliest eighth of the map to the log.
    fn retire(&mut self) {
        for _ in 0..self.cap.div_ceil(8) {
            match self.open.pop_first() {
                Some((s, e)) => self.done.push(s, e),
                None => break,
            }
        }
    }

    /// Intervals that arrived after their place had left the map (merged exactly at the end).
    pub fn late(&self) -> u64 {
        self.late.len() as u64
    }

    /// Pieces of the union so far (before the late intervals are merged).
    pub fn pieces(&self) -> u64 {
        self.done.pieces + self.open.len() as u64
    }

    /// Bytes held in memory (an estimate of the map's nodes; exact for the log and the late
    /// list).
    pub fn bytes(&self) -> usize {
        self.open.len() * 32 + self.done.bytes() + self.late.capacity() * 16
    }

    /// Bytes of the log in its temporary file.
    pub fn spilled(&self) -> u64 {
        self.done.spilled()
    }

    /// The union's pieces, in order: disjoint, separated by holes of at least 1 ns.
    pub fn finish(mut self) -> impl Iterator<Item = (u64, u64)> {
        self.late.sort_unstable();
        let sorted = Merge {
            a: self.done.into_iter().chain(self.open).peekable(),
            b: self.late.into_iter().peekable(),
        };
        Coalesce { inner: sorted, pending: None }
    }
}

/// Two start-sorted interval streams as one start-sorted stream.
struct Merge<A: Iterator<Item = (u64, u64)>, B: Iterator<Item = (u64, u64)>> {
    a: std::iter::Peekable<A>,
    b: std::iter::Peekable<B>,
}

impl<A: Iterator<Item = (u64, u64)>, B: Iterator<Item = (u64, u64)>> Iterator for Merge<A, B> {
    type Item = (u64, u64);

    fn next(&mut self) -> Option<(u64, u64)> {
        match (self.a.peek(), self.b.peek()) {
            (Some(x), Some(y)) if y.0 < x.0 => self.b.next(),
            (Some(_), _) => self.a.next(),
            (None, _) => self.b.next(),
        }
    }
}

/// A start-sorted interval stream with overlapping and touching intervals merged.
struct Coalesce<I: Iterator<Item = (u64, u64)>> {
    inner: I,
    pending: Option<(u64, u64)>,
}

impl<I: Iterator<Item = (u64, u64)>> Iterator for Coalesce<I> {
    type Item = (u64, u64);

    fn next(&mut self) -> Option<(u64, u64)> {
        loop {
            let Some((s, e)) = self.inner.next() else { return self.pending.take() };
            match &mut self.pending {
                Some(p) if s <= p.1 => p.1 = p.1.max(e),
                Some(_) => return self.pending.replace((s, e)),
                None => self.pending = Some((s, e)),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The union computed the plain way: sort everything, merge.
    fn reference(intervals: &[(u64, u64)]) -> Vec<(u64, u64)> {
        let mut v: Vec<(u64, u64)> = intervals.iter().map(|&(s, e)| (s, e.max(s))).collect();
        v.sort_unstable();
        let mut out: Vec<(u64, u64)> = Vec::new();
        for (s, e) in v {
            match out.last_mut() {
                Some(p) if s <= p.1 => p.1 = p.1.max(e),
                _ => out.push((s, e)),
            }
        }
        out
    }

    /// A scrambled stream of kernels: bursts on several streams with holes, some overlapping.
    fn scrambled(n: u64, seed: u64) -> Vec<(u64, u64)> {
        let mut x = seed;
        let mut rnd = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let mut v: Vec<(u64, u64)> = (0..n)
            .map(|i| {
                let start = i * 1_000 + rnd() % 700;
                (start, start + rnd() % 1_500)
            })
            .collect();
        // Move a fifth of them far away from their place in the stream.
        for i in 0..v.len() / 5 {
            let j = (rnd() % v.len() as u64) as usize;
            v.swap(i * 5, j);
        }
        v
    }

    #[test]
    fn the_union_is_exact_whatever_the_order_and_the_cap() {
        for (cap, seed) in [(1, 7), (4, 11), (64, 13), (DEFAULT_CAP, 17)] {
            let input = scrambled(20_000, seed);
            let mut u = IntervalUnion::new(cap);
            for &(s, e) in &input {
                u.insert(s, e);
            }
            if cap < 64 {
                assert!(u.late() > 0, "cap {cap}: the test should exercise late intervals");
            }
            let got: Vec<(u64, u64)> = u.finish().collect();
            assert_eq!(got, reference(&input), "cap {cap}");
        }
    }

    #[test]
    fn touching_intervals_merge_and_points_split_holes() {
        let mut u = IntervalUnion::new(2);
        for (s, e) in [(10, 20), (20, 30), (50, 50), (40, 45), (0, 5), (5, 6)] {
            u.insert(s, e);
        }
        assert_eq!(u.finish().collect::<Vec<_>>(), [(0, 6), (10, 30), (40, 45), (50, 50)]);
    }

    #[test]
    fn the_union_is_exact_when_its_log_goes_to_a_file() {
        let input = scrambled(50_000, 19);
        let mut u = IntervalUnion::with_spill(16, 64);
        for &(s, e) in &input {
            u.insert(s, e);
        }
        assert!(u.spilled() > 0 && u.late() > 0, "the test should write the file and have late intervals");
        assert_eq!(u.finish().collect::<Vec<_>>(), reference(&input));
    }

    #[test]
    fn a_long_run_holds_a_bounded_buffer() {
        let mut u = IntervalUnion::new(1024);
        for i in 0..2_000_000u64 {
            u.insert(i * 10_000, i * 10_000 + 3_000);
        }
        assert_eq!(u.pieces(), 2_000_000);
        // 2 + 2 bytes a piece: 8 MB of log, all but the last chunk in the file.
        assert!(u.spilled() > 7_000_000, "{} bytes in the file", u.spilled());
        assert!(u.bytes() < 2 * crate::piece_log::CHUNK + 1024 * 32, "{} bytes in memory", u.bytes());
        assert_eq!(u.finish().map(|(s, e)| e - s).sum::<u64>(), 6_000_000_000);
    }

    #[test]
    fn the_log_takes_a_few_bytes_per_piece() {
        let mut u = IntervalUnion::new(1024);
        for i in 0..100_000u64 {
            u.insert(i * 10_000, i * 10_000 + 3_000);
        }
        assert_eq!(u.pieces(), 100_000);
        // 2 + 2 bytes a piece in the log (its vector may hold up to twice that), 1024 map entries.
        assert!(u.bytes() < 100_000 * 8 + 1024 * 32, "{} bytes", u.bytes());
        assert_eq!(u.finish().map(|(s, e)| e - s).sum::<u64>(), 300_000_000);
    }
}
