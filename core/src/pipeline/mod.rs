//! The event pipeline: source batches in; renumbered, clock-converted, symbolised and
//! correlated records out to the sinks, as soon as they are final.

pub mod batch;
pub mod clock;
pub mod correlator;
pub mod intern;
pub mod launches;
mod plt;
pub mod recordings;
pub mod sinks;
pub mod symbolizer;

use std::collections::BTreeMap;
use std::time::Instant;

use xpuprof_sdk::codec::{self, Decoder};
use xpuprof_sdk::model::*;

use clock::ClockMap;
use correlator::{CorrelationStats, Correlator};
use intern::{Globals, SourceIds};

use batch::BATCH_RECORDS;

/// The end of the record that starts at `offset` in `batch`, from its framing (`tag: u8,
/// len: varint, payload`); `None` when the framing itself is damaged.
fn codec_record_end(batch: &[u8], offset: usize) -> Option<usize> {
    let mut c = codec::Cursor::new(batch.get(offset + 1..)?);
    let len = usize::try_from(c.varint()).ok()?;
    let end = (offset + 1 + c.position()).checked_add(len)?;
    (!c.is_bad() && end <= batch.len()).then_some(end)
}

/// Per-source state and counters.
#[derive(Debug, Default)]
struct SourceState {
    ids: SourceIds,
    clocks: ClockMap,
    records: u64,
    malformed: u64,
}

/// Launches whose stack two sources captured, and whether the stacks agreed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Agreement {
    /// Launches with stacks from two sources.
    pub compared: u64,
    /// Of those, with identical stacks (frames inside the agent left out), compared up to the
    /// depth both stacks reached.
    pub agreed: u64,
    /// Compared pairs whose depths differed (one capture path stopped earlier).
    pub depth_limited: u64,
    /// Compared pairs where one stack had extra leaf frames the other capture path did not see
    /// (the instrumentation itself: agent, vendor tracing library, trampoline; or the dynamic
    /// loader on a first call), skipped before comparing.
    pub loader_leaf_skipped: u64,
    /// Compared pairs where a stack carried interpreter (Python) frames: compared on the native
    /// frames before them (the other capture path shows the interpreter's native frames there).
    pub native_only: u64,
    /// The first pair that differed (innermost first), for diagnosis.
    pub first_disagreement: Option<(Vec<String>, Vec<String>)>,
}

/// Most leaf frames one capture path may see beyond the other (the instrumentation's own frames:
/// agent callback, vendor tracing library, trampoline; a loader frame on a first call).
const MAX_LEAF_SKIP: usize = 16;

/// Drops the fewest leading (leaf) frames of `a`, at most [`MAX_LEAF_SKIP`], after which `a`
/// starts at the same frame as `b`. Returns whether it dropped any. No module is named: the two
/// paths differ only in the leaf frames of whatever captured the stack, whoever's they are.
fn skip_loader_leaf(a: &mut Vec<String>, b: &[String]) -> bool {
    let Some(first) = b.first() else { return false };
    if a.first() == Some(first) {
        return false;
    }
    match a.iter().take(MAX_LEAF_SKIP + 1).skip(1).position(|f| f == first) {
        Some(n) => {
            a.drain(..=n);
            true
        }
        None => false,
    }
}

/// Counters the end summary shows.
#[derive(Debug, Clone, Default)]
pub struct PipelineStats {
    /// Records received, per source index.
    pub records_per_source: Vec<u64>,
    /// Malformed records (skipped), per source index.
    pub malformed_per_source: Vec<u64>,
    /// Losses reported, by cause.
    pub losses: BTreeMap<String, u64>,
    /// Correlation counters.
    pub correlation: CorrelationStats,
    /// References to undefined ids (a source bug), all sources.
    pub dangling: u64,
    /// Frames that could not be symbolised.
    pub unsymbolized: u64,
    /// Root-end frames outside every module, cut from stacks.
    pub frames_cut: u64,
    /// Virtual-address frames the host normalised to module + file offset.
    pub virtual_normalised: u64,
    /// Virtual-address frames no file of their process maps (left as addresses).
    pub virtual_unmapped: u64,
    /// Records handed to sinks.
    pub records_out: u64,
    /// The stack agreement check.
    pub agreement: Agreement,
}

/// The pipeline. Not thread-safe: one thread owns it and calls the sinks.
#[derive(Debug)]
pub struct Pipeline {
    sources: Vec<SourceState>,
    /// Everything but the per-source state, kept apart so a record can borrow its source's
    /// state and the session state at once.
    session: SessionState,
    /// `Globals::definitions_emitted` when the last batch was handed on.
    definitions_delivered: u64,
}

