//! Joins device work to the launch that caused it, on exact correlation keys only
//! (docs/architecture.md, "Pipeline"). One launch may cause many device operations (a graph launch); device work
//! that arrives before its launch stack waits a bounded time; nothing is matched by time
//! windows, and everything unmatched is counted. Work run from a recording (a replayed
//! graph, a command list submitted again) is also joined to the call that recorded it,
//! through the model's submission link ([`super::recordings`]).
//!
//! A launch's API call and its launch site may come in either order. Whether a (backend,
//! process) sends launch stacks at all is only known at its first launch site, so until then
//! device work whose launch is known only by its API call waits too (the same bounded grace):
//! a source that emits the API call first does not lose its first launch's stack. A pair that
//! sent no launch site within [`PENDING_GRACE`] of its first API call is taken to send none, and
//! its device work joins the API call at once from then on.

use std::collections::VecDeque;
use std::time::{Duration, Instant};
use xpuprof_sdk::hash::{IdMap, IdSet};

use xpuprof_sdk::model::*;

use super::launches::{Forgotten, Launch, LaunchTable};
use super::recordings::{RecordingStats, Recordings};

/// How long device work waits for its launch stack before it is passed on without one.
const PENDING_GRACE: Duration = Duration::from_secs(2);
/// How long a generation of launches lasts at a low launch rate: a used launch stays joinable
/// one to two of these after it was registered (more graph nodes may follow).
const USED_LIFETIME: Duration = Duration::from_secs(5);
/// How long a launch that nothing used yet stays joinable (deep GPU queues, slow buffers).
const UNUSED_LIFETIME: Duration = Duration::from_secs(60);
/// Most launches kept joinable after their first use, whatever their age: at a million launches
/// per second, [`USED_LIFETIME`] alone would keep five million. More work of a launch that was
/// already joined (the other nodes of a graph launch) comes in the same activity buffer as its
/// first, so half this many later launches (a generation, [`LaunchTable`]) is a wide margin.
const MAX_USED: usize = 1 << 16;

/// What the correlator counted.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CorrelationStats {
    /// Device operations seen.
    pub device_ops: u64,
    /// Joined to a launch stack.
    pub joined_with_stack: u64,
    /// Joined to the launch API call only (no stack was recorded for it).
    pub joined_api_only: u64,
    /// Carrying a correlation id that matched nothing.
    pub unmatched: u64,
    /// Carrying no correlation id at all.
    pub uncorrelated: u64,
    /// Launch sites seen.
    pub launch_sites: u64,
    /// Launch sites no device work was joined to.
    pub launch_sites_unused: u64,
    /// Launch stacks without a correlation id (plain uprobes): shown as CPU stacks, not joined.
    pub uncorrelated_launch_sites: u64,
    /// Work run from recordings, joined to the calls that recorded it.
    pub recordings: RecordingStats,
    /// Launches forgotten because their backend retired the correlation id.
    pub retired: u64,
}

#[derive(Debug, Default)]
struct Pending {
    ops: Vec<DeviceOp>,
}

/// The correlator's state; memory is bounded by the work in flight.
#[derive(Debug)]
pub struct Correlator {
    launches: LaunchTable,
    pending: IdMap<CorrelationKey, Pending>,
    pending_order: VecDeque<(Instant, CorrelationKey)>,
    /// (backend, pid) pairs that send launch stacks: their device work waits for them.
    stacks_expected: IdSet<(u32, u32)>,
    /// (backend, pid) pairs whose first API call came before any launch site, with when they are
    /// taken to send none: until then their device work waits as if they did.
    undecided: IdMap<(u32, u32), Instant>,
    /// (backend, pid) pairs that sent API calls and no launch site within the grace period:
    /// their device work joins the API call alone, at once.
    no_stacks: IdSet<(u32, u32)>,
    /// The pair last added to `stacks_expected` (every launch site would add it again).
    last_expected: Option<(u32, u32)>,
    /// Calls that recorded work run later (graph nodes' capture sites, command-list appends).
    recordings: Recordings,
    stats: CorrelationStats,
}

