//! The codec's primitives: varints, byte strings, the payload [`Cursor`], and the traits through
//! which the model schema ([`crate::model`]) encodes each field type.
//!
//! Two encodings exist for a field (see `docs/formats.md`):
//! - *positional* (the fields of codec version 1, frozen in their order): written back to back
//!   with no key; [`Varint`], [`ByteEnum`] and [`ByteStr`] say how a type is written there;
//! - *keyed* (every field added since): `key = number << 3 | wire type`, then the value, written
//!   only when it differs from its default; [`Wire`] says how a type is written there.

/// Wire type of a keyed field: how a reader that does not know the field skips it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum WireType {
    /// A LEB128 varint.
    Varint = 0,
    /// Eight little-endian bytes.
    Fixed64 = 1,
    /// A varint length, then that many bytes.
    Len = 2,
}

/// Appends a LEB128 varint.
#[inline]
pub fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Appends a zig-zag encoded signed varint.
#[inline]
pub fn put_svarint(out: &mut Vec<u8>, v: i64) {
    put_varint(out, zigzag(v));
}

/// Zig-zag mapping of a signed value (small magnitudes give small unsigned values).
#[inline]
pub fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

/// Inverse of [`zigzag`].
#[inline]
pub fn unzigzag(v: u64) -> i64 {
    ((v >> 1) as i64) ^ -((v & 1) as i64)
}

/// Appends a length-prefixed byte string.
#[inline]
pub fn put_bytes(out: &mut Vec<u8>, b: &[u8]) {
    put_varint(out, b.len() as u64);
    out.extend_from_slice(b);
}

/// Appends a varint length and whatever `body` writes after it (one byte is reserved for the
/// length; longer bodies shift into place).
#[inline]
pub fn put_len_prefixed(out: &mut Vec<u8>, body: impl FnOnce(&mut Vec<u8>)) {
    let at = out.len();
    out.push(0);
    body(out);
    let len = out.len() - at - 1;
    if len < 0x80 {
        out[at] = len as u8;
    } else {
        let mut lenbuf = [0u8; 10];
        let mut n = 0;
        let mut v = len as u64;
        while v >= 0x80 {
            lenbuf[n] = (v as u8) | 0x80;
            v >>= 7;
            n += 1;
        }
        lenbuf[n] = v as u8;
        out.splice(at..at + 1, lenbuf[..=n].iter().copied());
    }
}

/// Appends the key of keyed field `number`.
#[inline]
pub fn put_key(out: &mut Vec<u8>, number: u32, ty: WireType) {
    put_varint(out, u64::from(number) << 3 | ty as u64);
}

/// A cursor over a payload; reads past the end yield defaults (an older writer wrote fewer
/// fields). A malformed value sets a flag instead of failing, so decoding a record never
/// branches on errors until its end.
#[derive(Debug)]
pub struct Cursor<'a> {
    buf: &'a [u8],
    pos: usize,
    bad: Option<&'static str>,
}

impl<'a> Cursor<'a> {
    /// A cursor at the start of `buf`.
    pub fn new(buf: &'a [u8]) -> Self {
        Self { buf, pos: 0, bad: None }
    }

    /// Bytes consumed so far.
    pub fn position(&self) -> usize {
        self.pos
    }

    /// True once a malformed value (overlong varint, string past the end) was met.
    pub fn is_bad(&self) -> bool {
        self.bad.is_some()
    }

