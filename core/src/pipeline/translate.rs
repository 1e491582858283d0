//! The translation of each event kind from a source's terms to the session's: its clock
//! domain to the session clock, its ids to session ids, then the correlator. Definitions are
//! translated by the interner (`intern.rs`).

use std::time::Instant;

use xpuprof_sdk::model::*;

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
                clocks.to_session(&mut c.clock, &mut [&mut c.start, &mut c.end]) && {
                    self.last_time = self.last_time.max(c.end);
                    c.name = ids.str(c.name);
                    released = self.correlator.api_call(c, now);
                    true
                }
            }
            Record::LaunchSite(s) => {
                clocks.to_session(&mut s.clock, &mut [&mut s.time]) && {
                    s.api = ids.str(s.api);
                    s.stack = ids.stack(s.stack);
                    let (ops, other) = self.correlator.launch_site(s, source, now);
                    released = ops;
                    compare = other.map(|o| (o, s.stack));
                    // A site without a stack only announced a launch whose stack another
                    // source sends (see the correlator): the sinks get that source's site.
                    !s.stack.is_none()
                }
            }
            Record::DeviceOp(op) => {
                clocks.to_session(&mut op.clock, &mut [&mut op.start, &mut op.end]) && {
                    op.device = ids.device(op.device);
                    op.stream = ids.stream(op.stream);
                    op.name = ids.str(op.name);
                    op.src_device = ids.device(op.src_device);
                    op.dst_device = ids.device(op.dst_device);
                    self.last_time = self.last_time.max(op.end);
                    // `launch` is the correlator's to fill, never a source's.
                    op.launch = None;
                    waits = !self.correlator.join(op);
                    true
                }
            }
            Record::CpuSample(s) => {
                clocks.to_session(&mut s.clock, &mut [&mut s.time]) && {
                    self.last_time = self.last_time.max(s.time);
                    s.stack = ids.stack(s.stack);
                    true
                }
            }
            Record::Marker(a) | Record::Range(a) => {
                clocks.to_session(&mut a.clock, &mut [&mut a.start, &mut a.end]) && {
                    a.name = ids.str(a.name);
                    a.domain = ids.str(a.domain);
                    true
                }
            }
            Record::Counter(c) => {
                clocks.to_session(&mut c.clock, &mut [&mut c.time]) && {
                    c.name = ids.str(c.name);
                    c.device = ids.device(c.device);
                    true
                }
            }
            Record::Loss(l) => {
                // A loss is reported even when its time cannot be converted.
                if !clocks.to_session(&mut l.clock, &mut [&mut l.time]) {
                    clocks.unconvertible -= 1;
                    (l.time, l.clock) = (self.last_time, ClockDomain::SESSION);
                }
                l.cause = ids.str(l.cause);
                *self.losses.entry(self.globals.text(l.cause).to_owned()).or_default() += l.count;
                true
            }
            Record::Overhead(o) => {
                clocks.to_session(&mut o.clock, &mut [&mut o.start, &mut o.end]) && {
                    o.name = ids.str(o.name);
                    o.device = ids.device(o.device);
                    true
                }
            }
            Record::Window(w) => clocks.to_session(&mut w.clock, &mut [&mut w.start, &mut w.end]),
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
