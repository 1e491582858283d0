//! The event pipeline: source batches in; renumbered, clock-converted, symbolised and
//! correlated records out to the sinks, as soon as they are final.

mod agreement;
pub mod batch;
pub mod clock;
pub mod correlator;
pub mod intern;
pub mod launches;
mod losses;
mod plt;
pub mod recordings;
pub mod sinks;
pub mod symbolizer;
mod translate;

pub use agreement::Agreement;

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

    /// Periodic work: releases device work whose launch did not arrive in time, and names the
    /// processes whose rank could not be read while they were in the middle of `exec`.
    pub fn tick(&mut self, sink: &mut dyn FnMut(&mut Vec<Record>, bool)) {
        self.session.globals.recheck_ranks(&mut self.session.out);
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
        self.session.report_losses(&self.sources);
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

#[cfg(test)]
mod tests;
