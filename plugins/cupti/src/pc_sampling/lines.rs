//! Source lines of a cubin's kernels: the DWARF line table (`.debug_line`) of the ELF image CUPTI
//! hands over at module load, read on the host (the target never parses DWARF).
//!
//! In a cubin every kernel's code is a section of its own (`.text.<mangled name>`), and the line
//! program's addresses are offsets into that section, tied to it by relocations
//! (`.rel.debug_line` entries naming the kernel's symbol at each `DW_LNE_set_address` operand).
//! The relocations are applied first with a synthetic address per section
//! (`section index << 32 | offset`), so every row names its kernel and its offset from the
//! kernel's start: exactly what a PC sample carries (`pc_offset`). A table whose addresses are
//! not relocated (absolute section addresses) is read by the sections' address ranges instead.

use std::collections::HashMap;

use object::{Object, ObjectSection, ObjectSymbol, RelocationFlags, RelocationTarget};

/// Why a cubin's line table could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LineError {
    /// Not an ELF image `object` reads.
    #[error("not an ELF cubin: {0}")]
    Elf(String),
    /// No `.debug_line` section (built without `-lineinfo`/`-G`).
    #[error("the cubin has no .debug_line section")]
    NoTable,
    /// The line program is malformed.
    #[error("malformed .debug_line at offset {offset}: {cause}")]
    Dwarf {
        /// Byte offset of the line program.
        offset: usize,
        /// gimli's error.
        cause: String,
    },
}

/// A span of a kernel's code on one source line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Span {
    start: u64,
    end: u64,
    file: u32,
    line: u32,
}

/// The line table of one cubin: per kernel (by mangled name), its code spans and their lines.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct LineTable {
    files: Vec<String>,
    kernels: HashMap<String, Vec<Span>>,
}

impl LineTable {
    /// Reads the line table of `cubin`.
    pub fn read(cubin: &[u8]) -> Result<Self, LineError> {
        let file = object::File::parse(cubin).map_err(|e| LineError::Elf(e.to_string()))?;
        let text: HashMap<usize, (String, u64, u64)> = file
            .sections()
            .filter_map(|s| {
                let name = s.name().ok()?.strip_prefix(".text.")?.to_owned();
                Some((s.index().0, (name, s.address(), s.size())))
            })
            .collect();
        let section = file.section_by_name(".debug_line").ok_or(LineError::NoTable)?;
        let mut data = section.uncompressed_data().map_err(|e| LineError::Elf(e.to_string()))?.into_owned();
        relocate(&file, &section, &mut data);
        let mut t = LineTable::default();
        let mut file_ids: HashMap<String, u32> = HashMap::new();
        let mut offset = 0usize;
        while offset < data.len() {
            let next = t.program(&data, offset, &text, &mut file_ids)?;
            if next <= offset {
                break;
            }
            offset = next;
        }
        for spans in t.kernels.values_mut() {
            spans.sort_by_key(|s| (s.start, s.end));
        }
        Ok(t)
    }

    /// Reads the line program at `offset`; returns the offset of the next one.
    fn program(
        &mut self,
        data: &[u8],
        offset: usize,
        text: &HashMap<usize, (String, u64, u64)>,
        file_ids: &mut HashMap<String, u32>,
    ) -> Result<usize, LineError> {
        let dwarf = |e: gimli::Error| LineError::Dwarf { offset, cause: e.to_string() };
        let debug_line = gimli::DebugLine::new(data, gimli::LittleEndian);
        let program = debug_line.program(gimli::DebugLineOffset(offset), 8, None, None).map_err(dwarf)?;
        let h = program.header();
        let next = offset + h.unit_length() + usize::from(h.format().initial_length_size());
        let mut rows = program.rows();
        let mut prev: Option<(u64, u32, u32)> = None;
        while let Some((header, row)) = rows.next_row().map_err(dwarf)? {
            let file = self.file_id(header, row.file_index(), file_ids);
            let line = row.line().map_or(0, |l| l.get() as u32);
            if let Some((start, f, l)) = prev {
                if row.address() > start {
                    self.add(text, start, row.address(), f, l);
                }
            }
            prev = if row.end_sequence() { None } else { Some((row.address(), file, line)) };
        }
        Ok(next)
    }

