//! Which launches a kernel's PC samples came from, when the samples name only their kernel.
//!
//! A backend's continuous PC sampling aggregates a kernel's samples over all its launches: a
//! sample names its kernel and the span it was taken in (between two fetches of the sampler),
//! not its launch. The span is the finest range the data allows: a kernel's samples of one span
//! are shared among the launches whose device work overlapped that span, by the device time of
//! each in it. A kernel launched from two places at different times thus gets each place's
//! samples under it. Samples whose span no recorded work of their kernel overlaps (work not
//! recorded, or samples handed over late) are shared by the kernel's device time in the whole
//! process instead, as is every span when the kernel ran under one launch only.
//!
//! Memory is bounded: a kernel's consecutive executions under the same launch with gaps under
//! [`JOIN_NS`] are one run (its busy time and extent), and all of them while the kernel has run
//! under one launch only.

use std::collections::HashMap;
use std::hash::Hash;

/// Consecutive executions of a kernel under one launch key, at most this far apart, are one run.
pub const JOIN_NS: u64 = 20_000_000;

#[derive(Debug, Clone, Copy)]
struct Run {
    start: u64,
    end: u64,
    busy: u64,
    key: usize,
}

#[derive(Debug, Default)]
struct Kernel {
    runs: Vec<Run>,
    /// Device time per launch key in the whole process.
    totals: HashMap<usize, u64>,
    /// The longest run (how far before a span a run overlapping it may start).
    longest: u64,
}

/// How a span's samples were shared.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Basis {
    /// By the device work that overlapped the span.
    Span,
    /// By the kernel's device time in the whole process (no work overlapped the span).
    Process,
    /// The kernel has no recorded device work.
    Unknown,
}

/// The device work of each kernel (`G`: process and kernel) under each launch key (`K`), over time.
#[derive(Debug)]
pub struct LaunchSpans<G, K> {
    keys: Vec<K>,
    index: HashMap<K, usize>,
    kernels: HashMap<G, Kernel>,
}

impl<G, K> Default for LaunchSpans<G, K> {
    fn default() -> Self {
        Self { keys: Vec::new(), index: HashMap::new(), kernels: HashMap::new() }
    }
}

impl<G: Copy + Eq + Hash, K: Clone + Eq + Hash> LaunchSpans<G, K> {
    /// Kernel `kernel` ran from `start` to `end` under launch `key`.
    pub fn add(&mut self, kernel: G, key: &K, start: u64, end: u64) {
        let key = match self.index.get(key) {
            Some(&i) => i,
            None => {
                self.keys.push(key.clone());
                self.index.insert(key.clone(), self.keys.len() - 1);
                self.keys.len() - 1
            }
        };
        let (end, busy) = (end.max(start), end.saturating_sub(start));
        let k = self.kernels.entry(kernel).or_default();
        *k.totals.entry(key).or_default() += busy;
        // While the kernel has run under one launch only, one run holds it all (its spans need
        // no split); a second launch starts keeping runs apart.
        let alone = k.totals.len() == 1;
        // Kept in start order (work of other streams may arrive a little out of it); joined to
        // the run before it when that is the same launch's and close enough.
        let at = k.runs.partition_point(|r| r.start <= start);
        match at.checked_sub(1).map(|i| &mut k.runs[i]) {
            Some(r) if r.key == key && (alone || start <= r.end.saturating_add(JOIN_NS)) => {
                r.end = r.end.max(end);
                r.busy += busy;
                k.longest = k.longest.max(r.end - r.start);
            }
            _ => {
                k.runs.insert(at, Run { start, end, busy, key });
                k.longest = k.longest.max(end - start);
            }
        }
    }

    /// The launch keys among which `kernel`'s samples of the span `start..=end` (the backend's
    /// bound on when they were taken) are shared, with their weights (in a fixed order), and on
    /// what basis.
    pub fn weights(&self, kernel: G, start: u64, end: u64) -> (Vec<(&K, u64)>, Basis) {
        let Some(k) = self.kernels.get(&kernel) else { return (Vec::new(), Basis::Unknown) };
        let lo = start.min(end);
        let mut w: HashMap<usize, u64> = HashMap::new();
        if k.totals.len() > 1 {
            let first = k.runs.partition_point(|r| r.start < lo.saturating_sub(k.longest));
            for r in k.runs[first..].iter().take_while(|r| r.start <= end) {
                let overlap = r.end.min(end).saturating_sub(r.start.max(lo));
                let len = r.end - r.start;
                let part = if len == 0 {
                    u64::from(r.start >= lo && r.start <= end) * r.busy
                } else {
                    (u128::from(r.busy) * u128::from(overlap) / u128::from(len)) as u64
                };
                if part > 0 || (len == 0 && r.start >= lo && r.start <= end) {
                    *w.entry(r.key).or_default() += part.max(1);
                }
            }
        }
        let basis = if w.is_empty() { Basis::Process } else { Basis::Span };
        let from = if w.is_empty() { &k.totals } else { &w };
        let mut out: Vec<(&K, u64)> = from.iter().map(|(&i, &n)| (&self.keys[i], n)).collect();
        // A fixed order (by key index: first seen first), so a replay splits the same way.
        out.sort_by_key(|(key, _)| self.index[*key]);
        (out, basis)
    }
}

