//! The event pipeline: source batches in; renumbered, clock-converted, symbolised and
//! correlated records out to the sinks, as soon as they are final.

pub mod clock;
pub mod correlator;
pub mod intern;
pub mod symbolizer;

use std::collections::BTreeMap;
use std::time::Instant;

use xpuprof_sdk::codec::{self, Decoder};
use xpuprof_sdk::model::*;

use clock::ClockMap;
use correlator::{CorrelationStats, Correlator};
use intern::{Globals, SourceIds};

/// Output is handed to the sinks once this much is buffered.
const OUT_FLUSH_BYTES: usize = 256 * 1024;

/// Per-source state and counters.
#[derive(Debug, Default)]
struct SourceState {
    ids: SourceIds,
    clocks: ClockMap,
    records: u64,
    malformed: u64,
}

/// Counters the end summary shows.
#[derive(Debug, Clone, Default)]
pub struct PipelineStats {
    /// Records received, per source index.
    pub records_per_source: Vec<u64>,
    /// Malformed batches, per source index.
    pub malformed_per_source: Vec<u64>,
    /// Losses reported, by cause.
    pub losses: BTreeMap<String, u64>,
    /// Correlation counters.
    pub correlation: CorrelationStats,
    /// References to undefined ids (a source bug), all sources.
    pub dangling: u64,
    /// Frames that could not be symbolised.
    pub unsymbolized: u64,
    /// Records handed to sinks.
    pub records_out: u64,
}

/// The pipeline. Not thread-safe: one thread owns it and calls the sinks.
#[derive(Debug)]
pub struct Pipeline {
    sources: Vec<SourceState>,
    globals: Globals,
    correlator: Correlator,
    out: Vec<u8>,
    out_records: u64,
    losses: BTreeMap<String, u64>,
    /// Latest event time seen (session clock), for records made at the end.
    last_time: u64,
}

impl Pipeline {
    /// A pipeline for `n_sources` sources; `symbolize` turns the symbolizer on.
    pub fn new(n_sources: usize, symbolize: bool) -> Self {
        let mut globals = Globals::default();
        globals.symbolize = symbolize;
        Self {
            sources: (0..n_sources).map(|_| SourceState::default()).collect(),
            globals,
            correlator: Correlator::default(),
            out: Vec::with_capacity(OUT_FLUSH_BYTES * 2),
            out_records: 0,
            losses: BTreeMap::new(),
            last_time: 0,
        }
    }

    /// Processes one batch from source `source`; calls `sink` with output batches.
    pub fn push(&mut self, source: usize, batch: &[u8], sink: &mut dyn FnMut(&[u8])) {
        let now = Instant::now();
        for rec in Decoder::new(batch) {
            match rec {
                Ok(r) => self.record(source, r, now),
                Err(e) => {
                    self.sources[source].malformed += 1;
                    tracing::warn!("source #{source} sent a malformed batch, rest of it dropped: {e}");
                }
            }
            if self.out.len() >= OUT_FLUSH_BYTES {
                self.flush(sink);
            }
        }
    }

    fn emit(&mut self, r: &Record) {
        codec::encode(r, &mut self.out);
        self.out_records += 1;
    }

    fn emit_ops(&mut self, ops: Vec<DeviceOp>) {
        for op in ops {
            self.emit(&Record::DeviceOp(op));
        }
    }

    fn record(&mut self, source: usize, r: Record, now: Instant) {
        // Take the source's state out so `self` stays free for emitting.
        let mut st = std::mem::take(&mut self.sources[source]);
        st.records += 1;
        if r.is_definition() {
            self.globals.define(&mut st.ids, &r, &mut self.out);
        } else {
            self.event(&mut st, r, now);
        }
        self.sources[source] = st;
    }

    fn event(&mut self, st: &mut SourceState, r: Record, now: Instant) {
        let ids = &mut st.ids;
        match r {
            Record::ApiCall(mut c) => {
                self.last_time = self.last_time.max(c.end);
                c.name = ids.str(c.name);
                let ops = self.correlator.api_call(&c, now);
                self.emit(&Record::ApiCall(c));
                self.emit_ops(ops);
            }
            Record::LaunchSite(mut s) => {
                s.api = ids.str(s.api);
                s.stack = ids.stack(s.stack);
                let ops = self.correlator.launch_site(&s, now);
                self.emit(&Record::LaunchSite(s));
                self.emit_ops(ops);
            }
            Record::DeviceOp(mut op) => {
                op.device = ids.device(op.device);
                op.stream = ids.stream(op.stream);
                op.name = ids.str(op.name);
                op.start = st.clocks.convert(op.clock, op.start);
                op.end = st.clocks.convert(op.clock, op.end);
                op.clock = ClockDomain::SESSION;
                self.last_time = self.last_time.max(op.end);
                // `launch` is the correlator's to fill, never a source's.
                op.launch = None;
                if let Some(op) = self.correlator.device_op(op, now) {
                    self.emit(&Record::DeviceOp(op));
                }
            }
            Record::CpuSample(mut s) => {
                self.last_time = self.last_time.max(s.time);
                s.stack = ids.stack(s.stack);
                self.emit(&Record::CpuSample(s));
            }
            Record::Marker(mut a) => {
                a.name = ids.str(a.name);
                a.domain = ids.str(a.domain);
                self.emit(&Record::Marker(a));
            }
            Record::Range(mut a) => {
                a.name = ids.str(a.name);
                a.domain = ids.str(a.domain);
                self.emit(&Record::Range(a));
            }
            Record::Counter(mut c) => {
                c.name = ids.str(c.name);
                c.device = ids.device(c.device);
                self.emit(&Record::Counter(c));
            }
            Record::Loss(mut l) => {
                l.cause = ids.str(l.cause);
                *self.losses.entry(self.globals.text(l.cause).to_owned()).or_default() += l.count;
                self.emit(&Record::Loss(l));
            }
            Record::ClockSync(s) => st.clocks.sync(&s),
            _ => {}
        }
    }

    /// Periodic work: releases device work whose launch did not arrive in time.
    pub fn tick(&mut self, sink: &mut dyn FnMut(&[u8])) {
        let ops = self.correlator.expire(Instant::now());
        self.emit_ops(ops);
        self.flush(sink);
    }

    /// Hands buffered output to the sinks.
    pub fn flush(&mut self, sink: &mut dyn FnMut(&[u8])) {
        if !self.out.is_empty() {
            sink(&self.out);
            self.out.clear();
        }
    }

    /// End of the session: releases everything still waiting and reports unmatched device
    /// work as a loss record, so every sink shows it.
    pub fn finish(&mut self, sink: &mut dyn FnMut(&[u8])) {
        let ops = self.correlator.finish(Instant::now());
        self.emit_ops(ops);
        let unmatched = self.correlator.stats().unmatched;
        if unmatched > 0 {
            let cause = self.globals.intern("device work without a launch site", &mut self.out);
            self.emit(&Record::Loss(Loss { pid: 0, time: self.last_time, cause, count: unmatched }));
        }
        self.flush(sink);
    }

    /// Counters so far.
    pub fn stats(&self) -> PipelineStats {
        PipelineStats {
            records_per_source: self.sources.iter().map(|s| s.records).collect(),
            malformed_per_source: self.sources.iter().map(|s| s.malformed).collect(),
            losses: self.losses.clone(),
            correlation: self.correlator.stats().clone(),
            dangling: self.sources.iter().map(|s| s.ids.dangling).sum(),
            unsymbolized: self.globals.symbolizer.failures,
            records_out: self.out_records,
        }
    }
}