    fn file_id(
        &mut self,
        header: &gimli::LineProgramHeader<gimli::EndianSlice<'_, gimli::LittleEndian>>,
        index: u64,
        file_ids: &mut HashMap<String, u32>,
    ) -> u32 {
        let text = |v: gimli::AttributeValue<gimli::EndianSlice<'_, gimli::LittleEndian>>| match v {
            gimli::AttributeValue::String(s) => Some(String::from_utf8_lossy(s.slice()).into_owned()),
            _ => None,
        };
        let Some(f) = header.file(index) else { return u32::MAX };
        let name = text(f.path_name()).unwrap_or_default();
        let path = match f.directory(header).and_then(text) {
            Some(dir) if !dir.is_empty() && !name.starts_with('/') => format!("{dir}/{name}"),
            _ => name,
        };
        *file_ids.entry(path.clone()).or_insert_with(|| {
            self.files.push(path);
            (self.files.len() - 1) as u32
        })
    }

    /// Adds the span `[start, end)` (synthetic or section addresses) on `file:line`.
    fn add(&mut self, text: &HashMap<usize, (String, u64, u64)>, start: u64, end: u64, file: u32, line: u32) {
        let (kernel, base) = match text.get(&((start >> 32) as usize)) {
            Some((name, _, _)) if start >> 32 != 0 => (name, start & !0xFFFF_FFFF),
            _ => match text.values().find(|(_, addr, size)| *addr <= start && start < addr + size) {
                Some((name, addr, _)) => (name, *addr),
                None => return,
            },
        };
        let span = Span { start: start - base, end: end.saturating_sub(base), file, line };
        self.kernels.entry(kernel.clone()).or_default().push(span);
    }

    /// The source file and line of the instruction `pc_offset` bytes into `kernel`.
    pub fn lookup(&self, kernel: &str, pc_offset: u64) -> Option<(&str, u32)> {
        let spans = self.kernels.get(kernel)?;
        let at = spans.partition_point(|s| s.start <= pc_offset);
        let s = spans[..at].iter().rev().find(|s| pc_offset < s.end && s.line != 0)?;
        Some((self.files.get(s.file as usize)?.as_str(), s.line))
    }
}

