//! Function addresses in the target: an ELF file's dynamic symbols (read with `object`) plus the
//! load bias of its mapping in the target.

use std::path::Path;

use object::{Architecture, Object, ObjectSegment, ObjectSymbol, SymbolKind};

use crate::maps::Mapping;

/// A shared object as the target maps it.
#[derive(Debug)]
pub struct Loaded {
    data: Vec<u8>,
    bias: u64,
}

impl Loaded {
    /// Reads `file` (the host's path to it), whose offset-0 mapping in the target is `first`.
    pub fn read(file: &Path, first: &Mapping) -> Result<Self, String> {
        let data = std::fs::read(file).map_err(|e| format!("failed to read {}: {e}", file.display()))?;
        let bias = {
            let obj = parse(&data, file)?;
            // The segment at file offset 0 is mapped at `first.start`, page-aligned.
            let lowest = obj
                .segments()
                .filter(|s| s.file_range().0 == 0)
                .map(|s| s.address() & !0xfff)
                .min()
                .unwrap_or(0);
            first.start.wrapping_sub(lowest)
        };
        Ok(Self { data, bias })
    }

    /// The target address of the first defined function named one of `names`.
    pub fn function(&self, names: &[&str]) -> Option<u64> {
        let obj = object::File::parse(&*self.data).ok()?;
        names.iter().find_map(|name| {
            obj.dynamic_symbols()
                .find(|s| s.is_definition() && s.kind() == SymbolKind::Text && s.name() == Ok(name))
                .map(|s| self.bias.wrapping_add(s.address()))
        })
    }
}

fn parse<'a>(data: &'a [u8], file: &Path) -> Result<object::File<'a>, String> {
    object::File::parse(data).map_err(|e| format!("failed to read {} as ELF: {e}", file.display()))
}

/// The architecture of the ELF file `file` (the target's executable), `None` if unreadable.
pub fn architecture(file: &Path) -> Option<(Architecture, bool)> {
    let data = std::fs::read(file).ok()?;
    let obj = object::File::parse(&*data).ok()?;
    Some((obj.architecture(), obj.is_64()))
}
