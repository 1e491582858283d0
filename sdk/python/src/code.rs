//! Code objects: their function name, file, first line and line table, read once per code
//! object, and the line of an instruction offset inside them.

use crate::cpython_offsets::{self, Layout};
use crate::lines;
use crate::memory::Memory;
use crate::Error;

/// Longest string or line table read from a target (longer ones are cut).
const MAX_BYTES: u64 = 1 << 16;

/// What a frame shows of its code object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Code {
    /// `co_qualname` (3.11 and later) or `co_name`.
    pub function: String,
    /// `co_filename`.
    pub file: String,
    /// `co_firstlineno`.
    pub first_line: u32,
    /// `co_linetable` (`co_lnotab` in 3.9).
    pub line_table: Vec<u8>,
}

impl Code {
    /// Reads the code object at `addr`.
    pub fn read(mem: &impl Memory, layout: &Layout, addr: u64) -> Result<Code, Error> {
        let name_at = layout.code_qualname.unwrap_or(layout.code_name);
        let function = string(mem, layout, mem.u64(addr + name_at)?)?;
        let file = string(mem, layout, mem.u64(addr + layout.code_filename)?)?;
        let first_line = mem.u32(addr + layout.code_firstlineno)?;
        let line_table = bytes(mem, mem.u64(addr + layout.code_linetable)?)?;
        Ok(Code { function, file, first_line, line_table })
    }

    /// The line of the instruction at byte offset `offset`; the first line when the table has
    /// none for it (a frame that has not started yet, an artificial instruction).
    pub fn line(&self, layout: &Layout, offset: Option<u64>) -> u32 {
        offset
            .and_then(|o| lines::line_at(layout.line_table, &self.line_table, self.first_line, o))
            .unwrap_or(self.first_line)
    }

    /// The frame's label: `function (file:line)`.
    pub fn label(&self, line: u32) -> String {
        format!("{} ({}:{})", self.function, self.file, line)
    }
}

/// Bits of [`identity`].
pub const IDENTITY_MASK: u32 = 0x7fff_ffff;

/// Which code object lives at `addr`, as its own memory says (31 bits, what eBPF samples carry
/// beside a frame's code address, read at the sample): `co_version` where the version has it
/// (3.12 and later: numbered at creation, never reused), else [`identity_of_names`] of its file
/// and name objects' addresses. A label cached for an address is only reused for the same
/// identity, so a code object freed and another created at its address are told apart.
pub fn identity(mem: &impl Memory, layout: &Layout, addr: u64) -> Result<u32, Error> {
    if let Some(at) = layout.code_version {
        return Ok(mem.u32(addr + at)? & IDENTITY_MASK);
    }
    // co_filename and co_name are adjacent in every version without co_version.
    let mut b = [0u8; 16];
    mem.read(addr + layout.code_filename, &mut b)?;
    let word = |i: usize| u64::from_le_bytes(b[i..i + 8].try_into().unwrap_or_default());
    Ok(identity_of_names(word(0), word(8)))
}

/// The identity of a code object without `co_version`: its `co_filename` and `co_name`
/// pointers mixed into 31 bits (the BPF reader computes the same, `src/bpf/python.h`).
pub fn identity_of_names(file: u64, name: u64) -> u32 {
    let h = file ^ name.rotate_left(17);
    (h ^ (h >> 31) ^ (h >> 62)) as u32 & IDENTITY_MASK
}

/// The text of the `str` object at `addr` (compact strings: every string a code object holds).
pub fn string(mem: &impl Memory, layout: &Layout, addr: u64) -> Result<String, Error> {
    let len = mem.u64(addr + cpython_offsets::UNICODE_LENGTH)?.min(MAX_BYTES);
    let state = mem.u32(addr + cpython_offsets::UNICODE_STATE)?;
    let (kind, compact, ascii) = ((state >> 2) & 7, state >> 5 & 1 == 1, state >> 6 & 1 == 1);
    if !compact {
        return Err(Error::Object { addr, what: "a compact str" });
    }
    let data = addr + if ascii { layout.unicode_ascii_size } else { layout.unicode_compact_size };
    let mut raw = vec![0u8; (len * u64::from(kind.max(1))) as usize];
    mem.read(data, &mut raw)?;
    Ok(match kind {
        1 => raw.iter().map(|&b| char::from(b)).collect(),
        2 => raw
            .chunks_exact(2)
            .map(|c| char::from_u32(u32::from(u16::from_le_bytes([c[0], c[1]]))).unwrap_or('\u{fffd}'))
            .collect(),
        4 => raw
            .chunks_exact(4)
            .map(|c| char::from_u32(u32::from_le_bytes([c[0], c[1], c[2], c[3]])).unwrap_or('\u{fffd}'))
            .collect(),
        _ => return Err(Error::Object { addr, what: "a str of kind 1, 2 or 4" }),
    })
}

/// The contents of the `bytes` object at `addr`.
pub fn bytes(mem: &impl Memory, addr: u64) -> Result<Vec<u8>, Error> {
    let len = mem.u64(addr + cpython_offsets::VAR_SIZE)?.min(MAX_BYTES);
    let mut out = vec![0u8; len as usize];
    mem.read(addr + cpython_offsets::BYTES_DATA, &mut out)?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpython_offsets::Version;
    use crate::memory::SliceMemory;

    fn put(b: &mut [u8], at: usize, v: &[u8]) {
        b[at..at + v.len()].copy_from_slice(v);
    }

    #[test]
    fn reads_ascii_latin1_and_wide_strings() {
        let l = Layout::of(Version::new(3, 12)).unwrap();
        let mut m = vec![0u8; 512];
        // ASCII "run" at 0x1000.
        put(&mut m, 16, &3u64.to_le_bytes());
        put(&mut m, 32, &((1 << 2) | (1 << 5) | (1 << 6) as u32).to_le_bytes());
        put(&mut m, 40, b"run");
        // UCS-2 "é✓" at 0x1100 (compact, not ASCII).
        put(&mut m, 256 + 16, &2u64.to_le_bytes());
        put(&mut m, 256 + 32, &((2 << 2) | (1 << 5) as u32).to_le_bytes());
        put(&mut m, 256 + 56, &[0xe9, 0, 0x13, 0x27]);
        let mem = SliceMemory { base: 0x1000, bytes: &m };
        assert_eq!(string(&mem, l, 0x1000).unwrap(), "run");
        assert_eq!(string(&mem, l, 0x1100).unwrap(), "é✓");
        put(&mut m, 32, &0u32.to_le_bytes());
        let mem = SliceMemory { base: 0x1000, bytes: &m };
        assert!(matches!(string(&mem, l, 0x1000), Err(Error::Object { .. })));
    }
}
