//! A kernel's PC samples per launch, batch by batch, with what the other batches say about each
//! instruction.
//!
//! [`launches`](super::launches) lays a kernel's samples, in fetch order, over its device work
//! in start order. A batch (one fetch of one kernel) that the order lays over the work of
//! several launch keys is shared by device time, every instruction alike. But the sampler hands a
//! busy kernel's samples over late and in batches (on the H200, CUPTI's came 0.3–0.6 s late, one
//! batch holding the tail of one phase's launches and all of the next phase's): where the
//! launch keys ran different code of the kernel, sharing each instruction alike puts one place's
//! lines under the other. So within such a batch, an entry (an instruction's line and stall)
//! that every batch laid over one launch key only gave to that key goes to it first, up to that
//! key's part of the batch, when it had at least as many samples there as in this batch (a few
//! stray samples are no evidence); the rest is shared by what is left of each key's part. Where
//! no entry was ever seen under one key alone (launches interleaved throughout), this is the
//! plain device-time share.

use std::collections::HashMap;
use std::hash::Hash;

use super::launches::{LaunchSpans, SampleOrder, SpanCounts};
use super::split;

/// A fetch's span, `(start, end)`.
type Span = (u64, u64);
/// Each entry (key, span) with its samples per launch key.
pub type Shares<'a, K, L> = HashMap<(K, Span), Vec<(&'a L, u64)>>;

