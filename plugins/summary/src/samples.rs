//! CPU samples kept by time, to name the CPU stack that ran last before each of a device's
//! largest idle gaps. The gaps are only known once the whole timeline is (work arrives out of
//! order), so samples of the whole run are kept, thinned evenly when there are too many.
//!
//! The stack named is the user's: samples in xpuprof's own code (an agent in the target,
//! [`crate::own_code`]) are the profiler's cost, so the look-up passes over them and counts them
//! apart ([`LeadUp`]).

use xpuprof_sdk::hash::IdSet;
use xpuprof_sdk::model::StackId;

/// Samples kept at most (24 bytes each: 6 MiB).
pub const CAPACITY: usize = 1 << 18;

/// A CPU sample as remembered for idle gaps.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct SampleRef {
    /// Sample time.
    pub time: u64,
    /// Process.
    pub pid: u32,
    /// Thread.
    pub tid: u32,
    /// Stack.
    pub stack: xpuprof_sdk::model::StackId,
}

/// Kept samples looked back over past xpuprof's own ones before giving up on a user sample.
pub const LOOK_BACK: usize = 1 << 16;

/// What the CPU did before a time: the user's latest sample and the profiler's samples after it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LeadUp {
    /// The latest kept sample at or before the time outside xpuprof's own code.
    pub user: Option<SampleRef>,
    /// Samples in xpuprof's own code after `user` (after the look-back without one), up to the
    /// time; estimated (kept ones × stride) once samples are thinned.
    pub profiler: u64,
}

/// Every `stride`-th sample of the run (1 until [`CAPACITY`] is reached, then doubling each
/// time it is reached again), sorted by time when looked up.
#[derive(Debug)]
pub struct SampleIndex {
    kept: Vec<SampleRef>,
    stride: u64,
    seen: u64,
    sorted: bool,
    /// Stacks that hold xpuprof's own code.
    own: IdSet<StackId>,
}

impl Default for SampleIndex {
    fn default() -> Self {
        Self { kept: Vec::new(), stride: 1, seen: 0, sorted: true, own: IdSet::default() }
    }
}

impl SampleIndex {
    /// Remembers a sample (or skips it, past the capacity).
    #[inline]
    pub fn push(&mut self, s: SampleRef) {
        self.seen += 1;
        if self.seen % self.stride != 0 {
            return;
        }
        self.sorted &= self.kept.last().is_none_or(|l| *l <= s);
        self.kept.push(s);
        if self.kept.len() >= CAPACITY {
            self.sort();
            let mut i = 0;
            self.kept.retain(|_| {
                i += 1;
                i % 2 == 0
            });
            self.stride *= 2;
        }
    }

    fn sort(&mut self) {
        if !self.sorted {
            self.kept.sort_unstable();
            self.sorted = true;
        }
    }

    /// Sorts what was kept and takes the stacks that hold xpuprof's own code; call before
    /// [`SampleIndex::lead_up`].
    pub fn finish(&mut self, own: IdSet<StackId>) {
        self.sort();
        self.own = own;
    }

    /// The latest kept sample at or before `t` outside xpuprof's own code (the last in `(time,
    /// pid, tid, stack)` order among samples of the same time), and the profiler's samples
    /// after it. Needs [`SampleIndex::finish`].
    pub fn lead_up(&self, t: u64) -> LeadUp {
        debug_assert!(self.sorted);
        let n = self.kept.partition_point(|s| s.time <= t);
        let mut profiler = 0;
        for s in self.kept[..n].iter().rev().take(LOOK_BACK) {
            if !self.own.contains(&s.stack) {
                return LeadUp { user: Some(*s), profiler: profiler * self.stride };
            }
            profiler += 1;
        }
        LeadUp { user: None, profiler: profiler * self.stride }
    }

    /// 1 while every sample is kept; else every how many samples one is.
    pub fn stride(&self) -> u64 {
        self.stride
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(time: u64) -> SampleRef {
        SampleRef { time, pid: 1, tid: 1, stack: StackId(1) }
    }

    fn latest(ix: &SampleIndex, t: u64) -> Option<u64> {
        ix.lead_up(t).user.map(|s| s.time)
    }

    #[test]
    fn finds_the_latest_sample_before_a_time_in_any_arrival_order() {
        let mut ix = SampleIndex::default();
        for t in [50, 10, 30, 20] {
            ix.push(at(t));
        }
        ix.finish(IdSet::default());
        assert_eq!(latest(&ix, 29), Some(20));
        assert_eq!(latest(&ix, 30), Some(30));
        assert_eq!(latest(&ix, 9), None);
    }

    #[test]
    fn the_users_sample_is_found_past_the_profilers_own() {
        let mut ix = SampleIndex::default();
        ix.push(at(10));
        // Two samples in xpuprof's own code (stack 2) after the user's at 10.
        for t in [20, 30] {
            ix.push(SampleRef { stack: StackId(2), ..at(t) });
        }
        ix.finish([StackId(2)].into_iter().collect());
        assert_eq!(ix.lead_up(35), LeadUp { user: Some(at(10)), profiler: 2 });
        assert_eq!(ix.lead_up(25), LeadUp { user: Some(at(10)), profiler: 1 });
        assert_eq!(ix.lead_up(10), LeadUp { user: Some(at(10)), profiler: 0 });
        let mut only_own = SampleIndex::default();
        only_own.push(SampleRef { stack: StackId(2), ..at(5) });
        only_own.finish([StackId(2)].into_iter().collect());
        assert_eq!(only_own.lead_up(9), LeadUp { user: None, profiler: 1 });
    }

    #[test]
    fn long_runs_keep_every_other_sample_evenly() {
        let mut ix = SampleIndex::default();
        for t in 0..(CAPACITY as u64 * 3) {
            ix.push(at(t * 10));
        }
        ix.finish(IdSet::default());
        assert_eq!(ix.stride(), 4);
        assert!(ix.kept.len() < CAPACITY);
        // Early and late parts of the run are kept at the same density.
        let early = latest(&ix, 1_000).unwrap();
        let late = latest(&ix, CAPACITY as u64 * 25).unwrap();
        assert!(1_000 - early < 40 && CAPACITY as u64 * 25 - late < 40, "{early} {late}");
    }
}