/// Session-wide state: definitions, correlation, output.
#[derive(Debug)]
struct SessionState {
    globals: Globals,
    correlator: Correlator,
    out: Vec<Record>,
    out_records: u64,
    losses: BTreeMap<String, u64>,
    /// Latest event time seen (session clock), for records made at the end.
    last_time: u64,
    agreement: Agreement,
}

impl Pipeline {
    /// A pipeline for `n_sources` sources; `symbolize` turns the symbolizer on.
    pub fn new(n_sources: usize, symbolize: bool) -> Self {
        let mut globals = Globals::default();
        globals.symbolize = symbolize;
        Self {
            sources: (0..n_sources).map(|_| SourceState::default()).collect(),
            session: SessionState {
                globals,
                correlator: Correlator::default(),
                out: Vec::with_capacity(BATCH_RECORDS + 64),
                out_records: 0,
                losses: BTreeMap::new(),
                last_time: 0,
                agreement: Agreement::default(),
            },
            definitions_delivered: 0,
        }
    }

    /// Whether string definitions get a demangled display text (on unless the session's
    /// `demangle = false`).
    pub fn set_demangle(&mut self, on: bool) {
        self.session.globals.keep_mangled = !on;
    }

    /// Processes one batch from source `source`; calls `sink` with output batches (and whether
    /// each may hold a definition). A malformed
    /// record is skipped and counted, and the records after it are still processed: every
    /// record is framed by its length (`tag, len, payload`), so the next one is found.
    pub fn push(&mut self, source: usize, batch: &[u8], sink: &mut dyn FnMut(&mut Vec<Record>, bool)) {
        let now = Instant::now();
        let mut rest = batch;
        while !rest.is_empty() {
            let mut resume = None;
            let mut records = Decoder::new(rest);
            // Each record is decoded onto the output batch and handled there: a `Record` is
            // large, and an event is converted in place (see `SessionState::event_last`).
            while let Some(rec) = records.next_onto(&mut self.session.out) {
                match rec {
                    Ok(()) => self.record_last(source, now),
                    Err(e) => {
                        self.sources[source].malformed += 1;
                        resume = codec_record_end(rest, e.offset);
                        let what =
                            if resume.is_some() { "skipped it" } else { "dropped the rest of the batch" };
                        tracing::warn!("source #{source} sent a malformed record, {what}: {e}");
                    }
                }
                if self.session.out.len() >= BATCH_RECORDS {
                    self.flush(sink);
                }
            }
            match resume {
                Some(end) => rest = &rest[end..],
                None => break,
            }
        }
    }

    /// Handles the record just decoded onto the end of the output batch.
    #[inline(always)]
    fn record_last(&mut self, source: usize, now: Instant) {
        let st = &mut self.sources[source];
        st.records += 1;
        let out = &mut self.session.out;
        match out.last() {
            Some(r) if matches!(r, Record::ClockDomain(_)) || r.is_definition() => {
                // Taken out again (definitions are few): a definition goes out renumbered.
                match out.pop() {
                    // Source-scoped and consumed here: sinks only ever see the session clock.
                    Some(Record::ClockDomain(d)) => st.clocks.define(&d),
                    Some(r) => self.session.globals.define(&mut st.ids, &r, &mut self.session.out),
                    None => {}
                }
            }
            Some(_) => self.session.event_last(st, source, now),
            None => {}
        }
    }

    /// Periodic work: releases device work whose launch did not arrive in time.
    pub fn tick(&mut self, sink: &mut dyn FnMut(&mut Vec<Record>, bool)) {
        let ops = self.session.correlator.expire(Instant::now());
        self.session.emit_ops(ops);
        self.flush(sink);
    }

    /// Hands buffered output to the sinks, with whether it may hold a definition (false when
    /// it holds only events: see `Sinks::deliver_marked`).
    pub fn flush(&mut self, sink: &mut dyn FnMut(&mut Vec<Record>, bool)) {
        if !self.session.out.is_empty() {
            let emitted = self.session.globals.definitions_emitted;
            sink(&mut self.session.out, emitted != self.definitions_delivered);
            self.definitions_delivered = emitted;
            self.session.out.clear();
        }
    }

