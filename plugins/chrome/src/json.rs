//! Small JSON writing helpers: string escaping and exact microsecond timestamps.

use std::io::{self, Write};

pub use xpuprof_toolbox::json_lines::quoted;

/// Writes nanoseconds `ns` as microseconds (`1234.567`, `1234.5`, `1234`): the Trace Event
/// format counts in µs; the digits are printed exactly (no float rounding, nanoseconds kept) and
/// trailing zeros of the fraction are left out. Both viewers read a timestamp as a JSON number
/// (Perfetto: an integer, or a double rounded to the nanosecond; catapult: a JS number), so
/// `1234`, `1234.5` and `1234.500` are the same time to them.
pub fn write_us(w: &mut dyn Write, ns: u64) -> io::Result<()> {
    let (us, f) = (ns / 1000, ns % 1000);
    match f {
        0 => write!(w, "{us}"),
        _ if f % 100 == 0 => write!(w, "{us}.{}", f / 100),
        _ if f % 10 == 0 => write!(w, "{us}.{:02}", f / 10),
        _ => write!(w, "{us}.{f:03}"),
    }
}

/// Appends JSON text to a byte buffer without going through `core::fmt` (the hot path writes
/// several events per launch).
pub trait Push {
    /// Appends literal text.
    fn s(&mut self, s: &str) -> &mut Self;
    /// Appends an unsigned integer.
    fn n(&mut self, v: u64) -> &mut Self;
    /// Appends nanoseconds as microseconds (see [`write_us`]).
    fn us(&mut self, ns: u64) -> &mut Self;
}

impl Push for Vec<u8> {
    #[inline(always)]
    fn s(&mut self, s: &str) -> &mut Self {
        self.extend_from_slice(s.as_bytes());
        self
    }

    #[inline(always)]
    fn n(&mut self, v: u64) -> &mut Self {
        put_decimal(self, v);
        self
    }

    #[inline(always)]
    fn us(&mut self, ns: u64) -> &mut Self {
        put_us(self, ns);
        self
    }
}

/// The eight decimal digits of `v` (< 10^8), leading zeros included, as byte values 0 to 9,
/// the first digit in the lowest byte (little-endian memory order): `v` is split into two
/// 4-digit halves, each half into two 2-digit parts and each part into two digits, every lane of
/// a step in one multiplication (`n * 10486 >> 20 == n / 100` for n < 10,000; `n * 103 >> 10 ==
/// n / 10` for n < 100; the lanes never carry into each other). No table, no loop.
#[inline(always)]
fn digit_bytes(v: u32) -> u64 {
    let hi = v / 10_000;
    let x = u64::from(hi) | (u64::from(v - hi * 10_000) << 32);
    let hundreds = ((x * 10_486) >> 20) & 0x0000_007f_0000_007f;
    let pairs = hundreds | ((x - hundreds * 100) << 16);
    let tens = ((pairs * 103) >> 10) & 0x000f_000f_000f_000f;
    tens | ((pairs - tens * 10) << 8)
}

/// ASCII `'0'` in every byte.
const ZEROS: u64 = 0x3030_3030_3030_3030;

/// `v` (< 10^8) as eight ASCII digits with leading zeros (see [`digit_bytes`]).
#[cfg(test)]
fn eight_digits(v: u32) -> u64 {
    digit_bytes(v) + ZEROS
}

/// Stores the 8 bytes of `bytes` (little-endian) at `p`.
///
/// # Safety
/// `p` must be valid for writing 8 bytes.
#[inline(always)]
unsafe fn store(p: *mut u8, bytes: u64) {
    // SAFETY: the caller's promise; an unaligned store needs no alignment.
    unsafe { p.cast::<u64>().write_unaligned(bytes.to_le()) };
}

/// Stores `v` (< 10^8) without leading zeros at `p` and returns its length. The number's digits
/// are the last of the eight: the leading zero digits are the zero bytes at the low end (their
/// count is the trailing zero bits / 8; at most 7, so that 0 is "0"), shifted out.
///
/// # Safety
/// `p` must be valid for writing 8 bytes.
#[inline(always)]
unsafe fn store_short(p: *mut u8, v: u32) -> usize {
    let d = digit_bytes(v);
    let zero_bits = d.trailing_zeros().min(56) & !7;
    // SAFETY: the caller's promise.
    unsafe { store(p, (d + ZEROS) >> zero_bits) };
    8 - zero_bits as usize / 8
}

