//! Checks a plugin file's ELF headers before the dynamic loader maps it.
//!
//! `dlopen` maps the segments the program headers name; when the file is shorter than they say
//! (a truncated copy, an interrupted install), touching the missing pages raises SIGBUS inside
//! the loader and takes xpuprof down, even for `xpuprof plugins`. Reading the headers with
//! `object` first turns that into an ordinary "cannot be loaded" reason.
//!
//! It also refuses Rust plugins built with `panic = "abort"`: the SDK contains a plugin's panics
//! by unwinding to the entry point, so such a plugin would abort xpuprof (exit 134, no outputs)
//! on its first panic. Rust's unwinding panic runtime always calls the system unwinder's
//! `_Unwind_RaiseException`; the abort runtime never does, so a library exporting the plugin root
//! module without referencing that symbol was built to abort.

use std::fs::File;
use std::path::Path;

use object::elf::FileHeader64;
use object::elf::SHT_NOBITS;
use object::read::elf::ElfFile64;
use object::read::elf::{FileHeader, ProgramHeader, SectionHeader};
use object::read::ReadCache;
use object::{Endianness, Object, ObjectSymbol};

/// The system unwinder's entry point that Rust's unwinding panic runtime raises panics with.
const RAISE: &str = "_Unwind_RaiseException";

/// Refuses an ELF file whose program headers or sections reach past its end. Files that are not
/// ELF at all are left to the dynamic loader, which refuses them without mapping anything.
pub fn check_elf(path: &Path) -> Result<(), String> {
    let file = File::open(path).map_err(|e| format!("cannot be opened: {e}"))?;
    let len = file.metadata().map_err(|e| format!("cannot read file metadata: {e}"))?.len();
    let cache = ReadCache::new(file);
    let magic = object::ReadRef::read_bytes_at(&cache, 0, 4).unwrap_or_default();
    if magic != b"\x7fELF" {
        return Ok(());
    }
    let invalid = |e: object::read::Error| {
        format!("cannot be loaded: its ELF headers are invalid ({e}); the file is truncated or corrupt, reinstall it")
    };
    let header = FileHeader64::<Endianness>::parse(&cache).map_err(invalid)?;
    let endian = header.endian().map_err(invalid)?;
    let needed = |offset: u64, size: u64| offset.saturating_add(size);
    // The section header table, then every segment the loader maps and every section with
    // contents in the file.
    let shentsize = u64::from(header.e_shentsize(endian));
    let mut end = needed(header.e_shoff(endian), shentsize.saturating_mul(u64::from(header.e_shnum(endian))));
    for ph in header.program_headers(endian, &cache).map_err(invalid)? {
        end = end.max(needed(ph.p_offset(endian), ph.p_filesz(endian)));
    }
    if end <= len {
        for sh in header.section_headers(endian, &cache).map_err(invalid)? {
            if sh.sh_type(endian) != SHT_NOBITS {
                end = end.max(needed(sh.sh_offset(endian), sh.sh_size(endian)));
            }
        }
    }
    if end > len {
        return Err(format!(
            "cannot be loaded: the file is truncated ({len} bytes, its ELF headers describe {end}); reinstall or \
             rebuild it"
        ));
    }
    Ok(())
}

/// Whether the ELF file at `path` exports (defines in its dynamic symbol table) `symbol`.
pub fn exports_symbol(path: &Path, symbol: &str) -> bool {
    let Ok(file) = File::open(path) else { return false };
    let cache = ReadCache::new(file);
    let Ok(elf) = ElfFile64::<Endianness, _>::parse(&cache) else { return false };
    elf.dynamic_symbols().any(|s| s.is_definition() && s.name_bytes().is_ok_and(|n| n == symbol.as_bytes()))
}

/// Refuses a library that exports `root_symbol` (an xpuprof plugin built with the Rust SDK) but
/// cannot unwind: it was built with `panic = "abort"`. Call after [`check_elf`].
pub fn check_unwinds(path: &Path, root_symbol: &str) -> Result<(), String> {
    let Ok(file) = File::open(path) else { return Ok(()) };
    let cache = ReadCache::new(file);
    let Ok(elf) = ElfFile64::<Endianness, _>::parse(&cache) else { return Ok(()) };
    let named = |name: &str| {
        elf.dynamic_symbols().chain(elf.symbols()).any(|s| s.name_bytes().is_ok_and(|n| n == name.as_bytes()))
    };
    if !named(root_symbol) || named(RAISE) {
        return Ok(());
    }
    Err("refused: it was built with `panic = \"abort\"` (it never calls the unwinder), so its first panic \
         would abort xpuprof and lose every output; plugins must unwind: remove `panic = \"abort\"` from the \
         [profile.*] sections of its Cargo.toml and rebuild"
        .into())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// This test binary itself: a complete ELF file.
    fn own_exe() -> Vec<u8> {
        std::fs::read(std::env::current_exe().unwrap()).unwrap()
    }

    fn write(bytes: &[u8]) -> tempfile::NamedTempFile {
        let f = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(f.path(), bytes).unwrap();
        f
    }

    #[test]
    fn a_complete_elf_file_passes() {
        check_elf(write(&own_exe()).path()).unwrap();
    }

    #[test]
    fn a_truncated_elf_file_is_refused_with_both_sizes() {
        let exe = own_exe();
        let half = exe.len() / 2;
        let e = check_elf(write(&exe[..half]).path()).unwrap_err();
        assert!(e.contains("truncated") && e.contains(&format!("({half} bytes")), "{e}");
    }

    #[test]
    fn elf_headers_cut_short_are_refused() {
        let e = check_elf(write(&own_exe()[..40]).path()).unwrap_err();
        assert!(e.contains("ELF headers are invalid"), "{e}");
    }

    #[test]
    fn a_file_that_is_not_elf_is_left_to_the_dynamic_loader() {
        check_elf(write(b"this is not an ELF file").path()).unwrap();
    }
}