    /// End of the session: releases everything still waiting and reports unmatched device
    /// work as a loss record, so every sink shows it.
    pub fn finish(&mut self, sink: &mut dyn FnMut(&mut Vec<Record>, bool)) {
        let ops = self.session.correlator.finish(Instant::now());
        self.session.emit_ops(ops);
        let malformed: u64 = self.sources.iter().map(|s| s.malformed).sum();
        if malformed > 0 {
            let text = "malformed records from a source, skipped";
            self.session.losses.insert(text.to_owned(), malformed);
            let cause = self.session.globals.intern(text, &mut self.session.out);
            let time = self.session.last_time;
            self.session.emit(Record::Loss(Loss::default().time(time).cause(cause).count(malformed)));
        }
        let unmatched = self.session.correlator.stats().unmatched;
        if unmatched > 0 {
            let cause =
                self.session.globals.intern("device work without a launch site", &mut self.session.out);
            self.session.emit(Record::Loss(
                Loss::default().time(self.session.last_time).cause(cause).count(unmatched),
            ));
        }
        let unconverted: u64 = self.sources.iter().map(|s| s.clocks.unconvertible).sum();
        if unconverted > 0 {
            let text = "records in a clock domain never paired with the session clock";
            let cause = self.session.globals.intern(text, &mut self.session.out);
            *self.session.losses.entry(text.to_owned()).or_default() += unconverted;
            self.session.emit(Record::Loss(
                Loss::default().time(self.session.last_time).cause(cause).count(unconverted),
            ));
        }
        self.flush(sink);
    }

    /// Counters so far.
    pub fn stats(&self) -> PipelineStats {
        PipelineStats {
            records_per_source: self.sources.iter().map(|s| s.records).collect(),
            malformed_per_source: self.sources.iter().map(|s| s.malformed).collect(),
            losses: self.session.losses.clone(),
            correlation: self.session.correlator.stats(),
            dangling: self.sources.iter().map(|s| s.ids.dangling).sum(),
            unsymbolized: self.session.globals.symbolizer.failures,
            frames_cut: self.session.globals.frames_cut,
            virtual_normalised: self.session.globals.virtual_normalised,
            virtual_unmapped: self.session.globals.virtual_unmapped,
            records_out: self.session.out_records,
            agreement: self.session.agreement.clone(),
        }
    }
}

impl SessionState {
    fn emit(&mut self, r: Record) {
        self.out.push(r);
        self.out_records += 1;
    }

