//! Small JSON writing helpers: string escaping and exact microsecond timestamps.

use std::fmt::Write as _;
use std::io::{self, Write};

/// Appends `s` to `out` as a JSON string literal, quotes included.
pub fn push_str(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// `s` as a JSON string literal.
pub fn quoted(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    push_str(&mut out, s);
    out
}

/// Writes nanoseconds `ns` as microseconds with exactly three decimals (`1234.567`): the Trace
/// Event format counts in µs, and printing the digits ourselves keeps nanosecond precision and
/// byte-identical output (no float rounding).
pub fn write_us(w: &mut dyn Write, ns: u64) -> io::Result<()> {
    write!(w, "{}.{:03}", ns / 1000, ns % 1000)
}

/// Appends JSON text to a byte buffer without going through `core::fmt` (the hot path writes
/// several events per launch).
pub trait Push {
    /// Appends literal text.
    fn s(&mut self, s: &str) -> &mut Self;
    /// Appends an unsigned integer.
    fn n(&mut self, v: u64) -> &mut Self;
    /// Appends nanoseconds as microseconds with three decimals (see [`write_us`]).
    fn us(&mut self, ns: u64) -> &mut Self;
}

impl Push for Vec<u8> {
    #[inline]
    fn s(&mut self, s: &str) -> &mut Self {
        self.extend_from_slice(s.as_bytes());
        self
    }

    #[inline]
    fn n(&mut self, v: u64) -> &mut Self {
        if v < 10 {
            self.push(b'0' + v as u8);
        } else {
            put_decimal(self, v);
        }
        self
    }

    #[inline]
    fn us(&mut self, ns: u64) -> &mut Self {
        self.n(ns / 1000);
        let f = ns % 1000;
        self.extend_from_slice(&[
            b'.',
            b'0' + (f / 100) as u8,
            b'0' + (f / 10 % 10) as u8,
            b'0' + (f % 10) as u8,
        ]);
        self
    }
}

/// Two-digit groups `00` to `99`.
const PAIRS: &[u8; 200] = b"0001020304050607080910111213141516171819\
2021222324252627282930313233343536373839\
4041424344454647484950515253545556575859\
6061626364656667686970717273747576777879\
8081828384858687888990919293949596979899";

/// Decimal digits of `v` (`v` < 10^8).
#[inline]
fn decimal_len(v: u32) -> usize {
    match v {
        0..=9 => 1,
        10..=99 => 2,
        100..=999 => 3,
        1_000..=9_999 => 4,
        10_000..=99_999 => 5,
        100_000..=999_999 => 6,
        1_000_000..=9_999_999 => 7,
        _ => 8,
    }
}

/// Writes the `len` decimal digits of `v` into `out`, two at a time, in 32-bit arithmetic.
#[inline]
fn digits(out: &mut [std::mem::MaybeUninit<u8>], mut v: u32, len: usize) {
    let mut i = len;
    while i >= 2 {
        let d = (v % 100) as usize * 2;
        v /= 100;
        i -= 2;
        out[i].write(PAIRS[d]);
        out[i + 1].write(PAIRS[d + 1]);
    }
    if i == 1 {
        out[0].write(b'0' + v as u8);
    }
}

/// Appends `v` in decimal, written in place. Why not `itoa`: its `Buffer::format` is a call and
/// its digits are then copied with a `memmove` call, for about 25 numbers per launch (itoa was
/// 10% of a replay to folded + chrome, `memmove` 17%). Numbers are cut into 8-digit parts so
/// that the digit loop runs on 32-bit values (timestamps have 10 to 16 digits).
#[inline]
fn put_decimal(out: &mut Vec<u8>, v: u64) {
    const E8: u64 = 100_000_000;
    out.reserve(20);
    let at = out.len();
    let spare = out.spare_capacity_mut();
    let len = if v < E8 {
        let len = decimal_len(v as u32);
        digits(spare, v as u32, len);
        len
    } else if v < E8 * E8 {
        let (hi, lo) = ((v / E8) as u32, (v % E8) as u32);
        let len = decimal_len(hi);
        digits(spare, hi, len);
        digits(&mut spare[len..], lo, 8);
        len + 8
    } else {
        let (top, rest) = ((v / (E8 * E8)) as u32, v % (E8 * E8));
        let len = decimal_len(top);
        digits(spare, top, len);
        digits(&mut spare[len..], (rest / E8) as u32, 8);
        digits(&mut spare[len + 8..], (rest % E8) as u32, 8);
        len + 16
    };
    // SAFETY: `digits` wrote every one of the `len` bytes after the old length (each call
    // fills all the positions it is given: pairs from the end, then the odd first digit),
    // within the 20 bytes reserved above (a u64 has at most 20 digits).
    unsafe { out.set_len(at + len) };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_quotes_backslashes_and_controls() {
        assert_eq!(quoted("a\"b\\c\nd\u{1}"), r#""a\"b\\c\nd\u0001""#);
    }

    #[test]
    fn push_writes_what_write_us_writes() {
        for ns in [0, 7, 999, 1000, 1_000_000_007, u64::MAX] {
            let (mut a, mut b) = (Vec::new(), Vec::new());
            write_us(&mut a, ns).unwrap();
            b.us(ns);
            assert_eq!(a, b);
        }
    }

    #[test]
    fn decimals_are_what_display_writes() {
        let mut values: Vec<u64> = vec![0, 9, 10, 99, 100, 101, 999, 1000, u64::MAX, u64::MAX - 1];
        for p in 0..20u32 {
            let t = 10u64.pow(p);
            values.extend([t - 1, t, t + 1, t.saturating_mul(7) / 3]);
        }
        for v in values {
            let mut out = b"x".to_vec();
            out.n(v);
            assert_eq!(out, format!("x{v}").into_bytes(), "{v}");
        }
    }

    #[test]
    fn microseconds_keep_nanoseconds() {
        let mut v = Vec::new();
        write_us(&mut v, 1_000_000_007).unwrap();
        assert_eq!(v, b"1000000.007");
    }
}
