//! A batch of records on its way to the sinks: decoded once, shared by every sink thread.
//!
//! Sinks whose build lays out `Record` like the host's are lent the records themselves
//! (`Instance::consume_batch`); the encoded form is made only when some sink needs it (a plugin
//! built with an older SDK or another compiler), once per batch whatever the number of such
//! sinks, by the first sink thread that asks.

use std::sync::OnceLock;

use xpuprof_sdk::codec;
use xpuprof_sdk::model::Record;

/// Records in a batch handed to the sinks: about 1.2 MiB of `Record`s, 100–300 KiB encoded.
pub const BATCH_RECORDS: usize = 8192;

/// One batch of records, in the order every sink receives them.
#[derive(Debug, Default)]
pub struct RecordBatch {
    records: Vec<Record>,
    encoded: OnceLock<Vec<u8>>,
}

impl RecordBatch {
    /// A batch of `records`.
    pub fn new(records: Vec<Record>) -> Self {
        Self { records, encoded: OnceLock::new() }
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
}
