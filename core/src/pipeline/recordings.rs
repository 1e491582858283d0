//! The model's submission link (docs/architecture.md, "The model schema"): work recorded once and executed many times (a
//! graph's nodes, a command list submitted again) names the call that recorded it in
//! `DeviceOp::submission.record`; this table joins it to that call's launch stack, which the
//! correlator puts in `DeviceOp::recorded` beside the executing launch in `DeviceOp::launch`.
//!
//! Recording calls come in as launch sites marked `recording`. They are kept for the whole
//! session, not the few seconds an ordinary launch stays joinable: a graph captured at start-up
//! may be replayed an hour later. Memory is bounded by [`MAX_RECORDINGS`] (a graph node or an
//! append is one entry); beyond it the oldest recording is forgotten and counted.

use std::collections::VecDeque;

use xpuprof_sdk::hash::IdMap;
use xpuprof_sdk::model::*;

/// Most recording calls kept at once.
pub const MAX_RECORDINGS: usize = 1 << 20;

/// What the submission link counted.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RecordingStats {
    /// Launch sites marked as recording calls.
    pub recordings: u64,
    /// Recording calls forgotten because [`MAX_RECORDINGS`] were held.
    pub recordings_evicted: u64,
    /// Device operations that ran from a recording (they carry a submission link).
    pub from_recordings: u64,
    /// Of those, joined to the call that recorded them.
    pub recorded_joined: u64,
    /// Of those, naming a recording call that was never seen (or was forgotten).
    pub recorded_unmatched: u64,
    /// Of those, whose source did not know which call recorded them.
    pub recorded_unknown: u64,
}

/// Recording calls by correlation key, oldest first.
#[derive(Debug, Default)]
pub struct Recordings {
    sites: IdMap<CorrelationKey, LaunchRef>,
    order: VecDeque<CorrelationKey>,
    cap: usize,
    stats: RecordingStats,
}

impl Recordings {
    /// A table holding at most `cap` recording calls (0: [`MAX_RECORDINGS`]).
    pub fn with_capacity_limit(cap: usize) -> Self {
        Self { cap, ..Self::default() }
    }

    /// Counters so far.
    pub fn stats(&self) -> &RecordingStats {
        &self.stats
    }

    /// True when `key` is a recording call held here.
    pub fn contains(&self, key: &CorrelationKey) -> bool {
        self.sites.contains_key(key)
    }

    /// Keeps the launch `r` of recording call `key`. The first stack given stays (a second
    /// source's stack for the same call is only for the agreement check).
    pub fn insert(&mut self, key: CorrelationKey, r: LaunchRef) {
        if let Some(old) = self.sites.get_mut(&key) {
            if old.stack.is_none() && !r.stack.is_none() {
                *old = r;
            }
            return;
        }
        self.stats.recordings += 1;
        self.sites.insert(key, r);
        self.order.push_back(key);
        let cap = if self.cap == 0 { MAX_RECORDINGS } else { self.cap };
        while self.sites.len() > cap {
            let Some(old) = self.order.pop_front() else { break };
            if self.sites.remove(&old).is_some() {
                self.stats.recordings_evicted += 1;
            }
        }
    }

    /// Fills `op.recorded` from its submission link: from this table, or else from `launch`,
    /// the correlator's lookup of ordinary launches still joinable (a source that did not mark
    /// its recording calls). Does nothing to work that did not run from a recording.
    pub fn join(&mut self, op: &mut DeviceOp, launch: impl Fn(&CorrelationKey) -> Option<LaunchRef>) {
        let Some(sub) = op.submission else { return };
        self.stats.from_recordings += 1;
        let Some(record) = sub.record else {
            self.stats.recorded_unknown += 1;
            return;
        };
        let key = CorrelationKey::new(op.pid, record);
        match self.sites.get(&key).copied().or_else(|| launch(&key)) {
            Some(r) => {
                op.recorded = Some(r);
                self.stats.recorded_joined += 1;
            }
            None => self.stats.recorded_unmatched += 1,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn corr(id: u64) -> Correlation {
        Correlation { backend: backend::TEST, id }
    }

    fn replayed(record: Option<u64>, execution: u64) -> DeviceOp {
        DeviceOp::default()
            .pid(1)
            .correlation(Some(corr(execution)))
            .submission(Some(Submission::default().list(5).record(record.map(corr)).execution(execution)))
    }

    #[test]
    fn joins_the_recording_call_and_counts_what_it_cannot() {
        let mut t = Recordings::default();
        t.insert(CorrelationKey::new(1, corr(7)), LaunchRef::default().stack(StackId(3)).tid(9));
        let none = |_: &CorrelationKey| None;
        let mut a = replayed(Some(7), 100);
        t.join(&mut a, none);
        assert_eq!(a.recorded.map(|r| (r.stack, r.tid)), Some((StackId(3), 9)));
        let mut b = replayed(Some(8), 100);
        t.join(&mut b, none);
        assert!(b.recorded.is_none());
        let mut c = replayed(None, 100);
        t.join(&mut c, none);
        let mut plain = DeviceOp::default().pid(1);
        t.join(&mut plain, none);
        let s = t.stats();
        assert_eq!(
            (s.from_recordings, s.recorded_joined, s.recorded_unmatched, s.recorded_unknown),
            (3, 1, 1, 1)
        );
    }

    #[test]
    fn falls_back_to_an_ordinary_launch_and_keeps_the_first_stack() {
        let mut t = Recordings::default();
        let key = CorrelationKey::new(1, corr(4));
        t.insert(key, LaunchRef::default().stack(StackId::NONE).api(StrId(2)));
        t.insert(key, LaunchRef::default().stack(StackId(6)));
        t.insert(key, LaunchRef::default().stack(StackId(8)));
        let mut a = replayed(Some(4), 1);
        t.join(&mut a, |_| None);
        assert_eq!(a.recorded.unwrap().stack, StackId(6), "a stack replaces an API-only entry, once");
        let mut b = replayed(Some(5), 1);
        t.join(&mut b, |k| (k.id == 5).then(|| LaunchRef::default().stack(StackId(11))));
        assert_eq!(b.recorded.unwrap().stack, StackId(11));
    }

    #[test]
    fn forgets_the_oldest_beyond_its_bound() {
        let mut t = Recordings::with_capacity_limit(2);
        for id in 1..=3 {
            t.insert(CorrelationKey::new(1, corr(id)), LaunchRef::default().stack(StackId(id as u32)));
        }
        assert!(!t.contains(&CorrelationKey::new(1, corr(1))));
        assert!(t.contains(&CorrelationKey::new(1, corr(3))));
        assert_eq!(t.stats().recordings_evicted, 1);
    }
}