impl Default for Correlator {
    fn default() -> Self {
        Self {
            launches: LaunchTable::new(MAX_USED / 2, USED_LIFETIME, UNUSED_LIFETIME),
            pending: IdMap::default(),
            pending_order: VecDeque::new(),
            stacks_expected: IdSet::default(),
            undecided: IdMap::default(),
            no_stacks: IdSet::default(),
            last_expected: None,
            recordings: Recordings::default(),
            stats: CorrelationStats::default(),
        }
    }
}

impl Correlator {
    /// Counters so far.
    pub fn stats(&self) -> CorrelationStats {
        CorrelationStats { recordings: self.recordings.stats().clone(), ..self.stats.clone() }
    }

    /// Device operations waiting for their launch.
    pub fn pending_len(&self) -> usize {
        self.pending.values().map(|p| p.ops.len()).sum()
    }

    fn count_forgotten(&mut self, f: Forgotten) {
        self.stats.launch_sites_unused += f.unused_with_stack;
    }

    /// Registers a launch stack from source `source`; returns device work that was waiting for
    /// it, and the stack another source already gave for the same launch (the first stack stays
    /// the one joins use; the second is only for the agreement check).
    pub fn launch_site(
        &mut self,
        s: &LaunchSite,
        source: usize,
        now: Instant,
    ) -> (Vec<DeviceOp>, Option<StackId>) {
        if s.correlation.backend == backend::UNCORRELATED {
            self.stats.uncorrelated_launch_sites += 1;
            return (Vec::new(), None);
        }
        let key = CorrelationKey::new(s.pid, s.correlation);
        if self.last_expected != Some((key.backend, key.pid)) {
            self.stacks_expected.insert((key.backend, key.pid));
            // Its first site decides (a site later than the grace turns a pair taken to send
            // no stacks back).
            self.undecided.remove(&(key.backend, key.pid));
            self.no_stacks.remove(&(key.backend, key.pid));
            self.last_expected = Some((key.backend, key.pid));
        }
        let r = LaunchRef::default().tid(s.tid).stack(s.stack).api(s.api).time(s.time);
        if s.recording {
            self.recordings.insert(key, r);
        }
        if s.stack.is_none() {
            // A launch site without a stack: its stack comes from another source (a backend
            // whose agent only calls the trampoline and leaves the stack to a CPU-sampling
            // source). The launch is known; its device work waits for that stack (at most
            // PENDING_GRACE) instead of joining the API call alone because the other source's
            // records arrive later.
            match self.launches.get_mut(&key) {
                Some(l) if l.r.api.is_none() => l.r.api = s.api,
                Some(_) => {}
                None => {
                    let l =
                        Launch { r, has_stack: false, used: false, stack_source: usize::MAX, inserted: now };
                    let recordings = &self.recordings;
                    let gone = self.launches.insert(key, l, now, |k| recordings.contains(k));
                    self.count_forgotten(gone);
                }
            }
            return (Vec::new(), None);
        }
        self.stats.launch_sites += 1;
        match self.launches.get_mut(&key) {
            Some(entry) if entry.has_stack => {
                let other = (entry.stack_source != source).then_some(entry.r.stack);
                if entry.r.api.is_none() {
                    entry.r.api = s.api;
                }
                return (Vec::new(), other);
            }
            Some(entry) => {
                // A stack wins over an API-call-only entry; the API name is kept if the site
                // has none.
                let api = if s.api.is_none() { entry.r.api } else { s.api };
                entry.r = r.api(api);
                entry.has_stack = true;
                entry.stack_source = source;
            }
            None => {
                let l = Launch { r, has_stack: true, used: false, stack_source: source, inserted: now };
                let recordings = &self.recordings;
                let gone = self.launches.insert(key, l, now, |k| recordings.contains(k));
                self.count_forgotten(gone);
            }
        }
        (self.release(key, now), None)
    }