    /// What was malformed, if anything.
    pub fn bad_reason(&self) -> Option<&'static str> {
        self.bad
    }

    /// Marks the payload malformed (the first reason is kept).
    pub fn set_bad(&mut self, reason: &'static str) {
        self.bad.get_or_insert(reason);
    }

    /// True when every byte has been read.
    pub fn at_end(&self) -> bool {
        self.pos >= self.buf.len()
    }

    /// Bytes not read yet.
    pub fn remaining(&self) -> usize {
        self.buf.len().saturating_sub(self.pos)
    }

    /// Reads a varint; 0 at the end of the payload.
    #[inline]
    pub fn varint(&mut self) -> u64 {
        // Most values (ids, small counts, deltas) fit one byte.
        if let Some(&b) = self.buf.get(self.pos) {
            if b < 0x80 {
                self.pos += 1;
                return u64::from(b);
            }
        }
        self.varint_long()
    }

    /// [`Cursor::varint`] past its one-byte case.
    fn varint_long(&mut self) -> u64 {
        // Ten bytes ahead (the longest varint): no bounds check per byte.
        if let Some(bytes) = self.buf.get(self.pos..self.pos + 10) {
            let mut v = 0u64;
            for (i, &b) in bytes.iter().enumerate() {
                v |= u64::from(b & 0x7f) << (7 * i);
                if b & 0x80 == 0 {
                    self.pos += i + 1;
                    return v;
                }
            }
            self.pos += 10;
            self.set_bad("overlong varint");
            return 0;
        }
        let mut v = 0u64;
        let mut shift = 0u32;
        while self.pos < self.buf.len() {
            let b = self.buf[self.pos];
            self.pos += 1;
            if shift >= 64 {
                self.set_bad("overlong varint");
                return 0;
            }
            v |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return v;
            }
            shift += 7;
        }
        if shift > 0 {
            self.set_bad("varint runs past the end of the record");
        }
        v
    }

    /// Reads a varint as `u32`, flagging values that do not fit.
    #[inline]
    pub fn u32(&mut self) -> u32 {
        let v = self.varint();
        u32::try_from(v).unwrap_or_else(|_| {
            self.set_bad("value too large for a 32-bit field");
            0
        })
    }

    /// Reads a zig-zag varint.
    #[inline]
    pub fn svarint(&mut self) -> i64 {
        unzigzag(self.varint())
    }

    /// Reads a byte.
    #[inline]
    pub fn u8(&mut self) -> u8 {
        if self.pos < self.buf.len() {
            self.pos += 1;
            self.buf[self.pos - 1]
        } else {
            0
        }
    }

    /// Reads a length-prefixed byte string.
    #[inline]
    pub fn bytes(&mut self) -> &'a [u8] {
        let len = self.varint() as usize;
        match self.pos.checked_add(len) {
            Some(end) if end <= self.buf.len() => {
                let s = &self.buf[self.pos..end];
                self.pos = end;
                s
            }
            _ => {
                self.set_bad("byte string runs past the end of the record");
                self.pos = self.buf.len();
                &[]
            }
        }
    }

    /// Reads a little-endian `f64`.
    pub fn f64(&mut self) -> f64 {
        let mut b = [0u8; 8];
        for x in &mut b {
            *x = self.u8();
        }
        f64::from_le_bytes(b)
    }

    /// Skips the value of a keyed field of wire type `ty` (a field this reader does not know).
    pub fn skip(&mut self, ty: u8) {
        match ty {
            0 => {
                self.varint();
            }
            1 => {
                self.pos = self.pos.saturating_add(8).min(self.buf.len());
            }
            2 => {
                self.bytes();
            }
            _ => self.set_bad("unknown wire type in a keyed field"),
        }
    }

    /// Reads keyed fields to the end of the payload, calling `field(number, wire type, cursor)`
    /// for each; `field` returns false for numbers it does not know, which are skipped.
    #[inline]
    pub fn keyed(&mut self, mut field: impl FnMut(u32, u8, &mut Self) -> bool) {
        while !self.at_end() && !self.is_bad() {
            let key = self.varint();
            let (number, ty) = ((key >> 3) as u32, (key & 7) as u8);
            if !field(number, ty, self) {
                self.skip(ty);
            }
        }
    }

    /// Reads a keyed field's value as `T` if its wire type is `T`'s, else skips it (a field
    /// whose type changed is read as its default rather than misread).
    #[inline]
    pub fn keyed_value<T: Wire + Default>(&mut self, ty: u8) -> T {
        if ty != T::TYPE as u8 {
            self.skip(ty);
            return T::default();
        }
        match T::TYPE {
            WireType::Len => {
                let body = self.bytes();
                let mut sub = Cursor::new(body);
                let v = T::get(&mut sub);
                if let Some(r) = sub.bad {
                    self.set_bad(r);
                }
                v
            }
            _ => T::get(self),
        }
    }
}

