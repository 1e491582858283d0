//! Lining up the clocks of several recordings finely, after the wall-clock pairs, by the
//! collectives they share. Before the merge streams, each recording's collectives are read once
//! ([`scan`], numbered per communicator as the sinks number them,
//! [`xpuprof_toolbox::collectives`]). Only collectives in which every rank waits for every
//! other count (all-reduce, all-gather, reduce-scatter, all-to-all: a broadcast's root may end
//! long before its receivers). For those, two facts hold whatever the clocks:
//! - one collective ends at about the same moment on every rank (the last rank to arrive
//!   releases them all): the median difference of the two recordings' ends is the estimate;
//! - no rank ends a collective before every rank has started it: each collective bounds the
//!   offset, the last arrival of each side before the first end of the other, and all of them
//!   together give an interval the true offset lies in. The estimate is kept inside it, and the
//!   error stated is its distance to the interval's far end: a bound, not a spread. An empty
//!   interval means the two recordings' numbers do not match (a rank missed a collective):
//!   the recording keeps its coarse alignment, and the merge says why.
//!
//! Recordings of the same host share its clock: they keep the coarse alignment, and the merge
//! states how far their collectives' ends disagree (on one machine, what the devices'
//! timestamps disagree by). Which device work is a collective is the backend's to say
//! ([`DeviceOp::collective`]); the merge never looks at names.

use std::path::Path;

use xpuprof_sdk::hash::IdMap;
use xpuprof_sdk::model::{DeviceOp, Record};
use xpuprof_toolbox::collectives::{synchronizes, CollectiveKey, Numbering};

use super::align::Alignment;

/// One collective as one recording saw it: over its processes that ran it (they share one
/// clock), the mean end, the first end and the last start, session ns.
#[derive(Debug, Clone, Copy)]
struct Seen {
    end_sum: u128,
    n: u32,
    first_end: u64,
    last_start: u64,
}

/// The synchronizing collectives of one recording.
#[derive(Debug, Default)]
pub struct Ends {
    seen: IdMap<CollectiveKey, Seen>,
}

impl Ends {
    /// Whether it holds no collective.
    pub fn is_empty(&self) -> bool {
        self.seen.is_empty()
    }

    fn add(&mut self, key: CollectiveKey, start: u64, end: u64) {
        let first = Seen { end_sum: 0, n: 0, first_end: end, last_start: start };
        let e = self.seen.entry(key).or_insert(first);
        e.end_sum += u128::from(end);
        e.n += 1;
        e.first_end = e.first_end.min(end);
        e.last_start = e.last_start.max(start);
    }
}

