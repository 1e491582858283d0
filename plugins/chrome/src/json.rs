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
        let mut b = itoa::Buffer::new();
        self.extend_from_slice(b.format(v).as_bytes());
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
    fn microseconds_keep_nanoseconds() {
        let mut v = Vec::new();
        write_us(&mut v, 1_000_000_007).unwrap();
        assert_eq!(v, b"1000000.007");
    }
}