/// A type written as one varint in the positional part (ids, counts, times).
pub trait Varint: Sized {
    /// The varint value.
    fn to_var(&self) -> u64;
    /// Back from the varint value, flagging values that do not fit.
    fn from_var(v: u64, c: &mut Cursor<'_>) -> Self;
}

impl Varint for u64 {
    fn to_var(&self) -> u64 {
        *self
    }
    fn from_var(v: u64, _: &mut Cursor<'_>) -> Self {
        v
    }
}

impl Varint for u32 {
    fn to_var(&self) -> u64 {
        u64::from(*self)
    }
    #[inline]
    fn from_var(v: u64, c: &mut Cursor<'_>) -> Self {
        u32::try_from(v).unwrap_or_else(|_| {
            c.set_bad("value too large for a 32-bit field");
            0
        })
    }
}

impl Varint for u16 {
    fn to_var(&self) -> u64 {
        u64::from(*self)
    }
    #[inline]
    fn from_var(v: u64, c: &mut Cursor<'_>) -> Self {
        u16::try_from(v).unwrap_or_else(|_| {
            c.set_bad("value too large for a 16-bit field");
            0
        })
    }
}

impl Varint for u8 {
    fn to_var(&self) -> u64 {
        u64::from(*self)
    }
    fn from_var(v: u64, c: &mut Cursor<'_>) -> Self {
        u8::try_from(v).unwrap_or_else(|_| {
            c.set_bad("value too large for an 8-bit field");
            0
        })
    }
}

impl Varint for bool {
    fn to_var(&self) -> u64 {
        u64::from(*self)
    }
    fn from_var(v: u64, _: &mut Cursor<'_>) -> Self {
        v != 0
    }
}

impl Varint for i64 {
    fn to_var(&self) -> u64 {
        zigzag(*self)
    }
    fn from_var(v: u64, _: &mut Cursor<'_>) -> Self {
        unzigzag(v)
    }
}

/// A small enum written as one raw byte in the positional part; unknown bytes decode to the
/// enum's fallback value, never an error.
pub trait ByteEnum: Sized {
    /// The byte.
    fn to_u8(self) -> u8;
    /// Back from the byte.
    fn from_u8(v: u8) -> Self;
}

/// A byte string in the positional part.
pub trait ByteStr: Sized {
    /// The bytes.
    fn as_wire_bytes(&self) -> &[u8];
    /// Back from the bytes.
    fn from_wire_bytes(b: &[u8]) -> Self;
}

impl ByteStr for String {
    fn as_wire_bytes(&self) -> &[u8] {
        self.as_bytes()
    }
    fn from_wire_bytes(b: &[u8]) -> Self {
        String::from_utf8_lossy(b).into_owned()
    }
}

impl ByteStr for Vec<u8> {
    fn as_wire_bytes(&self) -> &[u8] {
        self
    }
    fn from_wire_bytes(b: &[u8]) -> Self {
        b.to_vec()
    }
}

impl ByteStr for [u8; 16] {
    fn as_wire_bytes(&self) -> &[u8] {
        self
    }
    fn from_wire_bytes(b: &[u8]) -> Self {
        let mut v = [0u8; 16];
        let n = b.len().min(16);
        v[..n].copy_from_slice(&b[..n]);
        v
    }
}

/// A type that can be a keyed field: how its value is written after the key. For
/// [`WireType::Len`] types, `put` writes the body and `get` reads a cursor over exactly the
/// body (the caller writes and reads the length).
pub trait Wire: Sized {
    /// How the value is framed.
    const TYPE: WireType;
    /// Writes the value.
    fn put(&self, out: &mut Vec<u8>);
    /// Reads the value.
    fn get(c: &mut Cursor<'_>) -> Self;
    /// True when the value is its default and is not written at all.
    fn is_absent(&self) -> bool;
}

/// Implements [`Wire`] for varint types.
macro_rules! wire_varint {
    ($($t:ty),*) => {$(
        impl Wire for $t {
            const TYPE: WireType = WireType::Varint;
            #[inline]
            fn put(&self, out: &mut Vec<u8>) {
                put_varint(out, Varint::to_var(self));
            }
            #[inline]
            fn get(c: &mut Cursor<'_>) -> Self {
                let v = c.varint();
                <$t as Varint>::from_var(v, c)
            }
            #[inline]
            fn is_absent(&self) -> bool {
                Varint::to_var(self) == 0
            }
        }
    )*};
}
pub(crate) use wire_varint;

wire_varint!(u8, u16, u32, u64, bool, i64);

impl Wire for f64 {
    const TYPE: WireType = WireType::Fixed64;
    fn put(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.to_le_bytes());
    }
    fn get(c: &mut Cursor<'_>) -> Self {
        c.f64()
    }
    fn is_absent(&self) -> bool {
        self.to_bits() == 0
    }
}

impl Wire for String {
    const TYPE: WireType = WireType::Len;
    fn put(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(self.as_bytes());
    }
    fn get(c: &mut Cursor<'_>) -> Self {
        let n = c.remaining();
        let mut v = Vec::with_capacity(n);
        for _ in 0..n {
            v.push(c.u8());
        }
        String::from_utf8_lossy(&v).into_owned()
    }
    fn is_absent(&self) -> bool {
        self.is_empty()
    }
}

impl Wire for [u32; 3] {
    const TYPE: WireType = WireType::Len;
    fn put(&self, out: &mut Vec<u8>) {
        for v in self {
            put_varint(out, u64::from(*v));
        }
    }
    fn get(c: &mut Cursor<'_>) -> Self {
        [c.u32(), c.u32(), c.u32()]
    }
    fn is_absent(&self) -> bool {
        *self == [0; 3]
    }
}

impl<T: Wire> Wire for Option<T> {
    const TYPE: WireType = T::TYPE;
    fn put(&self, out: &mut Vec<u8>) {
        if let Some(v) = self {
            v.put(out);
        }
    }
    fn get(c: &mut Cursor<'_>) -> Self {
        Some(T::get(c))
    }
    fn is_absent(&self) -> bool {
        self.is_none()
    }
}

/// Writes keyed field `number` unless its value is absent.
#[inline]
pub fn put_keyed<T: Wire>(out: &mut Vec<u8>, number: u32, v: &T) {
    if v.is_absent() {
        return;
    }
    put_key(out, number, T::TYPE);
    match T::TYPE {
        WireType::Len => put_len_prefixed(out, |o| v.put(o)),
        _ => v.put(out),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn len_prefix_shifts_long_bodies() {
        let mut out = vec![9];
        put_len_prefixed(&mut out, |o| o.extend_from_slice(&[1; 300]));
        let mut c = Cursor::new(&out[1..]);
        assert_eq!(c.bytes().len(), 300);
        assert!(c.at_end() && !c.is_bad());
    }

    #[test]
    fn unknown_keyed_fields_are_skipped_by_wire_type() {
        let mut out = Vec::new();
        put_keyed(&mut out, 9, &5u64);
        put_keyed(&mut out, 10, &2.5f64);
        put_keyed(&mut out, 11, &String::from("x"));
        put_keyed(&mut out, 3, &7u32);
        put_keyed(&mut out, 4, &0u32); // absent: not written
        let mut c = Cursor::new(&out);
        let mut got = Vec::new();
        c.keyed(|n, ty, c| {
            if n == 3 {
                got.push(c.keyed_value::<u32>(ty));
                true
            } else {
                false
            }
        });
        assert_eq!(got, [7]);
        assert!(!c.is_bad());
    }

    #[test]
    fn a_keyed_field_of_another_type_reads_as_default() {
        let mut out = Vec::new();
        put_keyed(&mut out, 1, &String::from("text"));
        let mut c = Cursor::new(&out);
        let mut v = 1u32;
        c.keyed(|_, ty, c| {
            v = c.keyed_value::<u32>(ty);
            true
        });
        assert_eq!(v, 0);
        assert!(!c.is_bad());
    }

    #[test]
    fn varints_read_back_near_and_far_from_the_end_and_bad_ones_are_flagged() {
        let values = [0u64, 1, 127, 128, 300, 1 << 35, u64::MAX - 1, u64::MAX];
        for v in values {
            let mut one = Vec::new();
            put_varint(&mut one, v);
            // Alone (fewer than ten bytes follow) and with room after it (the unchecked path).
            let mut padded = one.clone();
            padded.extend([0u8; 12]);
            for buf in [&one, &padded] {
                let mut c = Cursor::new(buf);
                assert_eq!(c.varint(), v);
                assert_eq!(c.position(), one.len());
                assert!(!c.is_bad());
            }
        }
        let mut overlong = vec![0xffu8; 10];
        overlong.push(0x01);
        for buf in [overlong.clone(), [overlong, vec![0; 12]].concat()] {
            let mut c = Cursor::new(&buf);
            assert_eq!(c.varint(), 0);
            assert_eq!(c.bad_reason(), Some("overlong varint"));
        }
        let mut c = Cursor::new(&[0x80, 0x80]);
        c.varint();
        assert_eq!(c.bad_reason(), Some("varint runs past the end of the record"));
    }
}
