//! The leaf function of each CPU stack: what a CPU sample's instant event is called.

use xpuprof_sdk::hash::IdMap;

use xpuprof_sdk::model::*;

use crate::names::Names;

/// The JSON literal naming each stack's leaf, made on first use from the definitions.
#[derive(Debug, Default)]
pub struct Leaves {
    cache: IdMap<StackId, String>,
}

impl Leaves {
    /// The JSON literal naming the leaf of `stack`: the innermost (inlined) function, or
    /// `module+0xoffset` when it has no symbol.
    pub fn leaf(&mut self, stack: StackId, names: &Names) -> &str {
        self.cache.entry(stack).or_insert_with(|| crate::json::quoted(&Self::render(stack, names)))
    }

    fn render(stack: StackId, names: &Names) -> String {
        let defs = names.defs();
        let Some(f) = defs.stack(stack).and_then(|s| s.first()).and_then(|f| defs.frame(*f)) else {
            return "[unknown stack]".into();
        };
        let leaf_inlined = f.inlined.last().copied().unwrap_or(StrId::NONE);
        if let Some(name) = defs.str(leaf_inlined).or_else(|| defs.str(f.name)) {
            return name.to_owned();
        }
        let module = defs.module_path(f.module).unwrap_or("[unknown module]");
        format!("{}+{:#x}", module.rsplit('/').next().unwrap_or(module), f.address)
    }
}