    /// Registers a launch API call; returns device work released by it.
    pub fn api_call(&mut self, c: &ApiCall, now: Instant) -> Vec<DeviceOp> {
        let Some(corr) = c.correlation else { return Vec::new() };
        let key = CorrelationKey::new(c.pid, corr);
        match self.launches.get_mut(&key) {
            Some(l) => {
                if l.r.api.is_none() {
                    l.r.api = c.name;
                }
            }
            None => {
                let r = LaunchRef::default().tid(c.tid).api(c.name).time(c.start);
                let l = Launch { r, has_stack: false, used: false, stack_source: usize::MAX, inserted: now };
                let recordings = &self.recordings;
                let gone = self.launches.insert(key, l, now, |k| recordings.contains(k));
                self.count_forgotten(gone);
            }
        }
        let pair = (key.backend, key.pid);
        if self.stacks_expected.contains(&pair) {
            return Vec::new();
        }
        if self.no_stacks.contains(&pair) {
            return self.release(key, now);
        }
        // The pair's first API call, before any launch site: its device work waits (as if it
        // sent stacks) until a site comes or the grace period says it sends none.
        self.undecided.entry(pair).or_insert(now + PENDING_GRACE);
        Vec::new()
    }

    /// Joins one device operation; returns it when ready, or keeps it until its launch arrives.
    pub fn device_op(&mut self, mut op: DeviceOp, now: Instant) -> Option<DeviceOp> {
        if self.join(&mut op) {
            Some(op)
        } else {
            self.wait(op, now);
            None
        }
    }

    /// Joins one device operation in place; false when it must wait for its launch (hand it
    /// to [`Correlator::wait`] then). What the pipeline uses: the operation stays where it is
    /// in the output batch unless it waits.
    #[inline]
    pub fn join(&mut self, op: &mut DeviceOp) -> bool {
        self.stats.device_ops += 1;
        // The recording call precedes every execution of what it recorded: no waiting.
        if op.submission.is_some() {
            let launches = &self.launches;
            self.recordings.join(op, |k| launches.get(k).map(|l| l.r));
        }
        let Some(corr) = op.correlation else {
            self.stats.uncorrelated += 1;
            return true;
        };
        let key = CorrelationKey::new(op.pid, corr);
        let ready = self
            .launches
            .get(&key)
            .is_some_and(|l| l.has_stack || self.no_stacks.contains(&(key.backend, key.pid)));
        match ready.then(|| self.launches.use_launch(&key)).flatten() {
            Some(l) => {
                op.launch = Some(l.r);
                self.count_join(l.has_stack);
                true
            }
            None => false,
        }
    }

    /// Keeps device operation `op`, which [`Correlator::join`] could not join, until its launch
    /// arrives or its grace period ends.
    pub fn wait(&mut self, op: DeviceOp, now: Instant) {
        let Some(corr) = op.correlation else { return };
        let key = CorrelationKey::new(op.pid, corr);
        let p = self.pending.entry(key).or_default();
        if p.ops.is_empty() {
            self.pending_order.push_back((now + PENDING_GRACE, key));
        }
        p.ops.push(op);
    }

    /// Launches kept joinable now.
    pub fn launches_len(&self) -> usize {
        self.launches.len()
    }

    fn count_join(&mut self, has_stack: bool) {
        if has_stack {
            self.stats.joined_with_stack += 1;
        } else {
            self.stats.joined_api_only += 1;
        }
    }

    fn release(&mut self, key: CorrelationKey, _now: Instant) -> Vec<DeviceOp> {
        if self.pending.is_empty() {
            return Vec::new();
        }
        let Some(p) = self.pending.remove(&key) else { return Vec::new() };
        let mut ops = p.ops;
        let (r, has_stack) = match self.launches.use_launch(&key) {
            Some(l) => (Some(l.r), l.has_stack),
            None => (None, false),
        };
        for op in &mut ops {
            op.launch = r;
            match r {
                Some(_) => self.count_join(has_stack),
                None => self.stats.unmatched += 1,
            }
        }
        ops
    }

    /// Releases device work whose grace period passed and forgets expired launches.
    pub fn expire(&mut self, now: Instant) -> Vec<DeviceOp> {
        let mut out = self.decide(now);
        while let Some(&(deadline, key)) = self.pending_order.front() {
            if deadline > now {
                break;
            }
            self.pending_order.pop_front();
            out.extend(self.release(key, now));
        }
        let recordings = &self.recordings;
        let gone = self.launches.tick(now, |k| recordings.contains(k));
        self.count_forgotten(gone);
        out
    }

