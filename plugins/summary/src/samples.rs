//! CPU samples kept by time, to name the CPU stack that ran last before each of a device's
//! largest idle gaps. The gaps are only known once the whole timeline is (work arrives out of
//! order), so samples of the whole run are kept, thinned evenly when there are too many.

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

/// Every `stride`-th sample of the run (1 until [`CAPACITY`] is reached, then doubling each
/// time it is reached again), sorted by time when looked up.
#[derive(Debug)]
pub struct SampleIndex {
    kept: Vec<SampleRef>,
    stride: u64,
    seen: u64,
    sorted: bool,
}

impl Default for SampleIndex {
    fn default() -> Self {
        Self { kept: Vec::new(), stride: 1, seen: 0, sorted: true }
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

    /// Sorts what was kept; call before [`SampleIndex::latest_at_or_before`].
    pub fn finish(&mut self) {
        self.sort();
    }

    /// The latest kept sample taken at or before `t` (the last in `(time, pid, tid, stack)`
    /// order among samples of the same time). Needs [`SampleIndex::finish`].
    pub fn latest_at_or_before(&self, t: u64) -> Option<SampleRef> {
        debug_assert!(self.sorted);
        let n = self.kept.partition_point(|s| s.time <= t);
        n.checked_sub(1).map(|i| self.kept[i])
    }

    /// 1 while every sample is kept; else every how many samples one is.
    pub fn stride(&self) -> u64 {
        self.stride
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use xpuprof_sdk::model::StackId;

    fn at(time: u64) -> SampleRef {
        SampleRef { time, pid: 1, tid: 1, stack: StackId(1) }
    }

    #[test]
    fn finds_the_latest_sample_before_a_time_in_any_arrival_order() {
        let mut ix = SampleIndex::default();
        for t in [50, 10, 30, 20] {
            ix.push(at(t));
        }
        ix.finish();
        assert_eq!(ix.latest_at_or_before(29).map(|s| s.time), Some(20));
        assert_eq!(ix.latest_at_or_before(30).map(|s| s.time), Some(30));
        assert_eq!(ix.latest_at_or_before(9), None);
    }

    #[test]
    fn long_runs_keep_every_other_sample_evenly() {
        let mut ix = SampleIndex::default();
        for t in 0..(CAPACITY as u64 * 3) {
            ix.push(at(t * 10));
        }
        ix.finish();
        assert_eq!(ix.stride(), 4);
        assert!(ix.kept.len() < CAPACITY);
        // Early and late parts of the run are kept at the same density.
        let early = ix.latest_at_or_before(1_000).unwrap().time;
        let late = ix.latest_at_or_before(CAPACITY as u64 * 25).unwrap().time;
        assert!(1_000 - early < 40 && CAPACITY as u64 * 25 - late < 40, "{early} {late}");
    }
}