/// Applies `section`'s relocations to its `data`: each relocated 64-bit address becomes
/// `target section index << 32 | offset in that section` (plus the implicit addend already in
/// the data), so the line rows name their kernel's section. CUDA's relocation types: 1 and 3
/// write 32 bits (`R_NV_32`, `R_NV_G32`), 2 and 4 write 64 (`R_NV_64`, `R_NV_G64`); a 32-bit one
/// gets the offset alone (no room for the section).
fn relocate(file: &object::File<'_>, section: &object::Section<'_, '_>, data: &mut [u8]) {
    for (at, r) in section.relocations() {
        let RelocationTarget::Symbol(index) = r.target() else { continue };
        let Ok(sym) = file.symbol_by_index(index) else { continue };
        let Some(target) = sym.section_index() else { continue };
        let Ok(target_section) = file.section_by_index(target) else { continue };
        let width = match r.flags() {
            RelocationFlags::Elf { r_type: 1 | 3 } => 4,
            RelocationFlags::Elf { r_type: 2 | 4 } => 8,
            _ => continue,
        };
        let at = at as usize;
        let Some(slot) = data.get_mut(at..at + width) else { continue };
        let mut old = [0u8; 8];
        old[..width].copy_from_slice(slot);
        let implicit = if r.has_implicit_addend() { u64::from_le_bytes(old) } else { r.addend() as u64 };
        let offset = sym.address().wrapping_sub(target_section.address()).wrapping_add(implicit);
        let value = ((target.0 as u64) << 32) | (offset & 0xFFFF_FFFF);
        slot.copy_from_slice(&value.to_le_bytes()[..width]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A DWARF 2 line program for one kernel: `k.cu` line 10 over its first 0x20 bytes, line 12
    /// over the next 0x20; the start address is 0, left to a relocation. Returns the program and
    /// the offset of the address to relocate.
    fn line_program() -> (Vec<u8>, usize) {
        let mut h = vec![1, 1, 0xFB, 14, 13, 0, 1, 1, 1, 1, 0, 0, 0, 1, 0, 0, 1];
        h.extend_from_slice(b"/src\0\0k.cu\0\x01\0\0\0");
        let mut p = vec![0, 9, 2];
        let reloc_at = p.len();
        p.extend_from_slice(&0u64.to_le_bytes());
        p.extend_from_slice(&[3, 9, 1, 2, 0x20, 3, 2, 1, 2, 0x20, 0, 1, 1]);
        let mut unit = 2u16.to_le_bytes().to_vec();
        unit.extend_from_slice(&(h.len() as u32).to_le_bytes());
        let header_end = unit.len() + h.len();
        unit.extend_from_slice(&h);
        unit.extend_from_slice(&p);
        let mut out = (unit.len() as u32).to_le_bytes().to_vec();
        out.extend_from_slice(&unit);
        (out, 4 + header_end + reloc_at)
    }

    /// A section of the test cubin: name offset, type, address, link, info, entry size, bytes.
    type Section<'a> = (u32, u32, u64, u32, u32, u64, &'a [u8]);

    /// A minimal cubin-shaped ELF (EM_CUDA, every kernel in a `.text.<name>` section at address
    /// 0) holding `.debug_line` and its relocations (`R_NV_64` against the kernel's symbol).
    fn cubin() -> Vec<u8> {
        let (debug_line, reloc_at) = line_program();
        let shstrtab =
            b"\0.shstrtab\0.strtab\0.symtab\0.text._Z1jv\0.text._Z1kv\0.debug_line\0.rel.debug_line\0"
                .to_vec();
        let name = |s: &str| shstrtab.windows(s.len()).position(|w| w == s.as_bytes()).unwrap() as u32;
        let strtab = b"\0_Z1kv\0".to_vec();
        let mut symtab = vec![0u8; 24];
        symtab.extend_from_slice(&1u32.to_le_bytes());
        symtab.extend_from_slice(&[0x12, 0]);
        symtab.extend_from_slice(&5u16.to_le_bytes());
        symtab.extend_from_slice(&0x1000u64.to_le_bytes());
        symtab.extend_from_slice(&0x40u64.to_le_bytes());
        let mut rel = (reloc_at as u64).to_le_bytes().to_vec();
        rel.extend_from_slice(&((1u64 << 32) | 2).to_le_bytes());
        let text = vec![0u8; 0x40];
        let other = vec![0u8; 0x100];
        // (name, type, address, link, info, entsize, data): another kernel's code at address 0,
        // so only the relocation can name `_Z1kv` (at 0x1000) as the rows' kernel.
        let sections: Vec<Section<'_>> = vec![
            (name(".shstrtab"), 3, 0, 0, 0, 0, &shstrtab),
            (name(".strtab"), 3, 0, 0, 0, 0, &strtab),
            (name(".symtab"), 2, 0, 2, 1, 24, &symtab),
            (name(".text._Z1jv"), 1, 0, 0, 0, 0, &other),
            (name(".text._Z1kv"), 1, 0x1000, 0, 0, 0, &text),
            (name(".debug_line"), 1, 0, 0, 0, 0, &debug_line),
            (name(".rel.debug_line"), 9, 0, 3, 6, 16, &rel),
        ];
        let mut data = vec![0u8; 64];
        let mut headers = vec![0u8; 64];
        for (n, ty, addr, link, info, entsize, bytes) in &sections {
            data.resize(data.len().next_multiple_of(8), 0);
            let offset = data.len() as u64;
            data.extend_from_slice(bytes);
            let mut sh = Vec::new();
            sh.extend_from_slice(&n.to_le_bytes());
            sh.extend_from_slice(&ty.to_le_bytes());
            sh.extend_from_slice(&0u64.to_le_bytes());
            sh.extend_from_slice(&addr.to_le_bytes());
            sh.extend_from_slice(&offset.to_le_bytes());
            sh.extend_from_slice(&(bytes.len() as u64).to_le_bytes());
            sh.extend_from_slice(&link.to_le_bytes());
            sh.extend_from_slice(&info.to_le_bytes());
            sh.extend_from_slice(&1u64.to_le_bytes());
            sh.extend_from_slice(&entsize.to_le_bytes());
            headers.extend_from_slice(&sh);
        }
        data.resize(data.len().next_multiple_of(8), 0);
        let shoff = data.len() as u64;
        let mut e = b"\x7fELF\x02\x01\x01\x33".to_vec();
        e.resize(16, 0);
        e.extend_from_slice(&2u16.to_le_bytes());
        e.extend_from_slice(&190u16.to_le_bytes());
        e.extend_from_slice(&1u32.to_le_bytes());
        e.extend_from_slice(&[0; 16]);
        e.extend_from_slice(&shoff.to_le_bytes());
        e.extend_from_slice(&0u32.to_le_bytes());
        for v in [64u16, 0, 0, 64, (sections.len() + 1) as u16, 1] {
            e.extend_from_slice(&v.to_le_bytes());
        }
        data[..64].copy_from_slice(&e);
        data.extend_from_slice(&headers);
        data
    }

    #[test]
    fn rows_name_their_kernel_through_the_relocations() {
        let t = LineTable::read(&cubin()).unwrap();
        assert_eq!(t.lookup("_Z1kv", 0), Some(("/src/k.cu", 10)));
        assert_eq!(t.lookup("_Z1kv", 0x1f), Some(("/src/k.cu", 10)));
        assert_eq!(t.lookup("_Z1kv", 0x30), Some(("/src/k.cu", 12)));
        assert_eq!(t.lookup("_Z1kv", 0x40), None, "past the sequence's end");
        assert_eq!(t.lookup("_Z1jv", 0), None, "the kernel at address 0 has no rows");
    }

    #[test]
    fn a_cubin_without_a_line_table_or_not_elf_says_so() {
        assert_eq!(
            LineTable::read(b"not an elf").unwrap_err().to_string().split(':').next(),
            Some("not an ELF cubin")
        );
        let mut c = cubin();
        let at = c.windows(11).position(|w| w == b".debug_line").unwrap();
        c[at + 1] = b'x';
        assert_eq!(LineTable::read(&c), Err(LineError::NoTable));
    }
}