    /// Pairs that sent API calls and no launch site for the grace period send none: their work
    /// still waiting is joined to its API calls now.
    fn decide(&mut self, now: Instant) -> Vec<DeviceOp> {
        if self.undecided.is_empty() {
            return Vec::new();
        }
        let before = self.no_stacks.len();
        self.undecided.retain(|pair, deadline| {
            let keep = *deadline > now;
            if !keep {
                self.no_stacks.insert(*pair);
            }
            keep
        });
        if self.no_stacks.len() == before {
            return Vec::new();
        }
        let ready: Vec<CorrelationKey> = self
            .pending
            .keys()
            .filter(|k| self.no_stacks.contains(&(k.backend, k.pid)) && self.launches.get(k).is_some())
            .copied()
            .collect();
        ready.into_iter().flat_map(|k| self.release(k, now)).collect()
    }

    /// The backend retired `key`'s correlation id: no device work will carry it any more, so
    /// work still waiting for it is released now and the launch is forgotten at once (memory is
    /// then bounded by the work in flight exactly, not by the launch lifetimes).
    pub fn retire(&mut self, key: CorrelationKey, now: Instant) -> Vec<DeviceOp> {
        // A launch whose stack another source still has to send (a site without a stack came):
        // its work keeps waiting for that stack; expiry forgets it as any other launch.
        let awaited = self.launches.get(&key).is_some_and(|l| !l.has_stack)
            && !self.no_stacks.contains(&(key.backend, key.pid));
        if awaited {
            return Vec::new();
        }
        let ops = self.release(key, now);
        // A recording call stays joinable for the replays of what it recorded.
        if self.recordings.contains(&key) {
            return ops;
        }
        if let Some(l) = self.launches.remove(&key) {
            self.stats.retired += 1;
            if !l.used && l.has_stack {
                self.stats.launch_sites_unused += 1;
            }
        }
        ops
    }