/// Most (key, span) entries a [`SpanCounts`] keeps; past it spans are coarsened.
pub const MAX_SPANS: usize = 1 << 20;
/// The first grain spans are coarsened to (ns).
const FIRST_GRAIN: u64 = 1_000_000_000;

/// Counts by key and by the span they were taken in (`(start, end)`), bounded: past
/// [`MAX_SPANS`] entries the spans are widened to a doubling grain (1 s, 2 s, …), so a very long
/// run keeps every count with coarser spans rather than growing without bound.
#[derive(Debug)]
pub struct SpanCounts<K> {
    counts: HashMap<(K, (u64, u64)), u64>,
    grain: u64,
}

impl<K> Default for SpanCounts<K> {
    fn default() -> Self {
        Self { counts: HashMap::new(), grain: 0 }
    }
}

impl<K: Copy + Eq + Hash> SpanCounts<K> {
    /// Adds `count` of `key` taken from `start` to `end`.
    pub fn add(&mut self, key: K, start: u64, end: u64, count: u64) {
        *self.counts.entry((key, coarse((start, end), self.grain))).or_default() += count;
        while self.counts.len() > MAX_SPANS {
            self.grain = if self.grain == 0 { FIRST_GRAIN } else { self.grain * 2 };
            let grain = self.grain;
            let mut merged: HashMap<(K, (u64, u64)), u64> = HashMap::new();
            for ((k, span), n) in self.counts.drain() {
                *merged.entry((k, coarse(span, grain))).or_default() += n;
            }
            self.counts = merged;
        }
    }

    /// Every (key, (start, end), count), in no order.
    pub fn iter(&self) -> impl Iterator<Item = (&K, (u64, u64), u64)> + '_ {
        self.counts.iter().map(|((k, span), &n)| (k, *span, n))
    }

    /// Entries kept.
    pub fn len(&self) -> usize {
        self.counts.len()
    }

    /// Nothing was added.
    pub fn is_empty(&self) -> bool {
        self.counts.is_empty()
    }
}

/// `span` widened to whole multiples of `grain` (unchanged when 0).
fn coarse((start, end): (u64, u64), grain: u64) -> (u64, u64) {
    if grain == 0 {
        return (start, end);
    }
    (start / grain * grain, end.div_ceil(grain) * grain)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    #[test]
    fn samples_go_to_the_launches_that_ran_in_their_span() {
        let mut l: LaunchSpans<u32, &str> = LaunchSpans::default();
        // Kernel 7: from "a" in 0..1 s, from "b" in 2..3 s (10 ms launches, 5 ms apart).
        for i in 0..60 {
            l.add(7, &"a", i * 15 * MS, i * 15 * MS + 10 * MS);
            l.add(7, &"b", 2000 * MS + i * 15 * MS, 2000 * MS + i * 15 * MS + 10 * MS);
        }
        l.add(8, &"c", 0, 5 * MS);
        let (w, basis) = l.weights(7, 500 * MS, 600 * MS);
        assert_eq!((w.iter().map(|(k, _)| **k).collect::<Vec<_>>(), basis), (vec!["a"], Basis::Span));
        let (w, _) = l.weights(7, 2500 * MS, 2600 * MS);
        assert_eq!(w.iter().map(|(k, _)| **k).collect::<Vec<_>>(), ["b"]);
        // A span no work overlapped: the whole process's device time.
        let (w, basis) = l.weights(7, 9000 * MS, 9100 * MS);
        assert_eq!((w.len(), basis), (2, Basis::Process));
        assert_eq!(w[0].1, w[1].1);
        // One launch key only: all of it, whatever the span.
        assert_eq!(l.weights(8, 9000 * MS, 9100 * MS).0, [(&"c", 5 * MS)]);
        assert_eq!(l.weights(9, 0, 1).1, Basis::Unknown);
    }

    #[test]
    fn runs_join_and_late_arrivals_are_sorted() {
        let mut l: LaunchSpans<u32, u8> = LaunchSpans::default();
        l.add(1, &2, 5000 * MS, 5001 * MS);
        l.add(1, &1, 0, MS);
        l.add(1, &1, 2 * MS, 3 * MS);
        assert_eq!(l.kernels[&1].runs.len(), 2, "the two close executions under 1 are one run");
        assert!(l.kernels[&1].runs[0].start < l.kernels[&1].runs[1].start, "in start order");
        let (w, basis) = l.weights(1, 0, 6000 * MS);
        assert_eq!(basis, Basis::Span);
        assert_eq!(w, [(&2, MS), (&1, 2 * MS)]);
    }

    #[test]
    fn span_counts_coarsen_past_the_bound_and_keep_every_count() {
        let mut c: SpanCounts<u8> = SpanCounts::default();
        let n = MAX_SPANS as u64 + 10;
        for i in 0..n {
            c.add(1, i * 100_000_000, (i + 1) * 100_000_000, 2);
        }
        assert!(c.len() <= MAX_SPANS, "{} entries", c.len());
        assert_eq!(c.iter().map(|(_, _, n)| n).sum::<u64>(), 2 * n);
        assert!(c.iter().all(|(_, (s, e), _)| s % 1_000_000_000 == 0 && e % 1_000_000_000 == 0));
    }
}