/// Each entry of `counts` (key, span) with its samples per launch key (empty: the kernel has no
/// recorded device work); `group` gives an entry's kernel. Deterministic: the same records give
/// the same shares, whatever the maps' order.
pub fn assign<'a, K, G, L>(
    counts: &SpanCounts<K>,
    spans: &'a LaunchSpans<G, L>,
    group: impl Fn(&K) -> G,
) -> Shares<'a, K, L>
where
    K: Copy + Eq + Hash + Ord,
    G: Copy + Eq + Hash,
    L: Clone + Eq + Hash,
{
    let order = SampleOrder::of(counts, &group);
    let mut batches: HashMap<(G, Span), Vec<(K, u64)>> = HashMap::new();
    for (k, span, n) in counts.iter() {
        batches.entry((group(k), span)).or_default().push((*k, n));
    }
    let mut weights = HashMap::with_capacity(batches.len());
    // An entry's launch key and samples where every batch of it that went to one key only went
    // to that one (None: to several).
    let mut alone: HashMap<K, Option<(&'a L, u64)>> = HashMap::new();
    for (&(g, span), entries) in &batches {
        let (from, to, total) = order.place(g, span);
        let (w, _) = spans.weights(g, from, to, total);
        if let [(l, _)] = w[..] {
            for &(k, n) in entries {
                let seen = alone.entry(k).or_insert(Some((l, 0)));
                match seen {
                    Some((at, sum)) if *at == l => *sum += n,
                    _ => *seen = None,
                }
            }
        }
        weights.insert((g, span), w);
    }
    let mut out = HashMap::with_capacity(counts.len());
    for ((g, span), mut entries) in batches {
        let w = &weights[&(g, span)];
        entries.sort_unstable();
        let shares = if w.len() <= 1 {
            entries.iter().map(|&(_, n)| w.iter().map(|_| n).collect()).collect()
        } else {
            mixed(&entries, w, |k| alone.get(k).copied().flatten())
        };
        for ((k, _), s) in entries.iter().zip(shares) {
            out.insert((*k, span), w.iter().zip(s).map(|((l, _), n)| (*l, n)).collect());
        }
    }
    out
}

/// The shares of a batch laid over several launch keys (`w`: each key's device time in it): an
/// entry known under one key alone, with at least as many samples there as in this batch (a
/// few stray samples are no evidence), goes to that key first, up to its part of the batch.
fn mixed<'a, K, L: PartialEq>(
    entries: &[(K, u64)],
    w: &[(&'a L, u64)],
    alone: impl Fn(&K) -> Option<(&'a L, u64)>,
) -> Vec<Vec<u64>> {
    let total: u64 = entries.iter().map(|e| e.1).sum();
    let mut room = split(total, &w.iter().map(|x| x.1).collect::<Vec<_>>());
    let mut placed = vec![vec![0u64; w.len()]; entries.len()];
    for (i, (l, _)) in w.iter().enumerate() {
        let known = |j: usize| alone(&entries[j].0).is_some_and(|(at, n)| at == *l && n >= entries[j].1);
        let mine: Vec<usize> = (0..entries.len()).filter(|&j| known(j)).collect();
        let counts: Vec<u64> = mine.iter().map(|&j| entries[j].1).collect();
        let take = counts.iter().sum::<u64>().min(room[i]);
        for (&j, n) in mine.iter().zip(split(take, &counts)) {
            placed[j][i] = n;
        }
        room[i] -= take;
    }
    let basis: Vec<u64> = if room.iter().any(|&r| r > 0) { room } else { w.iter().map(|x| x.1).collect() };
    for (j, (_, n)) in entries.iter().enumerate() {
        let left = n - placed[j].iter().sum::<u64>();
        if left > 0 {
            for (i, p) in split(left, &basis).into_iter().enumerate() {
                placed[j][i] += p;
            }
        }
    }
    placed
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    /// Kernel 1 ran 30 ms from "a", then 10 ms from "b"; two batches of samples, the second
    /// holding a's last instructions ("load", seen under a alone in the first batch) and all of
    /// b's ("fma").
    fn two_phases() -> (LaunchSpans<u32, &'static str>, SpanCounts<(u32, &'static str)>) {
        let mut l = LaunchSpans::default();
        for i in 0..3 {
            l.add(1, &"a", i * 10 * MS, (i + 1) * 10 * MS);
        }
        l.add(1, &"b", 100 * MS, 110 * MS);
        let mut c = SpanCounts::default();
        c.add((1, "load"), 0, 50 * MS, 200);
        c.add((1, "load"), 50 * MS, 900 * MS, 100);
        c.add((1, "fma"), 50 * MS, 900 * MS, 100);
        (l, c)
    }

    fn get<'a>(m: &Shares<'_, (u32, &str), &'a str>, k: &str, s: (u64, u64)) -> Vec<(&'a str, u64)> {
        m[&((1, k), s)].iter().map(|(l, n)| (**l, *n)).collect()
    }

    #[test]
    fn a_batch_mixing_two_launches_keeps_each_ones_instructions_under_it() {
        let (l, c) = two_phases();
        let m = assign(&c, &l, |k| k.0);
        // The first 200 of 400 samples are a's work: all "load".
        assert_eq!(get(&m, "load", (0, 50 * MS)), [("a", 200)]);
        // The second batch (samples 200..400) is a's last 100 and b's 100 by device time: "load",
        // seen under a alone before, is a's; "fma" takes b's part.
        assert_eq!(get(&m, "load", (50 * MS, 900 * MS)), [("a", 100), ("b", 0)]);
        assert_eq!(get(&m, "fma", (50 * MS, 900 * MS)), [("a", 0), ("b", 100)]);
    }

    #[test]
    fn without_instructions_known_alone_a_batch_is_shared_by_device_time() {
        let (l, _) = two_phases();
        let mut c = SpanCounts::default();
        c.add((1, "load"), 0, 900 * MS, 400);
        let m = assign(&c, &l, |k| k.0);
        assert_eq!(get(&m, "load", (0, 900 * MS)), [("a", 300), ("b", 100)]);
        // A kernel without device work: no launch.
        let mut c = SpanCounts::default();
        c.add((2, "x"), 0, 1, 5);
        assert!(assign(&c, &l, |k| k.0)[&((2, "x"), (0, 1))].is_empty());
    }

    #[test]
    fn more_known_samples_than_their_launchs_part_spill_by_device_time() {
        let (l, _) = two_phases();
        let mut c = SpanCounts::default();
        c.add((1, "load"), 0, 50 * MS, 300);
        c.add((1, "load"), 50 * MS, 900 * MS, 200);
        c.add((1, "fma"), 50 * MS, 900 * MS, 100);
        let m = assign(&c, &l, |k| k.0);
        // Batch 2 is samples 300..600: a's part 150, b's 150; "load" (a's alone) fills a's 150,
        // its last 50 go where room is left: b.
        assert_eq!(get(&m, "load", (50 * MS, 900 * MS)), [("a", 150), ("b", 50)]);
        assert_eq!(get(&m, "fma", (50 * MS, 900 * MS)), [("a", 0), ("b", 100)]);
    }

    #[test]
    fn a_few_stray_samples_are_no_evidence() {
        let (l, mut c) = two_phases();
        // 3 "fma" samples in a's batch: fewer than its 100 in the mixed one, so not a's.
        c.add((1, "fma"), 0, 50 * MS, 3);
        let m = assign(&c, &l, |k| k.0);
        assert_eq!(get(&m, "fma", (50 * MS, 900 * MS)), [("a", 0), ("b", 100)]);
    }
}
