//! Instruction offset -> source line, from a code object's line table, in each version's format
//! (CPython's `Objects/lnotab_notes.txt` for 3.9/3.10 and `Objects/locations.md` for 3.11 and
//! later describe them).

use crate::cpython_offsets::LineTable;

/// The line of the instruction at byte offset `offset` (from the start of the code's
/// instructions), or `None` when the table says the instruction has no line or does not cover
/// it. `first` is `co_firstlineno`.
pub fn line_at(format: LineTable, table: &[u8], first: u32, offset: u64) -> Option<u32> {
    match format {
        LineTable::Lnotab => lnotab(table, first, offset),
        LineTable::Lines310 => lines310(table, first, offset),
        LineTable::Locations => locations(table, first, offset / 2),
    }
}

fn lnotab(table: &[u8], first: u32, offset: u64) -> Option<u32> {
    let (mut addr, mut line) = (0u64, i64::from(first));
    for pair in table.chunks_exact(2) {
        addr += u64::from(pair[0]);
        if addr > offset {
            break;
        }
        line += i64::from(pair[1] as i8);
    }
    u32::try_from(line).ok()
}

fn lines310(table: &[u8], first: u32, offset: u64) -> Option<u32> {
    let (mut start, mut line) = (0u64, i64::from(first));
    for pair in table.chunks_exact(2) {
        let end = start + u64::from(pair[0]);
        let delta = pair[1] as i8;
        if delta != -128 {
            line += i64::from(delta);
        }
        if start <= offset && offset < end {
            return if delta == -128 { None } else { u32::try_from(line).ok() };
        }
        start = end;
    }
    None
}

/// The 3.11+ location table: per run of `length` code units, a first byte `1ccccLLL`
/// (`c` = code, `L` = length - 1) and, by code, a line delta and column data.
fn locations(table: &[u8], first: u32, unit: u64) -> Option<u32> {
    let mut r = Bytes { b: table, at: 0 };
    let (mut addr, mut line) = (0u64, i64::from(first));
    while let Some(head) = r.next() {
        if head & 0x80 == 0 {
            return None;
        }
        let code = (head >> 3) & 15;
        let length = u64::from(head & 7) + 1;
        let known = match code {
            15 => false,
            14 => {
                line += r.svarint()?;
                for _ in 0..3 {
                    r.varint()?;
                }
                true
            }
            13 => {
                line += r.svarint()?;
                true
            }
            10..=12 => {
                line += i64::from(code) - 10;
                r.next()?;
                r.next()?;
                true
            }
            _ => {
                r.next()?;
                true
            }
        };
        if addr <= unit && unit < addr + length {
            return if known { u32::try_from(line).ok() } else { None };
        }
        addr += length;
    }
    None
}

struct Bytes<'a> {
    b: &'a [u8],
    at: usize,
}

impl Bytes<'_> {
    fn next(&mut self) -> Option<u8> {
        let v = *self.b.get(self.at)?;
        self.at += 1;
        Some(v)
    }

    /// 6 bits per byte, least significant first, bit 6 set on every byte but the last.
    fn varint(&mut self) -> Option<u64> {
        let (mut v, mut shift) = (0u64, 0u32);
        loop {
            let b = self.next()?;
            v |= u64::from(b & 63).checked_shl(shift)?;
            if b & 64 == 0 {
                return Some(v);
            }
            shift += 6;
        }
    }

    /// A varint whose lowest bit is the sign.
    fn svarint(&mut self) -> Option<i64> {
        let v = self.varint()?;
        let m = (v >> 1) as i64;
        Some(if v & 1 == 1 { -m } else { m })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_lnotab_and_310_pairs() {
        // 3.9: offsets 0.. line 10, from byte 6 line 12, from byte 10 line 11.
        let t = [6, 2, 4, (-1i8) as u8];
        assert_eq!(line_at(LineTable::Lnotab, &t, 10, 0), Some(10));
        assert_eq!(line_at(LineTable::Lnotab, &t, 10, 8), Some(12));
        assert_eq!(line_at(LineTable::Lnotab, &t, 10, 12), Some(11));
        // 3.10: [0,4) line 11, [4,6) no line, [6,10) line 13.
        let t = [4, 1, 2, 128, 4, 2];
        assert_eq!(line_at(LineTable::Lines310, &t, 10, 2), Some(11));
        assert_eq!(line_at(LineTable::Lines310, &t, 10, 4), None);
        assert_eq!(line_at(LineTable::Lines310, &t, 10, 8), Some(13));
        assert_eq!(line_at(LineTable::Lines310, &t, 10, 10), None);
    }

    #[test]
    fn reads_the_location_table() {
        let t = [
            0x80 | (13 << 3),
            2, // 1 unit, no columns, line +1
            0x80 | (11 << 3) | 1,
            4,
            9, // 2 units, one-line form, line +1
            0x80 | (14 << 3),
            3,
            0,
            1,
            2,                // 1 unit, long form, line -1
            0x80 | (15 << 3), // 1 unit, no location
            0x80 | (5 << 3) | 2,
            7, // 3 units, short form, same line
            0x80 | (13 << 3),
            0x40 | 4,
            1, // 1 unit, no columns, line + (4 | 1<<6)/2 = +34
        ];
        let at = |unit: u64| line_at(LineTable::Locations, &t, 100, unit * 2);
        assert_eq!((at(0), at(1), at(2), at(3), at(4)), (Some(101), Some(102), Some(102), Some(101), None));
        assert_eq!((at(5), at(7), at(8), at(9)), (Some(101), Some(101), Some(135), None));
    }
}
