//! The compact per-location event encoding.
//!
//! Each record is `header: u8`, an optional sequence delta, then its body:
//! - header low 4 bits: the event's archive kind (0 = raw); high 4 bits: the global sequence
//!   delta from the previous record of this location (1..=15), or 0 when a varint delta follows;
//! - raw records: varint length + the record's `xpuprof_sdk::codec` bytes;
//! - other kinds: a varint mask of the columns that differ from their prediction, then for each
//!   of them the zig-zag varint of `value - prediction` (wrapping).
//!
//! Format version 2 takes the columns, their hints and the kind numbers from the model schema
//! (`xpuprof_sdk::codec::columns`): the mask's bit `i` is the `i`-th column in [`Layout::order`]
//! (the columns the schema marks as changing often first). Version 1 archives are read through
//! the frozen table of [`crate::layout_v1`].
//!
//! Predictions restart from zero at every chunk, so chunks decode on their own.

use std::sync::OnceLock;

use xpuprof_sdk::codec::columns::{Hint, Row, RowReader, MAX_COLUMNS};
use xpuprof_sdk::codec::{self, put_varint, Cursor};
use xpuprof_sdk::model::Record;

use crate::layout_v1;

/// Archive kinds fit the header's low 4 bits.
const KINDS: usize = 16;

/// The columns of one archive kind in mask order.
#[derive(Debug)]
pub struct Layout {
    /// Column index of mask bit `i`.
    pub order: Vec<usize>,
    /// Mask bit of each column (by column index).
    bit_of: Vec<u8>,
    /// The columns not predicted from the previous event of the kind (times, correlation
    /// ids), with where their prediction comes from.
    special: Vec<(usize, Source)>,
    /// The column whose value the location's next time prediction is (the last time column),
    /// and the same for correlation ids.
    time_col: Option<usize>,
    corr_col: Option<usize>,
}

/// Where a column's prediction comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Source {
    Time,
    Correlation,
    Previous,
}

impl Layout {
    fn new(hints: Vec<Hint>) -> Self {
        let mut order: Vec<usize> = (0..hints.len()).collect();
        // Columns that usually change go first, so the mask usually fits a byte or two.
        order.sort_by_key(|&i| u8::from(hints[i] == Hint::Cold));
        let source = |h: Hint| match h {
            Hint::Time => Source::Time,
            Hint::Correlation => Source::Correlation,
            Hint::Hot | Hint::Cold => Source::Previous,
        };
        let mut bit_of = vec![0u8; hints.len()];
        for (bit, &col) in order.iter().enumerate() {
            bit_of[col] = bit as u8;
        }
        let special =
            (0..hints.len()).map(|c| (c, source(hints[c]))).filter(|(_, s)| *s != Source::Previous).collect();
        let time_col = hints.iter().rposition(|h| *h == Hint::Time);
        let corr_col = hints.iter().rposition(|h| *h == Hint::Correlation);
        Self { order, bit_of, special, time_col, corr_col }
    }
}

/// Longest encoding of one event's mask and deltas: one varint each.
const MAX_EVENT_BYTES: usize = (MAX_COLUMNS + 1) * 10;

/// The layout of archive kind `kind` (format version 2), from the schema.
pub fn layout(kind: u8) -> Option<&'static Layout> {
    static LAYOUTS: OnceLock<Vec<Option<Layout>>> = OnceLock::new();
    let all = LAYOUTS
        .get_or_init(|| (0..KINDS as u8).map(|k| Some(Layout::new(Record::column_hints(k)?))).collect());
    all.get(usize::from(kind))?.as_ref()
}

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
    version: u32,
    last_seq: u64,
    last_time: u64,
    last_corr: u64,
    prev: Box<[[u64; MAX_COLUMNS]; KINDS]>,
    row: Row,
    raw: Vec<u8>,
}

impl LocState {
    /// State at the start of a chunk of format `version` whose first record has sequence number
    /// `first_seq`.
    pub fn new(first_seq: u64, version: u32) -> Self {
        Self {
            version,
            last_seq: first_seq.wrapping_sub(1),
            last_time: 0,
            last_corr: 0,
            prev: Box::new([[0; MAX_COLUMNS]; KINDS]),
            row: Row::new(),
            raw: Vec::new(),
        }
    }