/// Appends `v` in decimal. Why not `itoa`: its `Buffer::format` is a call and its digits are then
/// copied with a `memmove` call, for about 20 numbers per launch (itoa was 10% of a replay to
/// folded + chrome, `memmove` 17%). Here each part of up to eight digits is made in registers
/// ([`digit_bytes`]) and stored with one 8-byte write, after one capacity check.
#[inline(always)]
fn put_decimal(out: &mut Vec<u8>, v: u64) {
    const E8: u64 = 100_000_000;
    // 20 digits at most, and each store may write 7 bytes past the number's end.
    out.reserve(28);
    let at = out.len();
    // SAFETY: `reserve(28)` made room for 28 bytes after the current length; the stores below
    // write at most 8 + 8 + 8 bytes from there (each at the end of the digits written before
    // it, at most 2 + 8 + 8 of them). Every byte up to the returned length was written before
    // `set_len` makes it part of the vector.
    unsafe {
        let p = out.as_mut_ptr().add(at);
        let len = if v < E8 {
            store_short(p, v as u32)
        } else if v < E8 * E8 {
            let n = store_short(p, (v / E8) as u32);
            store(p.add(n), digit_bytes((v % E8) as u32) + ZEROS);
            n + 8
        } else {
            let rest = v % (E8 * E8);
            let n = store_short(p, (v / (E8 * E8)) as u32);
            store(p.add(n), digit_bytes((rest / E8) as u32) + ZEROS);
            store(p.add(n + 8), digit_bytes((rest % E8) as u32) + ZEROS);
            n + 16
        };
        out.set_len(at + len);
    }
}

/// Appends nanoseconds `ns` as microseconds, the fraction's trailing zeros left out (see
/// [`write_us`]).
#[inline(always)]
fn put_us(out: &mut Vec<u8>, ns: u64) {
    put_decimal(out, ns / 1000);
    let f = (ns % 1000) as u32;
    if f != 0 {
        // `.` and three digits in one store; the trailing zeros are then not kept.
        let (a, b, c) = (f / 100, f / 10 % 10, f % 10);
        let len = if c != 0 {
            4
        } else if b != 0 {
            3
        } else {
            2
        };
        let text = u32::from_le_bytes([b'.', b'0' + a as u8, b'0' + b as u8, b'0' + c as u8]);
        out.reserve(8);
        let at = out.len();
        // SAFETY: `reserve(8)` made room for the 8-byte store; its first `len` bytes are the
        // text, written before `set_len`.
        unsafe {
            store(out.as_mut_ptr().add(at), u64::from(text));
            out.set_len(at + len);
        }
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
        for ns in [0, 7, 10, 100, 999, 1000, 1001, 1_000_000_007, 1_000_000_500, u64::MAX] {
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
    fn microseconds_keep_nanoseconds_and_drop_trailing_zeros() {
        for (ns, text) in [
            (1_000_000_007, "1000000.007"),
            (1_000_000_070, "1000000.07"),
            (1_000_000_700, "1000000.7"),
            (1_000_001_000, "1000001"),
            (1_000_001_230, "1000001.23"),
            (0, "0"),
            (5, "0.005"),
        ] {
            let mut v = Vec::new();
            write_us(&mut v, ns).unwrap();
            assert_eq!(v, text.as_bytes(), "{ns}");
        }
    }

    #[test]
    fn eight_digits_are_the_number_with_leading_zeros() {
        let mut v = 0u32;
        while v < 100_000_000 {
            assert_eq!(eight_digits(v).to_le_bytes(), format!("{v:08}").as_bytes(), "{v}");
            // Every number below 20,000, then a stride that visits every digit position.
            v += if v < 20_000 { 1 } else { 9_973 };
        }
        assert_eq!(eight_digits(99_999_999).to_le_bytes(), *b"99999999");
    }
}