    /// Emits released device work; most calls release none, and that case stays inline (the
    /// call alone, saving and restoring registers, was 4% of a live recording's CPU time).
    #[inline(always)]
    fn emit_ops(&mut self, ops: Vec<DeviceOp>) {
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
    fn event_last(&mut self, st: &mut SourceState, source: usize, now: Instant) {
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

    /// The agreement check: the same launch's stack from two sources (an agent and a
    /// CPU-sampling source's trampoline probe) must be the same once the leaf frames only one path sees are left out.
    fn compare_stacks(&mut self, first: StackId, second: StackId) {
        let (mut a, a_py) = self.globals.comparable_stack(first);
        let (mut b, b_py) = self.globals.comparable_stack(second);
        if a_py || b_py {
            self.agreement.native_only += 1;
        }
        // A walk may see leaf frames the other misses (the instrumentation's own frames, the
        // dynamic loader on a first call); align past such frames only.
        if skip_loader_leaf(&mut a, &b) || skip_loader_leaf(&mut b, &a) {
            self.agreement.loader_leaf_skipped += 1;
        }
        // The capture paths have different depth limits: compare the depth both reached.
        let depth = a.len().min(b.len());
        if a.len() != b.len() {
            self.agreement.depth_limited += 1;
        }
        a.truncate(depth);
        b.truncate(depth);
        self.agreement.compared += 1;
        if a == b {
            self.agreement.agreed += 1;
        } else if self.agreement.first_disagreement.is_none() {
            self.agreement.first_disagreement = Some((a, b));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use xpuprof_sdk::emit::{Emitter, StringInterner};

    /// One source's batch: a launch site for correlation id 5 of the test backend with the given frames
    /// (names, innermost first), the first one inside the agent's library.
    fn site_batch(frames: &[&str]) -> Vec<u8> {
        let mut e = Emitter::detached();
        let mut s = StringInterner::default();
        let agent = s.intern(&mut e, "/opt/x/libxpuprof_gpu_agent.so");
        e.emit(&Record::Module(ModuleDef::default().id(ModuleId(1)).path(agent)));
        e.emit(&Record::Frame(
            FrameDef::default()
                .id(FrameId(1))
                .kind(FrameKind::FileOffset)
                .module(ModuleId(1))
                .address(0x10)
                .pid(1),
        ));
        let mut ids = vec![FrameId(1)];
        for (i, f) in frames.iter().enumerate() {
            let name = s.intern(&mut e, f);
            let id = FrameId(i as u32 + 2);
            e.emit(&Record::Frame(FrameDef::default().id(id).kind(FrameKind::Synthetic).pid(1).name(name)));
            ids.push(id);
        }
        e.emit(&Record::Stack(StackDef::default().id(StackId(1)).frames(ids)));
        e.emit(&Record::LaunchSite(
            LaunchSite::default()
                .pid(1)
                .tid(1)
                .time(1)
                .correlation(Correlation { backend: backend::TEST, id: 5 })
                .stack(StackId(1)),
        ));
        e.take_buffer()
    }

    #[test]
    fn stacks_from_two_sources_are_compared_past_the_agent_frame() {
        let mut p = Pipeline::new(2, false);
        p.push(0, &site_batch(&["launch", "main"]), &mut |_, _| {});
        // The second source's stack has a different agent frame id but the same user frames.
        let mut b = site_batch(&["launch", "main"]);
        b.extend(site_batch(&["other", "main"]));
        p.push(1, &b, &mut |_, _| {});
        let a = p.stats().agreement;
        assert_eq!((a.compared, a.agreed), (2, 1));
        let (x, y) = a.first_disagreement.unwrap();
        let agent = "/opt/x/libxpuprof_gpu_agent.so+0x10";
        assert_eq!(x, [agent, "launch", "main"]);
        assert_eq!(y, [agent, "other", "main"]);
    }

    #[test]
    fn stacks_with_python_frames_are_compared_on_their_native_frames() {
        // The agent's stack has Python frames where the sampled stack has the interpreter's.
        let mut p = Pipeline::new(2, false);
        p.push(
            0,
            &site_batch(&["launch", "PyObject_Call", "step (w.py:7)", "main (w.py:9)"]),
            &mut |_, _| {},
        );
        p.push(
            1,
            &site_batch(&["launch", "PyObject_Call", "_PyEval_EvalFrameDefault", "Py_RunMain"]),
            &mut |_, _| {},
        );
        let a = p.stats().agreement;
        assert_eq!((a.compared, a.agreed, a.native_only), (1, 1, 1), "{:?}", a.first_disagreement);
    }
}

#[cfg(test)]
mod malformed_tests {
    use super::*;
    use xpuprof_sdk::emit::Emitter;

    #[test]
    fn a_malformed_record_is_skipped_and_counted_and_the_rest_is_kept() {
        let sample = |time: u64| {
            Record::CpuSample(CpuSample::default().pid(1).tid(1).time(time).kind(SampleKind::OnCpu).weight(1))
        };
        let mut e = Emitter::detached();
        e.emit(&sample(1));
        let mut batch = e.take_buffer();
        // A framed record of a known kind whose payload is malformed (an overlong varint).
        batch.extend_from_slice(&[
            batch[0], 11, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01,
        ]);
        e.emit(&sample(2));
        batch.extend(e.take_buffer());
        let mut p = Pipeline::new(1, false);
        let mut records = Vec::new();
        p.push(0, &batch, &mut |b, _| records.append(b));
        p.finish(&mut |b, _| records.append(b));
        let times: Vec<u64> = records
            .iter()
            .filter_map(|r| if let Record::CpuSample(s) = r { Some(s.time) } else { None })
            .collect();
        assert_eq!(times, [1, 2], "the samples around the bad record are kept");
        assert_eq!(p.stats().malformed_per_source, [1]);
        assert!(
            records.iter().any(|r| matches!(r, Record::Loss(l) if l.count == 1)),
            "the loss reaches the sinks"
        );
        assert_eq!(p.stats().losses.get("malformed records from a source, skipped"), Some(&1));
    }
}

#[cfg(test)]
mod mark_tests {
    use super::*;
    use xpuprof_sdk::emit::Emitter;

    #[test]
    fn a_batch_is_marked_event_only_when_no_definition_went_out_since_the_last() {
        let mut e = Emitter::detached();
        e.emit(&Record::Str(StrDef::default().id(StrId(1)).text("main".into())));
        e.emit(&Record::CpuSample(CpuSample::default().pid(1).tid(1).time(5)));
        let mut p = Pipeline::new(1, false);
        let mut marks = Vec::new();
        p.push(0, &e.take_buffer(), &mut |_, _| {});
        p.flush(&mut |b, definitions| marks.push((b.len(), definitions)));
        e.emit(&Record::CpuSample(CpuSample::default().pid(1).tid(1).time(6)));
        p.push(0, &e.take_buffer(), &mut |_, _| {});
        p.flush(&mut |b, definitions| marks.push((b.len(), definitions)));
        assert_eq!(marks, [(2, true), (1, false)]);
    }
}

#[cfg(test)]
mod cut_tests {
    use super::*;
    use xpuprof_sdk::emit::Emitter;

    #[test]
    fn address_only_frames_at_the_root_end_are_cut() {
        let mut e = Emitter::detached();
        e.emit(&Record::Str(StrDef::default().id(StrId(1)).text("/lib/libx.so".into())));
        e.emit(&Record::Module(ModuleDef::default().id(ModuleId(1)).path(StrId(1))));
        let frame = |id: u32, module: u32, address: u64| {
            Record::Frame(
                FrameDef::default()
                    .id(FrameId(id))
                    .kind(FrameKind::FileOffset)
                    .module(ModuleId(module))
                    .address(address)
                    .pid(1),
            )
        };
        e.emit(&frame(1, 1, 0x10));
        e.emit(&frame(2, 1, 0x20));
        e.emit(&frame(3, 0, 0xdead));
        e.emit(&Record::Stack(StackDef::default().id(StackId(1)).frames(vec![
            FrameId(1),
            FrameId(2),
            FrameId(3),
        ])));
        let mut p = Pipeline::new(1, false);
        let mut out = Vec::new();
        p.push(0, &e.take_buffer(), &mut |b, _| out.append(b));
        p.finish(&mut |b, _| out.append(b));
        let stack = out
            .into_iter()
            .find_map(|r| match r {
                Record::Stack(s) => Some(s),
                _ => None,
            })
            .unwrap();
        assert_eq!(stack.frames.len(), 2);
        assert_eq!(p.stats().frames_cut, 1);
    }
}

#[cfg(test)]
mod align_tests {
    use super::skip_loader_leaf;

    fn v(x: &[&str]) -> Vec<String> {
        x.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn leaf_frames_one_path_saw_are_skipped_only_when_they_align() {
        let mut a =
            v(&["/opt/x/libxpuprof_agent.so+0x1", "/lib/libtool.so+0x2", "/lib/librt.so+0x10", "/app+0x20"]);
        assert!(skip_loader_leaf(&mut a, &v(&["/lib/librt.so+0x10", "/app+0x20"])));
        assert_eq!(a, v(&["/lib/librt.so+0x10", "/app+0x20"]));
        // Already aligned: nothing to skip.
        assert!(!skip_loader_leaf(&mut a, &v(&["/lib/librt.so+0x10"])));
        // Frames that do not lead to the other stack's leaf are kept, and so is a disagreement.
        let mut c = v(&["/lib/librt.so+0x5", "/app+0x1"]);
        assert!(!skip_loader_leaf(&mut c, &v(&["/app+0x2"])));
        assert_eq!(c.len(), 2);
        let mut d = v(&["launch", "main"]);
        assert!(!skip_loader_leaf(&mut d, &v(&["other", "main"])));
    }
}

#[cfg(test)]
mod clock_tests {
    use super::*;
    use xpuprof_sdk::Emitter;

    #[test]
    fn foreign_clock_domains_are_converted_and_unpaired_ones_reported() {
        let mut e = Emitter::detached();
        let (paired, unpaired) = (ClockDomain(5), ClockDomain(6));
        e.emit(&Record::ClockDomain(ClockDomainDef::default().domain(paired).ticks_per_second(1_000_000)));
        e.emit(&Record::ClockSync(ClockSync::new(paired, 10, 5_000_000)));
        e.emit(&Record::DeviceOp(DeviceOp::default().clock(paired).start(12).end(13)));
        e.emit(&Record::DeviceOp(DeviceOp::default().clock(unpaired).start(1).end(2)));
        e.emit(&Record::ApiCall(ApiCall::default().clock(unpaired).start(1).end(2)));
        let mut p = Pipeline::new(1, false);
        let mut recs = Vec::new();
        p.push(0, &e.take_buffer(), &mut |b, _| recs.append(b));
        p.finish(&mut |b, _| recs.append(b));
        let ops: Vec<_> = recs
            .iter()
            .filter_map(|r| match r {
                Record::DeviceOp(op) => Some((op.start, op.end, op.clock)),
                _ => None,
            })
            .collect();
        assert_eq!(
            ops,
            [(5_002_000, 5_003_000, ClockDomain::SESSION)],
            "µs ticks converted, unpaired dropped"
        );
        assert!(!recs.iter().any(|r| matches!(r, Record::ClockDomain(_) | Record::ApiCall(_))));
        let cause = "records in a clock domain never paired with the session clock";
        assert_eq!(p.stats().losses.get(cause), Some(&2));
        assert!(recs.iter().any(|r| matches!(r, Record::Loss(l) if l.count == 2)));
    }
}
