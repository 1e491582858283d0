//! The sinks, each on its own thread behind a bounded queue.
//!
//! A slow sink holds the pipeline back only once its queue is full; a stuck one is abandoned
//! when its call is overdue, and the others go on. Every sink that is still live receives
//! exactly the same batches in the same order, which is what makes `xpuprof report` reproduce
//! a live run's outputs.

use std::sync::Arc;

use xpuprof_sdk::model::Record;

use super::batch::{BatchPool, RecordBatch};
use crate::host::{CallError, PluginThread};

/// Batches waiting per sink (each up to [`super::batch::BATCH_RECORDS`] records, about
/// 1.2 MiB): bounds the memory a slow sink costs. The batches are shared, so all sinks together
/// hold at most this many.
pub const SINK_QUEUE: usize = 16;

/// The session's sinks.
#[derive(Debug)]
pub struct Sinks {
    sinks: Vec<Option<PluginThread>>,
    failures: Vec<String>,
    pool: BatchPool,
}

/// What the sinks produced.
#[derive(Debug, Default)]
pub struct SinkResults {
    /// Files written.
    pub files: Vec<String>,
    /// Sinks that failed or were abandoned, with the reason.
    pub failures: Vec<String>,
}

impl Sinks {
    /// The sinks, already created on their threads.
    pub fn new(sinks: Vec<PluginThread>) -> Self {
        Self {
            sinks: sinks.into_iter().map(Some).collect(),
            failures: Vec::new(),
            pool: BatchPool::default(),
        }
    }

    /// Hands the records in `records` to every live sink (all share them; none copies them),
    /// leaving an empty vector from the pool in their place.
    pub fn deliver(&mut self, records: &mut Vec<Record>) {
        self.deliver_marked(records, true);
    }

    /// [`Sinks::deliver`], where `definitions` is false when the producer knows that no record
    /// of the batch is a definition (the batch is then emptied without visiting its records).
    pub fn deliver_marked(&mut self, records: &mut Vec<Record>, definitions: bool) {
        // An unallocated vector (the periodic empty batch) is given nothing from the pool in
        // exchange: its caller has no use for a batch vector.
        let replacement = if records.capacity() == 0 { Vec::new() } else { self.pool.take() };
        let records = std::mem::replace(records, replacement);
        let batch = Arc::new(RecordBatch::pooled(records, &self.pool, definitions));
        for slot in &mut self.sinks {
            let Some(s) = slot else { continue };
            let b = Arc::clone(&batch);
            if let Err(e) = s.post("consume", move |inst| inst.consume_batch(&b)) {
                fail(&mut self.failures, slot, e);
            }
        }
    }

    /// Finishes every live sink (all at once, each bounded by its deadline), destroys them, and
    /// collects the files they wrote.
    pub fn finish(self) -> SinkResults {
        let mut results = SinkResults { files: Vec::new(), failures: self.failures };
        let done: Vec<(Vec<String>, Option<CallError>)> = std::thread::scope(|scope| {
            let handles: Vec<_> =
                self.sinks.into_iter().flatten().map(|sink| scope.spawn(move || finish_one(sink))).collect();
            handles.into_iter().map(|h| h.join().unwrap_or_default()).collect()
        });
        for (files, err) in done {
            results.files.extend(files);
            if let Some(e) = err {
                results.failures.push(e.to_string());
            }
        }
        results
    }
}

fn finish_one(mut sink: PluginThread) -> (Vec<String>, Option<CallError>) {
    let (files, mut err) = match sink.call("finish", |inst| inst.finish()) {
        Ok(files) => (files, None),
        Err(e) => {
            tracing::error!("{e}");
            (Vec::new(), Some(e))
        }
    };
    if let Err(e) = sink.shutdown() {
        err = err.or(Some(e));
    }
    (files, err)
}

fn fail(failures: &mut Vec<String>, slot: &mut Option<PluginThread>, e: CallError) {
    tracing::error!("{e}; continuing without it");
    failures.push(e.to_string());
    if let Some(s) = slot.take() {
        // Destroy a sink that failed (abandoned ones are left alone by `shutdown`).
        if let Err(e) = s.shutdown() {
            failures.push(e.to_string());
        }
    }
}
