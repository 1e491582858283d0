//! Protobuf wire encoding for the per-event packets, written straight into the output buffer.
//!
//! Why not prost for these: a trace has five packets per kernel launch, and building a prost
//! message for each (then `encoded_len` walking it once and `encode_raw` again, with
//! `encode_varint` going through `BufMut` one byte at a time) cost about half of the sink's time
//! (`perf record` of a 1.02M-launch replay: `encode_varint` alone 13%). Here fields are written
//! once, in field-number order like prost writes them (so the bytes are the same as prost's),
//! and a nested message's length is patched when it ends. Rare packets (track descriptors,
//! sequence starts) still go through prost's messages in [`crate::proto`].
//!
//! The per-event packets go through [`Enc`] (one reservation per packet); the functions on
//! `Vec<u8>` serve the rest. Both append; field numbers and types follow the official protos
//! (the tests decode the output with Perfetto's own `perfetto_trace_pb2`).

/// Wire type of varints (`uint32`, `uint64`, `int32`, `int64`, `bool`, enums).
const VARINT: u32 = 0;
/// Wire type of `fixed64` and `double`.
const I64: u32 = 1;
/// Wire type of length-delimited fields (messages, strings, bytes).
const LEN: u32 = 2;

use std::mem::MaybeUninit;

/// Bytes of the varint encoding of `v`.
#[inline]
pub fn varint_len(v: u64) -> usize {
    // 1 byte per started group of 7 bits, 1 for zero.
    (64 - (v | 1).leading_zeros() as usize).div_ceil(7)
}

/// Appends the varint encoding of `v`.
#[inline]
pub fn varint(buf: &mut Vec<u8>, v: u64) {
    if v < 0x80 {
        buf.push(v as u8);
        return;
    }
    // Written in place: a `[u8; 10]` copied with `extend_from_slice` became a `memmove` call per
    // varint (5% of a replay to perfetto).
    buf.reserve(10);
    let spare = buf.spare_capacity_mut();
    let mut v = v;
    let mut n = 0;
    while v >= 0x80 {
        spare[n].write((v as u8) | 0x80);
        v >>= 7;
        n += 1;
    }
    spare[n].write(v as u8);
    let len = buf.len() + n + 1;
    // SAFETY: the `n + 1` bytes after the old length were written just above, within the
    // capacity reserved before (a varint is at most 10 bytes).
    unsafe { buf.set_len(len) };
}

/// Appends the key of field `field` with wire type `wire`.
#[inline]
fn key(buf: &mut Vec<u8>, field: u32, wire: u32) {
    varint(buf, u64::from((field << 3) | wire));
}

/// Appends varint field `field` = `v` (`uint32`, `uint64`, enums, `bool`).
#[inline]
pub fn uint(buf: &mut Vec<u8>, field: u32, v: u64) {
    key(buf, field, VARINT);
    varint(buf, v);
}

/// Appends `bytes`/`string` field `field` = `b`.
#[inline]
pub fn bytes(buf: &mut Vec<u8>, field: u32, b: &[u8]) {
    key(buf, field, LEN);
    varint(buf, b.len() as u64);
    buf.extend_from_slice(b);
}

/// Appends the key and the (known) length of message field `field`; its `len` bytes follow.
#[inline]
pub fn message_head(buf: &mut Vec<u8>, field: u32, len: usize) {
    key(buf, field, LEN);
    varint(buf, len as u64);
}

/// Starts message field `field` whose length is not known yet: writes its key and a one-byte
/// length, and returns where that length is, for [`end`].
#[inline]
pub fn begin(buf: &mut Vec<u8>, field: u32) -> usize {
    key(buf, field, LEN);
    buf.push(0);
    buf.len() - 1
}

/// Ends the message started by [`begin`] at `at`: writes its length, moving the message right
/// when the length needs more than one byte (messages of 128 bytes or more: rare here).
#[inline(always)]
pub fn end(buf: &mut Vec<u8>, at: usize) {
    let len = buf.len() - at - 1;
    if len < 0x80 {
        buf[at] = len as u8;
    } else {
        end_long(buf, at, len);
    }
}

/// [`end`] of a message of `len` >= 128 bytes.
#[cold]
#[inline(never)]
fn end_long(buf: &mut Vec<u8>, at: usize, len: usize) {
    let n = varint_len(len as u64);
    let old = buf.len();
    buf.resize(old + n - 1, 0);
    buf.copy_within(at + 1..old, at + n);
    let mut head = Vec::with_capacity(10);
    varint(&mut head, len as u64);
    buf[at..at + n].copy_from_slice(&head);
}

