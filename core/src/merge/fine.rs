//! Lining up the clocks of several recordings finely, after the wall-clock pairs: one
//! collective ends at about the same moment on every rank (the last rank to arrive releases
//! them all), so the ends of the collectives two recordings both hold say how far their
//! clocks still disagree. Before the merge streams, each recording's collectives are read once
//! ([`scan`]: their ends, numbered per communicator as the sinks number them,
//! [`xpuprof_toolbox::collectives`]); each recording is then moved by the median of its ends'
//! differences from the reference's, and what is left of those differences is stated: the
//! largest and the median, never hidden.
//!
//! Which device work is a collective is the backend's to say ([`DeviceOp::collective`]); the
//! merge never looks at names.

use std::path::Path;

use xpuprof_sdk::hash::IdMap;
use xpuprof_sdk::model::{DeviceOp, Record};
use xpuprof_toolbox::collectives::{CollectiveKey, Numbering};

use super::align::Alignment;

/// The collective ends of one recording: for each collective, the mean end over the recording's
/// processes that ran it (they share one clock), session ns.
#[derive(Debug, Default)]
pub struct Ends {
    ends: IdMap<CollectiveKey, (u128, u32)>,
}

impl Ends {
    /// Whether it holds no collective.
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    fn add(&mut self, key: CollectiveKey, end: u64) {
        let e = self.ends.entry(key).or_default();
        e.0 += u128::from(end);
        e.1 += 1;
    }

    fn end(&self, key: &CollectiveKey) -> Option<i128> {
        self.ends.get(key).map(|(sum, n)| (*sum / u128::from(*n)) as i128)
    }
}

/// Reads the collective ends of the recording at `path` (a second reading of the archive, the
/// merge's first); `None` when it cannot be read (the merge reports why).
pub fn scan(path: &Path) -> Option<Ends> {
    let mut reader = xpuprof_archive::open(path).ok()?;
    let mut numbering = Numbering::default();
    let mut ends = Ends::default();
    let mut note = |op: &DeviceOp| {
        if let Some(key) = numbering.key(op) {
            ends.add(key, op.end);
        }
    };
    reader
        .replay_records(&mut |batch| {
            for r in batch.iter() {
                if let Record::DeviceOp(op) = r {
                    note(op);
                }
            }
        })
        .ok()?;
    Some(ends)
}

/// How a recording was moved to line up its collective ends with the reference's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fit {
    /// Nanoseconds added to the coarse shift (the median difference of the ends).
    pub delta_ns: i64,
    /// Collectives both recordings hold.
    pub matched: u64,
    /// The largest difference of those ends left after the shift, ns.
    pub residual_max_ns: u64,
    /// The median difference left, ns.
    pub residual_median_ns: u64,
}

/// The fit of `other`, shifted by `shift` ns, to `reference`, shifted by `reference_shift`;
/// `None` when they hold no collective in common.
pub fn fit(reference: &Ends, reference_shift: i128, other: &Ends, shift: i128) -> Option<Fit> {
    let mut diffs: Vec<i128> = other
        .ends
        .keys()
        .filter_map(|k| Some(reference.end(k)? + reference_shift - (other.end(k)? + shift)))
        .collect();
    if diffs.is_empty() {
        return None;
    }
    diffs.sort_unstable();
    let delta = diffs[diffs.len() / 2];
    let mut left: Vec<u64> = diffs.iter().map(|d| (d - delta).unsigned_abs() as u64).collect();
    left.sort_unstable();
    Some(Fit {
        delta_ns: delta as i64,
        matched: diffs.len() as u64,
        residual_max_ns: left.last().copied().unwrap_or(0),
        residual_median_ns: left[left.len() / 2],
    })
}

/// Moves each recording that holds collectives in common with the reference's (a recording
/// without a wall-clock pair too) by the median difference of their ends; returns how far
/// every shift, the reference's included, was raised so that none is negative.
pub fn refine(paths: &[&Path], alignments: &mut [Alignment], reference: usize) -> u64 {
    if paths.len() < 2 {
        return 0;
    }
    let ends: Vec<Option<Ends>> = paths.iter().map(|p| scan(p)).collect();
    let Some(re) = ends[reference].as_ref().filter(|e| !e.is_empty()) else { return 0 };
    let mut shifts: Vec<i128> = alignments.iter().map(|a| i128::from(a.shift_ns)).collect();
    for (i, e) in ends.iter().enumerate() {
        if i == reference {
            continue;
        }
        if let Some(f) = e.as_ref().and_then(|e| fit(re, 0, e, shifts[i])) {
            shifts[i] += i128::from(f.delta_ns);
            alignments[i].fine = Some(f);
        }
    }
    let lift = shifts.iter().min().map_or(0, |m| (-m).max(0));
    for (a, s) in alignments.iter_mut().zip(shifts) {
        a.shift_ns = u64::try_from(s + lift).unwrap_or(u64::MAX);
    }
    u64::try_from(lift).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use xpuprof_sdk::model::{CollectiveOp, StreamId};

    use super::*;

    fn ends(pid: u32, times: &[u64]) -> Ends {
        let mut n = Numbering::default();
        let mut e = Ends::default();
        for t in times {
            let op =
                DeviceOp::default().pid(pid).stream(StreamId(1)).collective(CollectiveOp::AllReduce).end(*t);
            e.add(n.key(&op).unwrap(), *t);
        }
        e
    }

    #[test]
    fn the_median_difference_of_the_ends_is_the_shift_and_what_is_left_is_stated() {
        // The other host's clock reads 1 ms less, with ±2 µs of jitter at the ends.
        let r = ends(1, &[10_000_000, 20_000_000, 30_000_000, 40_000_000]);
        let o = ends(2, &[9_000_000, 19_002_000, 28_998_000, 39_000_500]);
        let f = fit(&r, 0, &o, 0).unwrap();
        assert_eq!(f.matched, 4);
        assert!(f.delta_ns == 1_000_000 || f.delta_ns == 999_500, "{f:?}");
        assert!(f.residual_max_ns <= 2_500 && f.residual_median_ns <= 2_000, "{f:?}");
        // Already shifted by the coarse 990 µs: 10 µs are left to add.
        let f = fit(&r, 0, &o, 990_000).unwrap();
        assert!((9_500..=10_000).contains(&f.delta_ns), "{f:?}");
        assert_eq!(fit(&r, 0, &Ends::default(), 0), None);
    }
}
