//! The leaf function of each CPU stack: what a CPU sample's instant event is called.

use xpuprof_sdk::hash::IdMap;

use xpuprof_sdk::model::*;

use crate::tracks::Tracks;

#[derive(Debug, Clone)]
struct Frame {
    name: StrId,
    leaf_inlined: StrId,
    module: ModuleId,
    address: u64,
}

/// Frames, modules and stacks, reduced to what naming a sample needs.
#[derive(Debug, Default)]
pub struct Leaves {
    modules: IdMap<ModuleId, StrId>,
    frames: IdMap<FrameId, Frame>,
    stacks: IdMap<StackId, FrameId>,
    cache: IdMap<StackId, String>,
}

impl Leaves {
    /// Records module, frame and stack definitions.
    pub fn define(&mut self, r: &Record) {
        match r {
            Record::Module(d) => {
                self.modules.insert(d.id, d.path);
            }
            Record::Frame(d) => {
                let leaf_inlined = d.inlined.last().copied().unwrap_or(StrId::NONE);
                self.frames
                    .insert(d.id, Frame { name: d.name, leaf_inlined, module: d.module, address: d.address });
            }
            Record::Stack(d) => {
                self.stacks.insert(d.id, d.frames.first().copied().unwrap_or(FrameId::NONE));
            }
            _ => {}
        }
    }

    /// The JSON literal naming the leaf of `stack`: the innermost (inlined) function, or
    /// `module+0xoffset` when it has no symbol.
    pub fn leaf(&mut self, stack: StackId, tracks: &Tracks) -> &str {
        if !self.cache.contains_key(&stack) {
            let text = self.render(stack, tracks);
            self.cache.insert(stack, crate::json::quoted(&text));
        }
        &self.cache[&stack]
    }

    fn render(&self, stack: StackId, tracks: &Tracks) -> String {
        let Some(f) = self.stacks.get(&stack).and_then(|f| self.frames.get(f)) else {
            return "[unknown stack]".into();
        };
        if let Some(name) = tracks.text(f.leaf_inlined).or_else(|| tracks.text(f.name)) {
            return name.to_owned();
        }
        let module = self.modules.get(&f.module).and_then(|p| tracks.text(*p)).unwrap_or("[unknown module]");
        format!("{}+{:#x}", module.rsplit('/').next().unwrap_or(module), f.address)
    }
}
