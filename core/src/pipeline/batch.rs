//! A batch of records on its way to the sinks: decoded once, shared by every sink thread.
//!
//! Sinks whose build lays out `Record` like the host's are lent the records themselves
//! (`Instance::consume_batch`); the encoded form is made only when some sink needs it (a plugin
//! built with an older SDK or another compiler), once per batch whatever the number of such
//! sinks, by the first sink thread that asks.

use std::sync::{Arc, Mutex, OnceLock};

use xpuprof_sdk::codec;
use xpuprof_sdk::model::{
    Annotation, ApiCall, ClockSync, Counter, CpuSample, DeviceOp, LaunchSite, Loss, Overhead, Record,
    Retirement,
};

/// Records in a batch handed to the sinks: about 1.2 MiB of `Record`s, 100–300 KiB encoded.
pub const BATCH_RECORDS: usize = 8192;

/// Emptied batch vectors kept for reuse (at most this many).
const POOL_MAX: usize = 64;

/// Batch vectors for reuse: a batch's vector goes back here when the last sink is done with it,
/// so the producer does not allocate (and the kernel does not zero) 1.3 MiB per batch.
#[derive(Debug, Default, Clone)]
pub struct BatchPool(Arc<Mutex<Vec<Vec<Record>>>>);

impl BatchPool {
    /// An empty vector with room for a batch.
    pub fn take(&self) -> Vec<Record> {
        let reused = self.0.lock().unwrap_or_else(|e| e.into_inner()).pop();
        reused.unwrap_or_else(|| Vec::with_capacity(BATCH_RECORDS + 64))
    }

    fn give(&self, mut records: Vec<Record>, definitions: bool) {
        // Only vectors with room for a batch are worth keeping: a smaller one (the periodic
        // empty batch's) handed out again would be regrown by doubling, a copy of up to a
        // whole batch each time.
        if records.capacity() < BATCH_RECORDS {
            return;
        }
        if definitions {
            records.clear();
        } else {
            forget_events(&mut records);
        }
        let mut pool = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if pool.len() < POOL_MAX {
            pool.push(records);
        }
    }
}

// Every record but a definition owns no memory: a batch without definitions can be emptied
// without dropping its records one by one.
const _: () = assert!(
    !std::mem::needs_drop::<ApiCall>()
        && !std::mem::needs_drop::<DeviceOp>()
        && !std::mem::needs_drop::<LaunchSite>()
        && !std::mem::needs_drop::<CpuSample>()
        && !std::mem::needs_drop::<Annotation>()
        && !std::mem::needs_drop::<Counter>()
        && !std::mem::needs_drop::<Loss>()
        && !std::mem::needs_drop::<ClockSync>()
        && !std::mem::needs_drop::<Overhead>()
        && !std::mem::needs_drop::<Retirement>()
);

/// Empties `records`, which hold no definition, without visiting them: dropping them one by
/// one read the whole 1.3 MiB batch again only to find nothing to free (3% of a replay).
fn forget_events(records: &mut Vec<Record>) {
    debug_assert!(!records.iter().any(Record::is_definition));
    // SAFETY: a length of zero exposes no element, so nothing uninitialized becomes reachable.
    // The records are not dropped: they are events, which own no memory (every record kind but
    // the definitions needs no drop, asserted at compile time above), so nothing leaks.
    unsafe { records.set_len(0) };
}

/// One batch of records, in the order every sink receives them.
#[derive(Debug, Default)]
pub struct RecordBatch {
    records: Vec<Record>,
    encoded: OnceLock<Vec<u8>>,
    pool: Option<BatchPool>,
    /// The batch may hold a definition (records that own memory).
    definitions: bool,
}

impl Drop for RecordBatch {
    fn drop(&mut self) {
        if let Some(pool) = self.pool.take() {
            pool.give(std::mem::take(&mut self.records), self.definitions);
        }
    }
}

impl RecordBatch {
    /// A batch of `records`.
    pub fn new(records: Vec<Record>) -> Self {
        Self { records, encoded: OnceLock::new(), pool: None, definitions: true }
    }

    /// A batch of `records` whose vector goes back to `pool` when the batch is dropped;
    /// `definitions` is false only when the producer knows that no record is a definition.
    pub fn pooled(records: Vec<Record>, pool: &BatchPool, definitions: bool) -> Self {
        Self { records, encoded: OnceLock::new(), pool: Some(pool.clone()), definitions }
    }

    /// The records.
    pub fn records(&self) -> &[Record] {
        &self.records
    }

    /// The records in the batch codec's encoding (made on first use).
    pub fn encoded(&self) -> &[u8] {
        self.encoded.get_or_init(|| {
            let mut out = Vec::with_capacity(self.records.len() * 24);
            for r in &self.records {
                codec::encode(r, &mut out);
            }
            out
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use xpuprof_sdk::model::{CpuSample, StrDef, StrId};

    #[test]
    fn the_encoded_form_decodes_to_the_same_records() {
        let records = vec![
            Record::Str(StrDef::default().id(StrId(1)).text("main".into())),
            Record::CpuSample(CpuSample::default().pid(1).tid(2).time(3)),
        ];
        let b = RecordBatch::new(records.clone());
        assert_eq!(codec::decode_all(b.encoded()).unwrap(), records);
        assert!(std::ptr::eq(b.encoded(), b.encoded()), "encoded once");
    }

    #[test]
    fn a_pooled_batch_gives_its_vector_back_empty() {
        let pool = BatchPool::default();
        let mut v = pool.take();
        v.push(Record::CpuSample(CpuSample::default()));
        let ptr = v.as_ptr();
        drop(RecordBatch::pooled(v, &pool, true));
        let again = pool.take();
        assert!(again.is_empty() && std::ptr::eq(again.as_ptr(), ptr), "the same vector, emptied");
    }

    #[test]
    fn a_vector_too_small_for_a_batch_is_not_kept() {
        let pool = BatchPool::default();
        drop(RecordBatch::pooled(Vec::new(), &pool, true));
        assert!(pool.take().capacity() >= BATCH_RECORDS, "the pool hands out only room for a batch");
    }

    #[test]
    fn a_batch_of_events_is_emptied_without_dropping_them_and_definitions_are_dropped() {
        let pool = BatchPool::default();
        let mut v = pool.take();
        v.extend((0..100).map(|t| Record::CpuSample(CpuSample::default().time(t))));
        drop(RecordBatch::pooled(v, &pool, false));
        assert!(pool.take().is_empty());
        let mut v = pool.take();
        v.push(Record::Str(StrDef::default().id(StrId(1)).text("main".into())));
        drop(RecordBatch::pooled(v, &pool, true));
        assert!(pool.take().is_empty());
    }
}