    /// Restarts the predictions for a new chunk (keeps the buffers).
    pub fn reset(&mut self, first_seq: u64) {
        self.last_seq = first_seq.wrapping_sub(1);
        self.last_time = 0;
        self.last_corr = 0;
        for p in self.prev.iter_mut() {
            *p = [0; MAX_COLUMNS];
        }
    }

    /// Sequence number of the last record encoded or decoded.
    pub fn last_seq(&self) -> u64 {
        self.last_seq
    }

    fn put_header(&mut self, kind: u8, seq: u64, out: &mut Vec<u8>) {
        let delta = seq.wrapping_sub(self.last_seq);
        self.last_seq = seq;
        if (1..16).contains(&delta) {
            out.push(kind | (delta as u8) << 4);
        } else {
            out.push(kind);
            put_varint(out, delta);
        }
    }

    /// Appends record `r` with global sequence number `seq` (format version 2).
    pub fn encode(&mut self, seq: u64, r: &Record, out: &mut Vec<u8>) {
        self.row.clear();
        let layout = r.put_columns(&mut self.row).and_then(|k| Some((k, layout(k)?)));
        let Some((kind, lay)) = layout else {
            self.put_header(0, seq, out);
            self.raw.clear();
            codec::encode(r, &mut self.raw);
            codec::put_bytes(out, &self.raw);
            return;
        };
        self.put_header(kind, seq, out);
        let Self { row, prev, last_time, last_corr, .. } = self;
        let n = row.len().min(lay.order.len());
        let prev = &mut prev[usize::from(kind)];
        // The prediction of every column, in place: the previous event of the kind's value,
        // except for the few predicted otherwise (their own previous value is never a
        // prediction, so the slot holds their prediction until the event is encoded).
        for &(col, src) in &lay.special {
            prev[col] = if src == Source::Time { *last_time } else { *last_corr };
        }
        let changed = crate::changed::changed_columns(&row.values, prev, n);
        let values = &row.values[..n];
        // The changed columns as mask bits, then their deltas in mask order.
        let mut mask = 0u64;
        let mut m = changed;
        while m != 0 {
            let col = m.trailing_zeros() as usize;
            mask |= 1 << lay.bit_of[col];
            m &= m - 1;
        }
        out.reserve(MAX_EVENT_BYTES);
        put_varint(out, mask);
        let mut m = mask;
        while m != 0 {
            let col = lay.order[m.trailing_zeros() as usize];
            let (v, p) = (values[col], &mut prev[col]);
            put_varint(out, codec::wire::zigzag(v.wrapping_sub(*p) as i64));
            // The unchanged columns already hold the event's value.
            *p = v;
            m &= m - 1;
        }
        Self::remember_predictions(last_time, last_corr, lay, values);
    }

    /// Updates the location-wide predictions (time, correlation id) from an event's columns.
    #[inline]
    fn remember_predictions(last_time: &mut u64, last_corr: &mut u64, lay: &Layout, values: &[u64]) {
        if let Some(c) = lay.time_col {
            *last_time = values[c];
        }
        if let Some(c) = lay.corr_col {
            *last_corr = values[c];
        }
    }

    /// Decodes the next record from `c` onto the end of `out` (straight into the replay's
    /// output batch: a `Record` is large, and each move of it costs about as much as its
    /// decoding); returns its sequence number, or what is wrong with a malformed record (then
    /// nothing is added).
    #[inline(always)]
    pub fn decode_into(&mut self, c: &mut Cursor<'_>, out: &mut Vec<Record>) -> Result<u64, Malformed> {
        let header = c.u8();
        let kind = header & 0x0f;
        let delta = match header >> 4 {
            0 => c.varint(),
            d => u64::from(d),
        };
        self.last_seq = self.last_seq.wrapping_add(delta);
        if kind == 0 {
            let bytes = c.bytes();
            if c.is_bad() {
                return Err(Malformed::lost("raw record runs past the end of its chunk"));
            }
            // Exactly one valid record, so what reaches the sinks is always one whole record.
            let mut check = codec::Decoder::new(bytes);
            return match (check.next(), check.next()) {
                (Some(Ok(r)), None) if check.skipped() == 0 => {
                    out.push(r);
                    Ok(self.last_seq)
                }
                // Its length framed it: the records after it still decode.
                _ => Err(Malformed { why: "raw record is not exactly one valid record", framed: true }),
            };
        }
        if self.version == 1 {
            out.push(self.decode_v1(kind, c).map_err(Malformed::lost)?);
        } else {
            self.decode_v2(kind, c, out).map_err(Malformed::lost)?;
        }
        Ok(self.last_seq)
    }

