//! The compact per-location event encoding.
//!
//! Each record is `header: u8`, an optional sequence delta, then its body:
//! - header low 4 bits: the [`Kind`]; high 4 bits: the global sequence delta from the previous
//!   record of this location (1..=15), or 0 when a varint delta follows;
//! - raw records: varint length + the record's `xpuprof_sdk::codec` bytes;
//! - other kinds: a varint mask of the fields that differ from their prediction, then for each of
//!   them the zig-zag varint of `value - prediction` (wrapping).
//!
//! Predictions (see [`predictor`]) restart from zero at every chunk, so chunks decode on their
//! own.

use xpuprof_sdk::codec::{self, put_varint, Cursor};
use xpuprof_sdk::model::Record;

use crate::fields::{flatten, predictor, unflatten, Fields, Kind, Predict, MAX_FIELDS};

/// A record that does not decode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Malformed {
    /// What is wrong.
    pub why: &'static str,
    /// The record's extent was still known and the cursor is past it, so the records after it
    /// in the chunk decode; otherwise the rest of the chunk is lost.
    pub framed: bool,
}

impl Malformed {
    fn lost(why: &'static str) -> Self {
        Self { why, framed: false }
    }
}

/// Prediction state of one location within one chunk.
#[derive(Debug, Clone)]
pub struct LocState {
    last_seq: u64,
    last_time: u64,
    last_corr: u64,
    prev: [Fields; 7],
    scratch: Fields,
    raw: Vec<u8>,
}

impl LocState {
    /// State at the start of a chunk whose first record has sequence number `first_seq`.
    pub fn new(first_seq: u64) -> Self {
        Self {
            last_seq: first_seq.wrapping_sub(1),
            last_time: 0,
            last_corr: 0,
            prev: [[0; MAX_FIELDS]; 7],
            scratch: [0; MAX_FIELDS],
            raw: Vec::new(),
        }
    }

    /// Sequence number of the last record encoded or decoded.
    pub fn last_seq(&self) -> u64 {
        self.last_seq
    }

    fn prediction(&self, kind: Kind, i: usize) -> u64 {
        match predictor(kind, i) {
            Predict::Time => self.last_time,
            Predict::Correlation => self.last_corr,
            Predict::Previous => self.prev[kind as usize][i],
        }
    }

    fn remember(&mut self, kind: Kind, f: &Fields) {
        self.last_time = f[0];
        for (i, v) in f.iter().enumerate().take(kind.len()) {
            if predictor(kind, i) == Predict::Correlation {
                self.last_corr = *v;
            }
        }
        self.prev[kind as usize] = *f;
    }

    fn put_header(&mut self, kind: Kind, seq: u64, out: &mut Vec<u8>) {
        let delta = seq.wrapping_sub(self.last_seq);
        self.last_seq = seq;
        if (1..16).contains(&delta) {
            out.push(kind as u8 | (delta as u8) << 4);
        } else {
            out.push(kind as u8);
            put_varint(out, delta);
        }
    }

    /// Appends record `r` with global sequence number `seq`.
    pub fn encode(&mut self, seq: u64, r: &Record, out: &mut Vec<u8>) {
        let mut f = self.scratch;
        let Some(kind) = flatten(r, &mut f) else {
            self.put_header(Kind::Raw, seq, out);
            self.raw.clear();
            codec::encode(r, &mut self.raw);
            codec::put_bytes(out, &self.raw);
            return;
        };
        self.put_header(kind, seq, out);
        let mut mask = 0u64;
        for (i, v) in f.iter().enumerate().take(kind.len()) {
            if *v != self.prediction(kind, i) {
                mask |= 1 << i;
            }
        }
        put_varint(out, mask);
        for (i, v) in f.iter().enumerate().take(kind.len()) {
            if mask & (1 << i) != 0 {
                put_varint(out, zigzag(v.wrapping_sub(self.prediction(kind, i)) as i64));
            }
        }
        self.remember(kind, &f);
    }

    /// Decodes the next record from `c`, appending its codec bytes to `out`; returns its
    /// sequence number, or what is wrong with a malformed record (nothing is appended then).
    pub fn decode(&mut self, c: &mut Cursor<'_>, out: &mut Vec<u8>) -> Result<u64, Malformed> {
        let header = c.u8();
        let kind = Kind::from_u8(header & 0x0f).ok_or(Malformed::lost("unknown event kind"))?;
        let delta = match header >> 4 {
            0 => c.varint(),
            d => u64::from(d),
        };
        self.last_seq = self.last_seq.wrapping_add(delta);
        if kind == Kind::Raw {
            let bytes = c.bytes();
            if c.is_bad() {
                return Err(Malformed::lost("raw record runs past the end of its chunk"));
            }
            // Re-encoded rather than copied, so what reaches the sinks is always the codec's
            // own encoding of one record (for an intact archive, the same bytes).
            let mut check = codec::Decoder::new(bytes);
            let record = match (check.next(), check.next()) {
                (Some(Ok(r)), None) if check.skipped() == 0 => r,
                // Its length framed it: the records after it still decode.
                _ => {
                    return Err(Malformed { why: "raw record is not exactly one valid record", framed: true })
                }
            };
            codec::encode(&record, out);
            return Ok(self.last_seq);
        }
        let mask = c.varint();
        if mask >> kind.len() != 0 {
            return Err(Malformed::lost("field mask names fields the event kind does not have"));
        }
        let mut f = [0; MAX_FIELDS];
        for (i, v) in f.iter_mut().enumerate().take(kind.len()) {
            let p = self.prediction(kind, i);
            *v = if mask & (1 << i) != 0 { p.wrapping_add(unzigzag(c.varint()) as u64) } else { p };
        }
        if c.is_bad() {
            return Err(Malformed::lost("event runs past the end of its chunk"));
        }
        self.remember(kind, &f);
        let r = unflatten(kind, &f).ok_or(Malformed::lost("unknown event kind"))?;
        codec::encode(&r, out);
        Ok(self.last_seq)
    }
}

fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

fn unzigzag(v: u64) -> i64 {
    ((v >> 1) as i64) ^ -((v & 1) as i64)
}