/// A packet encoded into capacity reserved up front ([`Enc::reserved`]): the hot path's writer.
///
/// Every field goes into the spare capacity of the bundle buffer at a local position, so a
/// packet costs one capacity check instead of one per byte (`Vec::push` loads and stores the
/// vector's length and checks its capacity each time: a third of the sink's encoding time).
/// Writes past the reservation panic (a bounds check on the slice), never corrupt memory.
#[derive(Debug)]
pub struct Enc<'a> {
    buf: &'a mut [MaybeUninit<u8>],
    n: usize,
}

impl Enc<'_> {
    /// Runs `f` on an encoder over `bound` reserved bytes after the end of `v`, then appends
    /// what `f` wrote to `v`.
    #[inline(always)]
    pub fn reserved<R>(v: &mut Vec<u8>, bound: usize, f: impl FnOnce(&mut Enc<'_>) -> R) -> R {
        v.reserve(bound);
        let len = v.len();
        let mut e = Enc { buf: &mut v.spare_capacity_mut()[..bound], n: 0 };
        let r = f(&mut e);
        let n = e.n;
        // SAFETY: an `Enc` initialises its bytes in order from 0 (`byte`, `slice`) and only
        // rewrites or moves bytes below its position (`end`), so bytes `0..n` of the spare
        // capacity are initialised, and `n <= bound <= spare capacity` (slice bounds checks).
        unsafe { v.set_len(len + n) };
        r
    }

    #[inline(always)]
    fn byte(&mut self, b: u8) {
        self.buf[self.n].write(b);
        self.n += 1;
    }

    /// Appends the varint encoding of `v`: values of up to three bytes (keys, sequence ids,
    /// timestamp deltas, interned ids, correlation ids) with one bounds check and no loop.
    #[inline(always)]
    pub fn varint(&mut self, v: u64) {
        let n = self.n;
        if v < 0x80 {
            self.buf[n].write(v as u8);
            self.n = n + 1;
        } else if v < 0x4000 {
            let d = &mut self.buf[n..n + 2];
            d[0].write((v as u8) | 0x80);
            d[1].write((v >> 7) as u8);
            self.n = n + 2;
        } else if v < 0x20_0000 {
            let d = &mut self.buf[n..n + 3];
            d[0].write((v as u8) | 0x80);
            d[1].write(((v >> 7) as u8) | 0x80);
            d[2].write((v >> 14) as u8);
            self.n = n + 3;
        } else {
            self.n = varint_long_in(self.buf, n, v);
        }
    }

    /// Appends a key whose encoding is one byte (fields 1 to 15).
    #[inline(always)]
    fn key(&mut self, field: u32, wire: u32) {
        self.varint(u64::from((field << 3) | wire));
    }

    /// Appends varint field `field` = `v`.
    #[inline(always)]
    pub fn uint(&mut self, field: u32, v: u64) {
        self.key(field, VARINT);
        self.varint(v);
    }

    /// Appends `int32`/`int64` field `field` = `v`.
    #[inline(always)]
    pub fn int(&mut self, field: u32, v: i64) {
        self.uint(field, v as u64);
    }

    /// Appends `fixed64` field `field` = `v`.
    #[inline(always)]
    pub fn fixed64(&mut self, field: u32, v: u64) {
        self.key(field, I64);
        let b = v.to_le_bytes();
        let dst = &mut self.buf[self.n..self.n + 8];
        for i in 0..8 {
            dst[i].write(b[i]);
        }
        self.n += 8;
    }

    /// Appends `double` field `field` = `v`.
    #[inline(always)]
    pub fn double(&mut self, field: u32, v: f64) {
        self.fixed64(field, v.to_bits());
    }

    /// Appends `bytes`/`string` field `field` = `b`.
    #[inline(always)]
    pub fn bytes(&mut self, field: u32, b: &[u8]) {
        self.key(field, LEN);
        self.varint(b.len() as u64);
        self.slice(b);
    }

    /// Appends `b` as it is.
    #[inline(always)]
    pub fn slice(&mut self, b: &[u8]) {
        let end = self.n + b.len();
        for (d, s) in self.buf[self.n..end].iter_mut().zip(b) {
            d.write(*s);
        }
        self.n = end;
    }

    /// Appends the key and the (known) length of message field `field`.
    #[inline(always)]
    pub fn message_head(&mut self, field: u32, len: usize) {
        self.key(field, LEN);
        self.varint(len as u64);
    }

    /// Starts message field `field` of unknown length (a one-byte length is reserved); returns
    /// where that length is, for [`Enc::end`].
    #[inline(always)]
    pub fn begin(&mut self, field: u32) -> usize {
        self.key(field, LEN);
        self.byte(0);
        self.n - 1
    }

    /// Ends the message begun at `at`: writes its length, moving the message right when the
    /// length needs more than one byte (the reservation must allow for it).
    #[inline(always)]
    pub fn end(&mut self, at: usize) {
        let len = self.n - at - 1;
        if len < 0x80 {
            self.buf[at].write(len as u8);
        } else {
            // The encoder stays in registers: the cold path gets its parts, not its address.
            self.n = end_long_in(self.buf, self.n, at, len);
        }
    }
}

