//! Names of PLT stubs, as `perf` gives them: the stub that jumps to `puts` is `puts@plt`.
//!
//! The procedure linkage table holds no symbols, so a symbolizer names an address in it after
//! the nearest symbol before it (`_init`). The stubs are in the order of the `.rela.plt`
//! relocations: stub `i` of `.plt` (after the header) and of `.plt.sec` (where the linker
//! split the table for CET, `-z ibtplt`) jumps through the GOT slot of relocation `i`, whose
//! symbol is the target (what perf's `dso__synthesize_plt_symbols` reads as well).

use std::path::Path;

use object::elf::{FileHeader64, EM_AARCH64, EM_X86_64};
use object::read::elf::{ElfFile64, FileHeader, SectionHeader};
use object::read::ReadCache;
use object::{Endianness, SymbolIndex};

/// Bytes of every stub on the architectures read here.
const ENTRY: u64 = 16;

/// The PLT stubs of one ELF file, by file offset.
#[derive(Debug, Default)]
pub struct PltStubs {
    /// `(first byte, one past the last byte, target symbol)`, sorted, not overlapping.
    stubs: Vec<(u64, u64, String)>,
}

impl PltStubs {
    /// Reads the stubs of the ELF file at `path`; empty when it has none or cannot be read.
    pub fn read(path: &Path) -> Self {
        let Ok(file) = std::fs::File::open(path) else { return Self::default() };
        let cache = ReadCache::new(file);
        let Ok(elf) = ElfFile64::<Endianness, _>::parse(&cache) else { return Self::default() };
        let mut stubs = stubs_of(&elf).unwrap_or_default();
        stubs.sort_unstable_by_key(|s| s.0);
        Self { stubs }
    }

    /// The name of the stub holding file offset `offset` (`puts@plt`), if one does.
    pub fn name(&self, offset: u64) -> Option<&str> {
        let i = self.stubs.partition_point(|s| s.0 <= offset).checked_sub(1)?;
        let (start, end, name) = &self.stubs[i];
        (*start..*end).contains(&offset).then_some(name.as_str())
    }
}

type Elf<'d, R> = ElfFile64<'d, Endianness, R>;

/// The stubs of `.plt` and `.plt.sec`, named after the `.rela.plt` relocation of their slot.
fn stubs_of<'d, R: object::ReadRef<'d>>(elf: &Elf<'d, R>) -> Option<Vec<(u64, u64, String)>> {
    let endian = elf.endian();
    let header_len = match elf.elf_header().e_machine(endian) {
        EM_X86_64 => 16,
        EM_AARCH64 => 32,
        _ => return None,
    };
    let targets = targets(elf)?;
    let sections = elf.elf_section_table();
    let range = |name: &[u8]| {
        let (_, s) = sections.section_by_name(endian, name)?;
        s.file_range(endian)
    };
    let mut stubs = Vec::new();
    let mut add = |(offset, size): (u64, u64), skip: u64| {
        for (i, target) in targets.iter().enumerate() {
            let start = offset + skip + i as u64 * ENTRY;
            if start + ENTRY > offset + size {
                break;
            }
            stubs.push((start, start + ENTRY, format!("{target}@plt")));
        }
    };
    if let Some(sec) = range(b".plt.sec") {
        add(sec, 0);
        // The stubs of `.plt` then only push the index for lazy binding; perf names them alike.
    }
    if let Some(plt) = range(b".plt") {
        add(plt, header_len);
    }
    Some(stubs)
}

/// The symbol names of the `.rela.plt` relocations, in order.
fn targets<'d, R: object::ReadRef<'d>>(elf: &Elf<'d, R>) -> Option<Vec<String>> {
    let endian = elf.endian();
    let data = elf.data();
    let (_, section) = elf.elf_section_table().section_by_name(endian, b".rela.plt")?;
    let (relocs, _) = section.rela(endian, data).ok()??;
    let symbols = elf.elf_dynamic_symbol_table();
    let header: &FileHeader64<Endianness> = elf.elf_header();
    let mips = header.is_mips64el(endian);
    let names = relocs.iter().map(|r| {
        let index = SymbolIndex(r.r_sym(endian, mips) as usize);
        let sym = symbols.symbol(index).ok()?;
        let name = symbols.symbol_name(endian, sym).ok()?;
        // An IRELATIVE slot has no symbol: perf leaves its stub unnamed too.
        (!name.is_empty()).then(|| String::from_utf8_lossy(name).into_owned())
    });
    Some(names.map(|n| n.unwrap_or_else(|| "*ABS*".to_owned())).collect())
}