    /// End of the session: releases everything, in arrival order.
    pub fn finish(&mut self, now: Instant) -> Vec<DeviceOp> {
        let mut out = Vec::new();
        while let Some((_, key)) = self.pending_order.pop_front() {
            out.extend(self.release(key, now));
        }
        let recordings = &self.recordings;
        let gone = self.launches.clear(|k| recordings.contains(k));
        self.count_forgotten(gone);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn op(id: u64) -> DeviceOp {
        DeviceOp::default()
            .kind(DeviceOpKind::Kernel)
            .pid(1)
            .device(DeviceId(1))
            .stream(StreamId(1))
            .start(10)
            .end(20)
            .name(StrId(1))
            .correlation(Some(Correlation { backend: backend::TEST, id }))
    }

    fn site(id: u64) -> LaunchSite {
        LaunchSite::default()
            .pid(1)
            .tid(2)
            .time(5)
            .correlation(Correlation { backend: backend::TEST, id })
            .api(StrId(3))
            .stack(StackId(4))
    }

    #[test]
    fn joins_one_to_many_and_waits_for_late_sites() {
        let now = Instant::now();
        let mut c = Correlator::default();
        assert!(c.launch_site(&site(7), 0, now).0.is_empty());
        let a = c.device_op(op(7), now).unwrap();
        let b = c.device_op(op(7), now).unwrap();
        assert_eq!(a.launch.unwrap().stack, StackId(4));
        assert_eq!(b.launch.unwrap().tid, 2);
        // Device work before its site waits, then joins.
        assert!(c.device_op(op(8), now).is_none());
        let released = c.launch_site(&site(8), 0, now).0;
        assert_eq!(released.len(), 1);
        assert_eq!(released[0].launch.unwrap().stack, StackId(4));
        // Never-matched work is released unjoined at the end and counted.
        assert!(c.device_op(op(9), now).is_none());
        let rest = c.finish(now);
        assert_eq!(rest.len(), 1);
        assert!(rest[0].launch.is_none());
        let s = c.stats();
        assert_eq!((s.joined_with_stack, s.unmatched, s.device_ops), (3, 1, 4));
    }

    #[test]
    fn used_launches_are_bounded_by_count_and_unused_ones_are_kept() {
        let now = Instant::now();
        let mut c = Correlator::default();
        // A launch nothing used yet is work in flight: kept however many launches follow.
        c.launch_site(&site(0), 0, now);
        let n = MAX_USED as u64 * 3;
        for id in 1..=n {
            c.launch_site(&site(id), 0, now);
            assert!(c.device_op(op(id), now).unwrap().launch.is_some());
        }
        assert!(c.launches_len() <= MAX_USED + 1, "{}", c.launches_len());
        assert!(c.device_op(op(0), now).unwrap().launch.is_some(), "the unused launch still joins");
        // The most recent used launches still join more work (graph nodes).
        assert!(c.device_op(op(n), now).unwrap().launch.is_some());
        assert_eq!(c.stats().unmatched, 0);
    }

    #[test]
    fn pending_work_is_released_after_grace() {
        let now = Instant::now();
        let mut c = Correlator::default();
        c.launch_site(&site(1), 0, now);
        assert!(c.device_op(op(2), now).is_none());
        assert!(c.expire(now).is_empty());
        let out = c.expire(now + PENDING_GRACE + Duration::from_millis(1));
        assert_eq!(out.len(), 1);
        assert_eq!(c.stats().unmatched, 1);
        assert_eq!(c.pending_len(), 0);
    }

    #[test]
    fn second_stack_from_another_source_is_returned_for_comparison() {
        let now = Instant::now();
        let mut c = Correlator::default();
        c.launch_site(&site(3), 0, now);
        let mut again = site(3);
        again.stack = StackId(9);
        assert_eq!(c.launch_site(&again, 0, now).1, None, "same source: no comparison");
        assert_eq!(c.launch_site(&again, 1, now).1, Some(StackId(4)));
        let op = c.device_op(op(3), now).unwrap();
        assert_eq!(op.launch.unwrap().stack, StackId(4), "the first stack is used for joins");
    }

    #[test]
    fn replays_join_the_replay_launch_and_the_recording_call_long_after() {
        let now = Instant::now();
        let mut c = Correlator::default();
        // The capture: a launch on a capturing stream records a graph node and runs nothing.
        let mut capture = site(20);
        capture.stack = StackId(21);
        capture.recording = true;
        c.launch_site(&capture, 0, now);
        // Two minutes later (past every ordinary lifetime) the graph is replayed.
        let later = now + UNUSED_LIFETIME * 2;
        assert!(c.expire(later).is_empty());
        c.launch_site(&site(30), 0, later);
        let mut node = op(30);
        node.submission = Some(
            Submission::default()
                .list(1)
                .record(Some(Correlation { backend: backend::TEST, id: 20 }))
                .execution(30),
        );
        let out = c.device_op(node, later).unwrap();
        assert_eq!(out.launch.unwrap().stack, StackId(4), "under the replay's launch stack");
        assert_eq!(out.recorded.unwrap().stack, StackId(21), "and the capture's");
        c.finish(later);
        let s = c.stats();
        assert_eq!((s.recordings.recorded_joined, s.recordings.recordings), (1, 1));
        assert_eq!(s.launch_sites_unused, 0, "a recording call is used by what it recorded");
    }

    #[test]
    fn retirement_forgets_the_launch_at_once() {
        let mut c = Correlator::default();
        let t = Instant::now();
        c.launch_site(&site(7), 0, t);
        assert!(c.device_op(op(7), t).is_some_and(|o| o.launch.is_some()));
        let key = CorrelationKey::new(1, Correlation { backend: backend::TEST, id: 7 });
        assert!(c.retire(key, t).is_empty());
        assert_eq!(c.stats().retired, 1);
        let late = c.device_op(op(7), t);
        assert!(late.is_none(), "work after retirement no longer joins: it waits, then goes unmatched");
        assert_eq!(c.finish(t + Duration::from_secs(3)).len(), 1);
        assert_eq!(c.stats().unmatched, 1);
    }

    /// A launch API call named 9 with correlation id `id` of the test backend.
    fn api_call(id: u64) -> ApiCall {
        ApiCall::default()
            .pid(1)
            .tid(2)
            .start(1)
            .end(2)
            .name(StrId(9))
            .correlation(Some(Correlation { backend: backend::TEST, id }))
    }

    #[test]
    fn api_call_only_joins_when_no_stacks_are_sent() {
        let now = Instant::now();
        let mut c = Correlator::default();
        assert!(c.device_op(op(5), now).is_none());
        assert!(c.api_call(&api_call(5), now).is_empty(), "a site may still come");
        let out = c.expire(now + PENDING_GRACE + Duration::from_millis(1));
        assert_eq!(out[0].launch.unwrap().api, StrId(9));
        assert_eq!(out[0].launch.unwrap().stack, StackId::NONE);
        assert_eq!(c.stats().joined_api_only, 1);
        // The pair sends no stacks: from now on its work joins its API call at once, in either
        // order.
        let later = now + PENDING_GRACE * 2;
        assert!(c.api_call(&api_call(6), later).is_empty());
        assert!(c.device_op(op(6), later).is_some_and(|o| o.launch.is_some_and(|l| l.api == StrId(9))));
        assert!(c.device_op(op(7), later).is_none());
        assert_eq!(c.api_call(&api_call(7), later).len(), 1);
        assert_eq!((c.stats().joined_api_only, c.pending_len()), (3, 0));
        // A site that comes later still: the pair sends stacks after all, and its work waits
        // for them again.
        c.launch_site(&site(8), 0, later);
        assert!(c.api_call(&api_call(9), later).is_empty());
        assert!(c.device_op(op(9), later).is_none(), "waits for its site");
        assert_eq!(c.launch_site(&site(9), 0, later).0.len(), 1);
    }

    #[test]
    fn an_api_call_before_its_launch_site_keeps_the_first_launchs_stack() {
        // A source that emits each launch's API call, then its device work or its site: the
        // first launch's work waits for the site although no site of the process came yet.
        let now = Instant::now();
        let mut c = Correlator::default();
        for id in 1..=3 {
            assert!(c.api_call(&api_call(id), now).is_empty());
            assert!(c.device_op(op(id), now).is_none(), "launch {id}: its work waits for its site");
            let released = c.launch_site(&site(id), 0, now).0;
            assert_eq!(released.len(), 1, "launch {id}");
            assert_eq!(released[0].launch.unwrap().stack, StackId(4), "launch {id} has its stack");
        }
        let s = c.stats();
        assert_eq!((s.joined_with_stack, s.joined_api_only, s.unmatched), (3, 0, 0));
        // A retirement while the pair is undecided does not join the API call alone either.
        assert!(c.api_call(&api_call(9), now).is_empty());
        let key = CorrelationKey::new(1, Correlation { backend: backend::TEST, id: 9 });
        assert!(c.retire(key, now).is_empty());
    }

    #[test]
    fn a_site_without_a_stack_makes_device_work_wait_for_the_stack_another_source_sends() {
        // Stacks left to a CPU-sampling source: the agent announces the launch, that source's
        // stack comes later than the device work (its records are flushed less often).
        let now = Instant::now();
        let mut c = Correlator::default();
        let call = api_call(5);
        assert!(c.api_call(&call, now).is_empty());
        let (ops, other) = c.launch_site(&site(5).stack(StackId::NONE), 0, now);
        assert!(ops.is_empty() && other.is_none());
        assert!(c.device_op(op(5), now).is_none(), "waits for the stack");
        let key = CorrelationKey::new(1, Correlation { backend: backend::TEST, id: 5 });
        assert!(c.retire(key, now).is_empty(), "retired by its backend, still waiting for the stack");
        let (ops, other) = c.launch_site(&site(5), 1, now);
        assert_eq!(ops.len(), 1);
        assert_eq!(other, None, "an announcement is not a second stack to compare");
        assert_eq!(ops[0].launch.unwrap().stack, StackId(4));
        assert_eq!(ops[0].launch.unwrap().api, StrId(3));
        let s = c.stats();
        assert_eq!((s.joined_with_stack, s.joined_api_only, s.launch_sites), (1, 0, 1));

        // No stack ever comes: after the grace period the work joins the API call alone.
        assert!(c.launch_site(&site(6).stack(StackId::NONE), 0, now).0.is_empty());
        assert!(c.device_op(op(6), now).is_none());
        let out = c.expire(now + PENDING_GRACE + Duration::from_millis(1));
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].launch.unwrap().stack, StackId::NONE);
        assert_eq!(c.stats().joined_api_only, 1);
    }
}