/// [`Enc::varint`] of a value of four bytes or more, written at `n` in `buf`; returns the end.
#[inline(never)]
fn varint_long_in(buf: &mut [MaybeUninit<u8>], mut n: usize, mut v: u64) -> usize {
    while v >= 0x80 {
        buf[n].write((v as u8) | 0x80);
        v >>= 7;
        n += 1;
    }
    buf[n].write(v as u8);
    n + 1
}

/// [`Enc::end`] of a message of `len` >= 128 bytes begun at `at` in `buf`, written up to `n`:
/// moves the message right to make room for its length; returns the new end.
#[cold]
#[inline(never)]
fn end_long_in(buf: &mut [MaybeUninit<u8>], n: usize, at: usize, len: usize) -> usize {
    let extra = varint_len(len as u64) - 1;
    // Bounds-checked: the moved bytes must fit the reservation.
    buf.copy_within(at + 1..n, at + 1 + extra);
    let mut head = Enc { buf, n: at };
    head.varint(len as u64);
    head.n + len
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_match_prost() {
        for v in [0, 1, 127, 128, 300, 16_383, 16_384, u32::MAX as u64, u64::MAX, 1 << 63] {
            let (mut ours, mut theirs) = (Vec::new(), Vec::new());
            varint(&mut ours, v);
            prost::encoding::encode_varint(v, &mut theirs);
            assert_eq!(ours, theirs, "{v}");
            assert_eq!(varint_len(v), prost::encoding::encoded_len_varint(v), "{v}");
        }
    }

    #[test]
    fn nested_messages_of_any_length_decode() {
        use prost::Message;
        for len in [0usize, 1, 126, 127, 128, 200, 20_000] {
            let mut buf = vec![0xff];
            let at = begin(&mut buf, 2);
            buf.extend(std::iter::repeat_n(7u8, len));
            end(&mut buf, at);
            buf.push(0xee);
            let mut expect = vec![0xff];
            prost::encoding::bytes::encode(2, &vec![7u8; len], &mut expect);
            expect.push(0xee);
            assert_eq!(buf, expect, "{len}");
            let _ = crate::proto::InternedString::decode(&buf[1..buf.len() - 1]).unwrap();
        }
    }

    #[test]
    fn the_reserved_encoder_writes_what_prost_writes() {
        use prost::encoding::{encode_key, encode_varint, WireType};
        for v in [0, 1, 127, 128, 300, 16_384, u32::MAX as u64, u64::MAX] {
            let mut ours = vec![0xaa];
            Enc::reserved(&mut ours, 64, |e| {
                e.uint(3, v);
                e.int(4, -(v as i64));
                e.fixed64(47, v);
                e.double(44, v as f64);
                e.bytes(23, b"lost 3");
            });
            let mut theirs = vec![0xaa];
            prost::encoding::uint64::encode(3, &v, &mut theirs);
            prost::encoding::int64::encode(4, &-(v as i64), &mut theirs);
            prost::encoding::fixed64::encode(47, &v, &mut theirs);
            prost::encoding::double::encode(44, &(v as f64), &mut theirs);
            encode_key(23, WireType::LengthDelimited, &mut theirs);
            encode_varint(6, &mut theirs);
            theirs.extend_from_slice(b"lost 3");
            assert_eq!(ours, theirs, "{v}");
        }
    }

    #[test]
    fn reserved_nested_messages_of_any_length_decode() {
        for len in [0usize, 1, 127, 128, 200, 20_000] {
            let mut buf = vec![0xff];
            Enc::reserved(&mut buf, len + 16, |e| {
                let at = e.begin(2);
                e.slice(&vec![7u8; len]);
                e.end(at);
                e.byte(0xee);
            });
            let mut expect = vec![0xff];
            prost::encoding::bytes::encode(2, &vec![7u8; len], &mut expect);
            expect.push(0xee);
            assert_eq!(buf, expect, "{len}");
        }
    }

    #[test]
    #[should_panic]
    fn writing_past_the_reservation_panics() {
        let mut buf = Vec::with_capacity(1024);
        Enc::reserved(&mut buf, 4, |e| e.slice(&[1, 2, 3, 4, 5]));
    }
}
