//! The translation of each event kind from a source's terms to the session's: its clock
//! domain to the session clock, its ids to session ids (which fields are which comes from the
//! model schema: `Timed`, `IdFields`), then the correlator. Definitions are translated by the
//! interner (`intern.rs`).

use std::time::Instant;

use xpuprof_sdk::model::*;

use super::clock::ClockMap;
use super::intern::SourceIds;
use super::{SessionState, SourceState};

impl SessionState {
    pub(super) fn emit(&mut self, r: Record) {
        self.out.push(r);
        self.out_records += 1;
    }

    /// Emits released device work; most calls release none, and that case stays inline (the
    /// call alone, saving and restoring registers, was 4% of a live recording's CPU time).
    #[inline(always)]
    pub(super) fn emit_ops(&mut self, ops: Vec<DeviceOp>) {
        if !ops.is_empty() {
            self.emit_released(ops);
        }
    }

    #[inline(never)]
    fn emit_released(&mut self, ops: Vec<DeviceOp>) {
        for op in ops {
            self.emit(Record::DeviceOp(op));
        }
    }

    /// Handles the event at the end of the output batch, where it was decoded: it is
    /// converted there (a `Record` is large, and moving it out and back costs more than the
    /// conversion); the two kinds consumed here are taken out.
    #[inline(always)]
    pub(super) fn event_last(&mut self, st: &mut SourceState, source: usize, now: Instant) {
        if matches!(self.out.last(), Some(Record::ClockSync(_) | Record::Retired(_))) {
            match self.out.pop() {
                Some(Record::ClockSync(s)) => st.clocks.sync(&s),
                // Consumed here: a retirement only frees the correlator's entry (its time, in
                // whatever domain, is not needed for that).
                Some(Record::Retired(r)) => {
                    let ops = self.correlator.retire(CorrelationKey::new(r.pid, r.correlation), now);
                    self.emit_ops(ops);
                }
                _ => {}
            }
            return;
        }
        let at = self.out.len() - 1;
        if self.event_in_place(st, source, at, now) {
            self.out_records += 1;
        }
    }

    /// Converts the event at `out[at]` (the last record) to the session's clock and ids and
    /// correlates it, in place, then appends the device work it released. False when the
    /// event was taken out again: dropped (its clock has no pairing, or its kind is not an
    /// event the sinks get) or kept by the correlator until its launch arrives.
    fn event_in_place(&mut self, st: &mut SourceState, source: usize, at: usize, now: Instant) -> bool {
        let ids = &mut st.ids;
        let clocks = &mut st.clocks;
        let mut released = Vec::new();
        let mut compare = None;
        let mut waits = false;
        let keep = match &mut self.out[at] {
            Record::ApiCall(c) => {
                to_session(c, clocks, ids) && {
                    self.last_time = self.last_time.max(c.end);
                    released = self.correlator.api_call(c, now);
                    true
                }
            }
            Record::LaunchSite(s) => {
                to_session(s, clocks, ids) && {
                    let (ops, other) = self.correlator.launch_site(s, source, now);
                    released = ops;
                    compare = other.map(|o| (o, s.stack));
                    // A site without a stack only announced a launch whose stack another
                    // source sends (see the correlator): the sinks get that source's site.
                    !s.stack.is_none()
                }
            }
            Record::DeviceOp(op) => {
                // `launch` and `recorded` are the correlator's to fill, never a source's.
                (op.launch, op.recorded) = (None, None);
                to_session(op, clocks, ids) && {
                    self.last_time = self.last_time.max(op.end);
                    waits = !self.correlator.join(op);
                    true
                }
            }
            Record::CpuSample(s) => {
                to_session(s, clocks, ids) && {
                    self.last_time = self.last_time.max(s.time);
                    true
                }
            }
            Record::Marker(a) | Record::Range(a) => to_session(a, clocks, ids),
            Record::Counter(c) => to_session(c, clocks, ids),
            Record::Loss(l) => {
                // A loss is reported even when its time cannot be converted.
                if !l.clock_times(|clock, times| clocks.to_session(clock, times)) {
                    clocks.unconvertible -= 1;
                    (l.time, l.clock) = (self.last_time, ClockDomain::SESSION);
                }
                l.map_ids(ids);
                *self.losses.entry(self.globals.text(l.cause).to_owned()).or_default() += l.count;
                true
            }
            Record::Overhead(o) => to_session(o, clocks, ids),
            Record::Window(w) => to_session(w, clocks, ids),
            Record::DeviceSample(d) => to_session(d, clocks, ids),
            _ => false,
        };
        if !keep {
            self.out.truncate(at);
            return false;
        }
        if waits {
            // Nothing was emitted after it: it is the last record.
            if let Some(Record::DeviceOp(op)) = self.out.pop() {
                self.correlator.wait(op, now);
            }
            return false;
        }
        if let Some((first, second)) = compare {
            self.compare_stacks(first, second);
        }
        self.emit_ops(released);
        true
    }
}

/// Converts `r`'s timestamps to the session clock and its id references to session ids, both
/// as the schema declares them (`xpuprof_sdk::model::{Timed, IdFields}`); false, and nothing
/// renumbered, when its clock domain has no pairing with the session clock.
#[inline(always)]
fn to_session<R: Timed + IdFields>(r: &mut R, clocks: &mut ClockMap, ids: &mut SourceIds) -> bool {
    r.clock_times(|clock, times| clocks.to_session(clock, times)) && {
        r.map_ids(ids);
        true
    }
}

/// The schema's id visitor ([`IdFields::map_ids`]) renumbers a record through this.
impl IdMapper for SourceIds {
    #[inline(always)]
    fn str(&mut self, id: StrId) -> StrId {
        SourceIds::str(self, id)
    }
    #[inline(always)]
    fn device(&mut self, id: DeviceId) -> DeviceId {
        SourceIds::device(self, id)
    }
    #[inline(always)]
    fn stream(&mut self, id: StreamId) -> StreamId {
        SourceIds::stream(self, id)
    }
    #[inline(always)]
    fn module(&mut self, id: ModuleId) -> ModuleId {
        SourceIds::module(self, id)
    }
    #[inline(always)]
    fn frame(&mut self, id: FrameId) -> FrameId {
        SourceIds::frame(self, id)
    }
    #[inline(always)]
    fn stack(&mut self, id: StackId) -> StackId {
        SourceIds::stack(self, id)
    }
}
