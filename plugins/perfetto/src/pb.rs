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
//! Every function appends to a `Vec<u8>`; field numbers and types follow the official protos
//! (the tests decode the output with Perfetto's own `perfetto_trace_pb2`).

/// Wire type of varints (`uint32`, `uint64`, `int32`, `int64`, `bool`, enums).
const VARINT: u32 = 0;
/// Wire type of `fixed64` and `double`.
const I64: u32 = 1;
/// Wire type of length-delimited fields (messages, strings, bytes).
const LEN: u32 = 2;

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

/// Appends `int32`/`int64` field `field` = `v` (negative values take ten bytes, as in every
/// protobuf encoder: the two's complement of the 64-bit value).
#[inline]
pub fn int(buf: &mut Vec<u8>, field: u32, v: i64) {
    uint(buf, field, v as u64);
}

/// Appends `fixed64` field `field` = `v`.
#[inline]
pub fn fixed64(buf: &mut Vec<u8>, field: u32, v: u64) {
    key(buf, field, I64);
    buf.extend_from_slice(&v.to_le_bytes());
}

/// Appends `double` field `field` = `v`.
#[inline]
pub fn double(buf: &mut Vec<u8>, field: u32, v: f64) {
    fixed64(buf, field, v.to_bits());
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
}
