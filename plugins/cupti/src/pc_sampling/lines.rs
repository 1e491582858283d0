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
