//! Binary encoding of [`Record`]s: how events cross the plugin ABI.
//!
//! A batch is a plain byte buffer holding records back to back. Each record is
//! `tag: u8, len: varint, payload: len bytes`, so every record can be skipped on its own. A
//! payload is the record's *positional* fields (the fields of codec version 1, in their frozen
//! order, no keys), then its *keyed* fields (every field added since: `key = number << 3 |
//! wire type`, then the value; only fields that differ from their default are written). Both
//! are generated from the model's schema ([`crate::model::schema`]); `docs/formats.md` has the
//! bytes.
//!
//! The format only grows, which is what keeps old and new plugins compatible:
//! - a reader skips records whose tag it does not know (the length says how far);
//! - a reader skips keyed fields whose number it does not know (the wire type says how far),
//!   and a reader of codec version 1 ignores the keyed part altogether;
//! - a field missing from a payload reads as its default (an older writer).
//!
//! [`CODEC_VERSION`] is bumped when fields are added, for information only.

pub mod columns;
pub mod wire;

pub use wire::{put_bytes, put_svarint, put_varint, Cursor};

use crate::model::Record;

/// Version of the record encoding: 1 = positional fields only; 2 = keyed fields after them.
/// Only ever grows; see the module docs.
pub const CODEC_VERSION: u32 = 2;

/// Error decoding a batch: what was wrong and at which byte offset.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodeError {
    /// Byte offset in the batch where the bad record starts.
    pub offset: usize,
    /// What is wrong.
    pub reason: &'static str,
}

impl std::fmt::Display for DecodeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "bad record at byte {}: {}", self.offset, self.reason)
    }
}

impl std::error::Error for DecodeError {}

/// Encodes one record, appending it to `out`.
#[inline]
pub fn encode(record: &Record, out: &mut Vec<u8>) {
    out.push(record.tag());
    wire::put_len_prefixed(out, |o| record.put_payload(o));
}

/// Iterates over the records of a batch.
///
/// Unknown record tags are skipped. A malformed record ends the iteration with an error that
/// names its byte offset; everything before it has been returned.
#[derive(Debug)]
pub struct Decoder<'a> {
    buf: &'a [u8],
    pos: usize,
    skipped: u64,
}

/// One record's place in a batch: where it starts, its tag, its payload.
struct Frame<'a> {
    start: usize,
    tag: u8,
    payload: &'a [u8],
}

impl<'a> Decoder<'a> {
    /// A decoder over `buf`.
    pub fn new(buf: &'a [u8]) -> Self {
        Self { buf, pos: 0, skipped: 0 }
    }

    /// Records skipped because their tag is unknown to this SDK version.
    pub fn skipped(&self) -> u64 {
        self.skipped
    }

    /// Byte offset of the next record.
    pub fn position(&self) -> usize {
        self.pos
    }

    fn fail<T>(&mut self, offset: usize, reason: &'static str) -> Option<Result<T, DecodeError>> {
        self.pos = self.buf.len();
        Some(Err(DecodeError { offset, reason }))
    }

    /// The next record's framing; `None` at the end of the batch.
    #[inline(always)]
    fn frame(&mut self) -> Option<Result<Frame<'a>, DecodeError>> {
        if self.pos >= self.buf.len() {
            return None;
        }
        let start = self.pos;
        let t = self.buf[start];
        let mut c = Cursor::new(&self.buf[start + 1..]);
        let len = c.varint() as usize;
        if c.is_bad() {
            return self.fail(start, "truncated record length");
        }
        let body = start + 1 + c.position();
        let Some(end) = body.checked_add(len).filter(|&e| e <= self.buf.len()) else {
            return self.fail(start, "record runs past the end of the batch");
        };
        self.pos = end;
        Some(Ok(Frame { start, tag: t, payload: &self.buf[body..end] }))
    }

    /// The next record handed to `put` instead of returned: a `Record` is large, and a caller
    /// that stores it (in a batch vector) saves moving it through `Option<Result<..>>`. `None`
    /// at the end of the batch; an error as [`Iterator::next`] gives it.
    #[inline(always)]
    pub fn next_into(&mut self, put: impl FnOnce(Record)) -> Option<Result<(), DecodeError>> {
        loop {
            let Frame { start, tag: t, payload } = match self.frame()? {
                Ok(f) => f,
                Err(e) => return Some(Err(e)),
            };
            let mut p = Cursor::new(payload);
            match Record::get_payload(t, &mut p) {
                Some(_) if p.is_bad() => {
                    let reason = p.bad_reason().unwrap_or("malformed field in record");
                    return self.fail(start, reason);
                }
                Some(r) => {
                    put(r);
                    return Some(Ok(()));
                }
                None => self.skipped += 1,
            }
        }
    }

    /// The next record appended to `out`, decoded in its place there (no move of the whole
    /// `Record` at all): the cheapest way to fill a batch vector. `None` at the end of the
    /// batch; an error as [`Iterator::next`] gives it, with nothing appended.
    #[inline(always)]
    pub fn next_onto(&mut self, out: &mut Vec<Record>) -> Option<Result<(), DecodeError>> {
        loop {
            let Frame { start, tag: t, payload } = match self.frame()? {
                Ok(f) => f,
                Err(e) => return Some(Err(e)),
            };
            let mut p = Cursor::new(payload);
            if Record::push_payload(t, &mut p, out) {
                if p.is_bad() {
                    out.pop();
                    let reason = p.bad_reason().unwrap_or("malformed field in record");
                    return self.fail(start, reason);
                }
                return Some(Ok(()));
            }
            self.skipped += 1;
        }
    }
}

impl Iterator for Decoder<'_> {
    type Item = Result<Record, DecodeError>;

    fn next(&mut self) -> Option<Self::Item> {
        let mut out = None;
        match self.next_into(|r| out = Some(r))? {
            Ok(()) => out.map(Ok),
            Err(e) => Some(Err(e)),
        }
    }
}

/// Counts the records of a batch from their framing alone (`tag, len, payload`), without
/// decoding them: cheap enough for a live counter. Stops at the first broken frame.
pub fn count_records(buf: &[u8]) -> u64 {
    let (mut pos, mut n) = (0usize, 0u64);
    while pos < buf.len() {
        let mut c = Cursor::new(&buf[pos + 1..]);
        let len = c.varint();
        let end = usize::try_from(len).ok().and_then(|l| (pos + 1 + c.position()).checked_add(l));
        match end {
            Some(end) if !c.is_bad() && end <= buf.len() => pos = end,
            _ => break,
        }
        n += 1;
    }
    n
}

/// Decodes a whole batch, stopping at the first malformed record.
pub fn decode_all(buf: &[u8]) -> Result<Vec<Record>, DecodeError> {
    Decoder::new(buf).collect()
}

#[cfg(test)]
mod tests;