/// Reads the collectives of the recording at `path` (a second reading of the archive, the
/// merge's first); `None` when it cannot be read (the merge reports why).
pub fn scan(path: &Path) -> Option<Ends> {
    let mut reader = xpuprof_archive::open(path).ok()?;
    let mut numbering = Numbering::default();
    let mut ends = Ends::default();
    let mut note = |op: &DeviceOp| {
        if let Some(key) = numbering.key(op) {
            if synchronizes(op.collective) {
                ends.add(key, op.start, op.end);
            }
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

/// What the collectives said about a recording's clock against the reference's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fit {
    /// Nanoseconds added to the coarse shift (0 when not applied).
    pub delta_ns: i64,
    /// Collectives both recordings hold.
    pub matched: u64,
    /// The most the shift can be off: the distance from it to the far end of the interval the
    /// collectives' arrivals and ends bound the offset to.
    pub error_ns: u64,
    /// The median disagreement of the collectives' ends after the shift, ns.
    pub residual_median_ns: u64,
    /// How it was used.
    pub use_: FitUse,
}

/// How a fit was used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FitUse {
    /// The recording was moved by it.
    Applied,
    /// Not applied: the recording is of the reference's host, whose clock it shares; the fit
    /// says how far their devices' timestamps disagree (`delta_ns` as it would have been).
    SameHost,
    /// Not applied: no offset agrees with every collective (their numbers do not match).
    Contradicts,
}

/// The fit of `other`, moved by `shift`, to `reference`; `None` when they hold no collective
/// in common.
pub fn fit(reference: &Ends, other: &Ends, shift: i128) -> Option<Fit> {
    let (mut lo, mut hi) = (i128::MIN, i128::MAX);
    let mut diffs = Vec::new();
    for (k, o) in &other.seen {
        let Some(r) = reference.seen.get(k) else { continue };
        let mean = |s: &Seen| (s.end_sum / u128::from(s.n)) as i128;
        diffs.push(mean(r) - (mean(o) + shift));
        // Every rank started before any ended: o.last_start + shift + d <= r.first_end and
        // r.last_start <= o.first_end + shift + d.
        hi = hi.min(i128::from(r.first_end) - i128::from(o.last_start) - shift);
        lo = lo.max(i128::from(r.last_start) - i128::from(o.first_end) - shift);
    }
    if diffs.is_empty() {
        return None;
    }
    diffs.sort_unstable();
    let median = diffs[diffs.len() / 2];
    let contradicts = lo > hi;
    let delta = if contradicts { 0 } else { median.clamp(lo, hi) };
    let mut left: Vec<u64> = diffs.iter().map(|d| (d - delta).unsigned_abs() as u64).collect();
    left.sort_unstable();
    Some(Fit {
        delta_ns: delta as i64,
        matched: diffs.len() as u64,
        error_ns: if contradicts { u64::MAX } else { (delta - lo).max(hi - delta) as u64 },
        residual_median_ns: left[left.len() / 2],
        use_: if contradicts { FitUse::Contradicts } else { FitUse::Applied },
    })
}

/// Moves each recording that holds collectives in common with the reference's (a recording
/// without a wall-clock pair too) by what they say, unless it is of the reference's host
/// (`hosts`); returns how far every shift, the reference's included, was raised so that none
/// is negative.
pub fn refine(paths: &[&Path], hosts: &[&str], alignments: &mut [Alignment], reference: usize) -> u64 {
    if paths.len() < 2 {
        return 0;
    }
    // One thread per recording: the merge's wall time, not its CPU time, shrinks.
    let ends: Vec<Option<Ends>> = std::thread::scope(|s| {
        let scans: Vec<_> = paths.iter().map(|p| s.spawn(move || scan(p))).collect();
        scans.into_iter().map(|h| h.join().ok().flatten()).collect()
    });
    let Some(re) = ends[reference].as_ref().filter(|e| !e.is_empty()) else { return 0 };
    let mut shifts: Vec<i128> = alignments.iter().map(|a| i128::from(a.shift_ns)).collect();
    for (i, e) in ends.iter().enumerate() {
        if i == reference {
            continue;
        }
        let Some(mut f) = e.as_ref().and_then(|e| fit(re, e, shifts[i])) else { continue };
        let same_host =
            !hosts[i].is_empty() && hosts[i] == hosts[reference] && alignments[i].error_ns.is_some();
        if same_host && f.use_ == FitUse::Applied {
            f.use_ = FitUse::SameHost;
        }
        if f.use_ == FitUse::Applied {
            shifts[i] += i128::from(f.delta_ns);
        }
        alignments[i].fine = Some(f);
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

    /// A recording of one rank: its collectives' (start, end).
    fn ends(pid: u32, times: &[(u64, u64)]) -> Ends {
        let mut n = Numbering::default();
        let mut e = Ends::default();
        for (s, t) in times {
            let op = DeviceOp::default().pid(pid).stream(StreamId(1)).collective(CollectiveOp::AllReduce);
            e.add(n.key(&op).unwrap(), *s, *t);
        }
        e
    }

    #[test]
    fn the_median_end_difference_kept_within_what_the_arrivals_allow_with_that_bound_as_the_error() {
        // The other host's clock reads 1 ms less; its ends jitter by up to 2 µs; each
        // collective lasts 50 µs after its last arrival, one only 5 µs.
        let r = ends(1, &[(9_950_000, 10_000_000), (19_950_000, 20_000_000), (29_995_000, 30_000_000)]);
        let o = ends(2, &[(8_950_000, 9_000_000), (18_951_000, 19_002_000), (28_995_000, 28_998_000)]);
        let f = fit(&r, &o, 0).unwrap();
        assert_eq!((f.matched, f.use_), (3, FitUse::Applied));
        assert_eq!(f.delta_ns, 1_000_000, "{f:?}");
        assert!(f.error_ns <= 10_000 && f.error_ns >= 1_000, "{f:?}");
        // Already shifted by the coarse 990 µs: 10 µs are left to add.
        assert_eq!(fit(&r, &o, 990_000).unwrap().delta_ns, 10_000);
        assert_eq!(fit(&r, &Ends::default(), 0), None);
    }

    #[test]
    fn collectives_that_no_offset_fits_leave_the_recording_where_the_pairs_put_it() {
        // The second recording missed a collective: its #2 is the reference's #3.
        let r = ends(1, &[(0, 1_000), (10_000, 11_000), (20_000, 21_000)]);
        let o = ends(2, &[(0, 1_000), (20_000, 21_000)]);
        let f = fit(&r, &o, 0).unwrap();
        assert_eq!((f.use_, f.delta_ns), (FitUse::Contradicts, 0));
    }
}
