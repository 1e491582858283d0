//! Which launches a kernel's PC samples came from, when the samples name only their kernel.
//!
//! A backend's continuous PC sampling aggregates a kernel's samples over all its launches: a
//! sample names its kernel and the fetch it came in, not its launch. What the data does keep is
//! order: the sampler hands samples over in the order it took them (however late: on a busy GPU
//! samples were seen delivered more than 600 ms after they were taken, so the fetch's time says
//! little). A kernel's samples, in fetch order, are laid over its device work in start order, by
//! device time ([`SampleOrder`], [`LaunchSpans::weights`]): each fetch's share of the samples
//! goes to the launches that ran that part of the kernel's work. A kernel launched from two
//! places in turn thus gets each place's samples under it. Where a kernel's samples cannot be
//! placed (none counted), they are shared by its device time in the whole process, as is every
//! share when the kernel ran under one launch only.
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
            }
            _ => {
                k.runs.insert(at, Run { start, end, busy, key });
            }
        }
    }

    /// The launch keys among which a share of `kernel`'s samples is split, with their weights
    /// (in a fixed order), and on what basis. The share is the samples `from..to` of the
    /// kernel's `total`, counted in the order they were fetched ([`SampleOrder`]); it is laid
    /// over the kernel's device work in start order, by device time, so the launches that ran
    /// that part of the kernel's work get it. The sampler hands samples over in the order it took
    /// them, however late: this holds where the time a fetch was made does not (a busy GPU's
    /// samples were seen delivered more than 600 ms after they were taken).
    pub fn weights(&self, kernel: G, from: u64, to: u64, total: u64) -> (Vec<(&K, u64)>, Basis) {
        let Some(k) = self.kernels.get(&kernel) else { return (Vec::new(), Basis::Unknown) };
        let mut w: HashMap<usize, u64> = HashMap::new();
        let busy: u64 = k.totals.values().sum();
        if k.totals.len() > 1 && total > 0 && busy > 0 {
            // The share as device time: [lo, hi) of the kernel's cumulative busy time.
            let scale = |n: u64| (u128::from(n) * u128::from(busy) / u128::from(total)) as u64;
            let (lo, hi) = (scale(from.min(to)), scale(to).max(scale(from) + 1));
            let mut at = 0u64;
            for r in &k.runs {
                let (s, e) = (at, at + r.busy);
                at = e;
                let part = e.min(hi).saturating_sub(s.max(lo));
                if part > 0 {
                    *w.entry(r.key).or_default() += part;
                }
                if at >= hi {
                    break;
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

/// Where each fetch's samples of a kernel fall among all the kernel's samples, in fetch order
/// (by the span's end, then start): `(from, to, total)` for [`LaunchSpans::weights`].
#[derive(Debug)]
pub struct SampleOrder<G> {
    places: HashMap<(G, (u64, u64)), (u64, u64)>,
    totals: HashMap<G, u64>,
}

impl<G: Copy + Eq + Hash> SampleOrder<G> {
    /// The order of `counts`, each key's kernel given by `group`.
    pub fn of<K: Copy + Eq + Hash>(counts: &SpanCounts<K>, group: impl Fn(&K) -> G) -> Self {
        let mut per: HashMap<G, HashMap<(u64, u64), u64>> = HashMap::new();
        for (k, span, n) in counts.iter() {
            *per.entry(group(k)).or_default().entry(span).or_default() += n;
        }
        let (mut places, mut totals) = (HashMap::new(), HashMap::new());
        for (g, spans) in per {
            let mut v: Vec<((u64, u64), u64)> = spans.into_iter().collect();
            v.sort_by_key(|&((start, end), _)| (end, start));
            let mut at = 0;
            for (span, n) in v {
                places.insert((g, span), (at, at + n));
                at += n;
            }
            totals.insert(g, at);
        }
        Self { places, totals }
    }

    /// `(from, to, total)` of kernel `g`'s samples of `span`.
    pub fn place(&self, g: G, span: (u64, u64)) -> (u64, u64, u64) {
        let (from, to) = self.places.get(&(g, span)).copied().unwrap_or((0, 0));
        (from, to, self.totals.get(&g).copied().unwrap_or(0))
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
    fn samples_go_to_the_launches_that_ran_their_part_of_the_work() {
        let mut l: LaunchSpans<u32, &str> = LaunchSpans::default();
        // Kernel 7: 60 launches from "a" in 0..1 s, then 20 from "b" in 2..3 s (10 ms each).
        for i in 0..60 {
            l.add(7, &"a", i * 15 * MS, i * 15 * MS + 10 * MS);
        }
        for i in 0..20 {
            l.add(7, &"b", 2000 * MS + i * 15 * MS, 2000 * MS + i * 15 * MS + 10 * MS);
        }
        l.add(8, &"c", 0, 5 * MS);
        // 800 samples in all: the first 600 are a's work, the last 200 b's, whenever fetched.
        fn names(w: Vec<(&&'static str, u64)>) -> Vec<&'static str> {
            w.iter().map(|(k, _)| **k).collect()
        }
        let (w, basis) = l.weights(7, 100, 500, 800);
        assert_eq!((names(w), basis), (vec!["a"], Basis::Span));
        assert_eq!(names(l.weights(7, 650, 800, 800).0), ["b"]);
        let (w, _) = l.weights(7, 500, 700, 800);
        assert_eq!(w, [(&"a", 100 * MS), (&"b", 100 * MS)]);
        // No samples counted: the whole process's device time.
        let (w, basis) = l.weights(7, 0, 0, 0);
        assert_eq!((w, basis), (vec![(&"a", 600 * MS), (&"b", 200 * MS)], Basis::Process));
        // One launch key only: all of it.
        assert_eq!(l.weights(8, 0, 10, 10).0, [(&"c", 5 * MS)]);
        assert_eq!(l.weights(9, 0, 1, 1).1, Basis::Unknown);
    }

    #[test]
    fn sample_order_follows_the_fetches() {
        let mut c: SpanCounts<(u32, u8)> = SpanCounts::default();
        c.add((7, 1), 200, 300, 5);
        c.add((7, 2), 200, 300, 5);
        c.add((7, 1), 0, 100, 30);
        c.add((8, 1), 0, 100, 4);
        let o = SampleOrder::of(&c, |k| k.0);
        assert_eq!(o.place(7, (0, 100)), (0, 30, 40));
        assert_eq!(o.place(7, (200, 300)), (30, 40, 40));
        assert_eq!(o.place(8, (0, 100)), (0, 4, 4));
    }

    #[test]
    fn runs_join_and_late_arrivals_are_sorted() {
        let mut l: LaunchSpans<u32, u8> = LaunchSpans::default();
        l.add(1, &2, 5000 * MS, 5001 * MS);
        l.add(1, &1, 0, MS);
        l.add(1, &1, 2 * MS, 3 * MS);
        assert_eq!(l.kernels[&1].runs.len(), 2, "the two close executions under 1 are one run");
        assert!(l.kernels[&1].runs[0].start < l.kernels[&1].runs[1].start, "in start order");
        // Work in start order: 1's 2 ms, then 2's 1 ms; the last third of the samples is 2's.
        let (w, basis) = l.weights(1, 20, 30, 30);
        assert_eq!((w, basis), (vec![(&2, MS)], Basis::Span));
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