    #[inline(always)]
    fn decode_v2(&mut self, kind: u8, c: &mut Cursor<'_>, out: &mut Vec<Record>) -> Result<(), &'static str> {
        let lay = layout(kind).ok_or("unknown event kind")?;
        let n = lay.order.len();
        let mask = c.varint();
        if n < 64 && mask >> n != 0 {
            return Err("field mask names fields the event kind does not have");
        }
        // Decoded in place: the previous event of the kind becomes this one (an error drops the
        // rest of the chunk, whose predictions then no longer matter).
        let Self { prev, last_time, last_corr, .. } = self;
        let values = &mut prev[usize::from(kind)];
        for &(col, src) in &lay.special {
            values[col] = if src == Source::Time { *last_time } else { *last_corr };
        }
        let mut m = mask;
        while m != 0 {
            let col = lay.order[m.trailing_zeros() as usize];
            values[col] = values[col].wrapping_add(codec::wire::unzigzag(c.varint()) as u64);
            m &= m - 1;
        }
        if c.is_bad() {
            return Err("event runs past the end of its chunk");
        }
        Self::remember_predictions(last_time, last_corr, lay, &values[..n]);
        if !Record::push_from_columns(kind, &mut RowReader::new(&values[..n]), out) {
            return Err("unknown event kind");
        }
        Ok(())
    }

    fn decode_v1(&mut self, kind: u8, c: &mut Cursor<'_>) -> Result<Record, &'static str> {
        let kind = layout_v1::Kind::from_u8(kind).ok_or("unknown event kind")?;
        let n = kind.len();
        let mask = c.varint();
        if mask >> n != 0 {
            return Err("field mask names fields the event kind does not have");
        }
        let k = kind as usize;
        let mut f = [0; layout_v1::MAX_FIELDS];
        for (i, v) in f.iter_mut().enumerate().take(n) {
            let p = match layout_v1::predictor(kind, i) {
                layout_v1::Predict::Time => self.last_time,
                layout_v1::Predict::Correlation => self.last_corr,
                layout_v1::Predict::Previous => self.prev[k][i],
            };
            *v = if mask & (1 << i) != 0 {
                p.wrapping_add(codec::wire::unzigzag(c.varint()) as u64)
            } else {
                p
            };
        }
        if c.is_bad() {
            return Err("event runs past the end of its chunk");
        }
        self.last_time = f[0];
        for (i, v) in f.iter().enumerate().take(n) {
            if layout_v1::predictor(kind, i) == layout_v1::Predict::Correlation {
                self.last_corr = *v;
            }
            self.prev[k][i] = *v;
        }
        layout_v1::unflatten(kind, &f).ok_or("unknown event kind")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sample;

    #[test]
    fn the_sample_session_round_trips_through_one_location() {
        let recs = sample::session();
        let mut st = LocState::new(0, crate::VERSION);
        let mut buf = Vec::new();
        for (i, r) in recs.iter().enumerate() {
            st.encode(i as u64, r, &mut buf);
        }
        let mut rd = LocState::new(0, crate::VERSION);
        let mut c = Cursor::new(&buf);
        let mut out = Vec::new();
        while !c.at_end() {
            rd.decode_into(&mut c, &mut out).unwrap();
        }
        assert_eq!(out, recs);
    }

    #[test]
    fn every_schema_kind_has_a_layout() {
        for k in Record::archive_kinds() {
            assert!(layout(*k).is_some(), "kind {k}");
        }
    }
}
