//! Lining up the clocks of several recordings, coarsely: each archive holds the wall clock and
//! its host's session clock read together at the start of the recording. Shifting a recording's
//! timestamps by its wall-minus-session difference, less the reference's, puts every host's
//! events on the reference host's session clock, as far as the hosts' wall clocks agree.
//!
//! The residual error stated is what the pairs themselves know: the sum of both pairs'
//! read uncertainties. How far the hosts' wall clocks disagree (NTP keeps them within about a
//! millisecond on a LAN, PTP within microseconds) is not known here and is said so, never
//! hidden.

use xpuprof_archive::ClockPair;

use super::fine::Fit;

/// How one recording's timestamps are moved onto the merged session's clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Alignment {
    /// Nanoseconds added to every timestamp of the recording (never negative: the reference is
    /// the recording whose session clock runs furthest ahead of its wall clock).
    pub shift_ns: u64,
    /// The stated residual error of the shift, ns; `None` when the recording holds no clock
    /// pair (archives written before it was kept): it is merged unshifted and not aligned.
    pub error_ns: Option<u64>,
    /// How the ends of collectives moved it further (`fine.rs`), when it holds collectives
    /// in common with the reference; `shift_ns` includes it.
    pub fine: Option<Fit>,
}

/// The alignments of recordings with `pairs`, and the index of the reference (the first
/// recording with a pair whose wall-minus-session difference is least; `None` when none has
/// a pair).
pub fn align(pairs: &[Option<ClockPair>]) -> (Vec<Alignment>, Option<usize>) {
    let reference =
        pairs.iter().enumerate().filter_map(|(i, p)| p.map(|p| (p.epoch_offset(), i))).min().map(|(_, i)| i);
    let Some(r) = reference.and_then(|r| pairs[r].map(|p| (r, p))) else {
        return (pairs.iter().map(|_| Alignment { shift_ns: 0, error_ns: None, fine: None }).collect(), None);
    };
    let (ri, rp) = r;
    let aligned = pairs
        .iter()
        .enumerate()
        .map(|(i, p)| match p {
            None => Alignment { shift_ns: 0, error_ns: None, fine: None },
            Some(_) if i == ri => Alignment { shift_ns: 0, error_ns: Some(0), fine: None },
            Some(p) => Alignment {
                shift_ns: u64::try_from(p.epoch_offset() - rp.epoch_offset()).unwrap_or(u64::MAX),
                error_ns: Some(p.uncertainty_ns.saturating_add(rp.uncertainty_ns)),
                fine: None,
            },
        })
        .collect();
    (aligned, Some(ri))
}

impl Alignment {
    /// `t` moved onto the merged clock (0, "not known", stays 0).
    #[inline]
    pub fn at(&self, t: u64) -> u64 {
        if t == 0 {
            0
        } else {
            t.saturating_add(self.shift_ns)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pair(wall_ns: u64, session_ns: u64, uncertainty_ns: u64) -> Option<ClockPair> {
        Some(ClockPair { wall_ns, session_ns, uncertainty_ns })
    }

    #[test]
    fn a_host_whose_clock_is_offset_is_moved_by_that_offset_with_both_uncertainties() {
        // Host b booted 3 s after host a, so its session clock reads 3 s less at one moment.
        let a = pair(1_000_000_000_000, 10_000_000_000, 40);
        let b = pair(1_000_000_000_000, 7_000_000_000, 25);
        let (al, r) = align(&[a, b]);
        assert_eq!(r, Some(0));
        assert_eq!(al[0], Alignment { shift_ns: 0, error_ns: Some(0), fine: None });
        assert_eq!(al[1], Alignment { shift_ns: 3_000_000_000, error_ns: Some(65), fine: None });
        assert_eq!(al[1].at(7_000_000_001), 10_000_000_001);
        // The reference is the one whose session clock runs ahead: no shift is negative.
        let (al, r) = align(&[b, a]);
        assert_eq!((r, al[0].shift_ns, al[1].shift_ns), (Some(1), 3_000_000_000, 0));
    }

    #[test]
    fn a_recording_without_a_pair_is_merged_unshifted_and_said_to_be_unaligned() {
        let (al, r) = align(&[None, pair(5, 1, 1)]);
        assert_eq!(r, Some(1));
        assert_eq!(al[0], Alignment { shift_ns: 0, error_ns: None, fine: None });
        let (al, r) = align(&[None, None]);
        assert_eq!((r, al[1].error_ns), (None, None));
        assert_eq!(al[0].at(0), 0);
    }
}
