//! Launch stacks: the agent's return addresses and module map become `ModuleDef`s,
//! `FrameDef::default().kind(FileOffset)` (return address − 1, the call instruction, as a file offset)
//! and `StackDef`s, so the host symbolises them after the process is gone.

use std::collections::HashMap;

use xpuprof_sdk::model::*;
use xpuprof_sdk::{Emitter, StringInterner};
use xpuprof_toolbox::python::PyFrames;
use xpuprof_wire::maps::Mapping;

/// Session-wide module, frame and stack ids.
#[derive(Debug, Default)]
pub struct Stacks {
    modules: HashMap<String, ModuleId>,
    frames: HashMap<(u32, u64, u32), FrameId>,
    stacks: HashMap<(u32, u64), StackId>,
}

impl Stacks {
    /// The id of stack `hash` of process `pid`, if it was defined.
    pub fn get(&self, pid: u32, hash: u64) -> StackId {
        self.stacks.get(&(pid, hash)).copied().unwrap_or(StackId::NONE)
    }

    /// Defines stack `hash` of `pid` from its return addresses (innermost first).
    pub fn define(
        &mut self,
        pid: u32,
        hash: u64,
        frames: &[u64],
        (maps, python): (&[Mapping], &PyFrames),
        strs: &mut StringInterner,
        out: &mut Emitter,
    ) {
        if self.stacks.contains_key(&(pid, hash)) {
            return;
        }
        let ids = frames
            .iter()
            .map(|&ra| match python.name(ra) {
                Some(name) => self.named(pid, ra, name, strs, out),
                None => self.frame(pid, ra, maps, strs, out),
            })
            .collect();
        let id = StackId(self.stacks.len() as u32 + 1);
        out.emit(&Record::Stack(StackDef::default().id(id).frames(ids)));
        self.stacks.insert((pid, hash), id);
    }

    fn frame(
        &mut self,
        pid: u32,
        ra: u64,
        maps: &[Mapping],
        strs: &mut StringInterner,
        out: &mut Emitter,
    ) -> FrameId {
        let addr = ra.saturating_sub(1);
        let hit = maps.iter().find(|m| m.contains(addr) && !m.path.is_empty());
        let (kind, module, address) = match hit {
            Some(m) => (FrameKind::FileOffset, self.module(&m.path, strs, out), m.file_offset(addr)),
            None => (FrameKind::Virtual, ModuleId::NONE, addr),
        };
        let key = (module.0, address, if kind == FrameKind::Virtual { pid } else { 0 });
        if let Some(f) = self.frames.get(&key) {
            return *f;
        }
        let id = FrameId(self.frames.len() as u32 + 1);
        let name = StrId::NONE;
        out.emit(&Record::Frame(
            FrameDef::default().id(id).kind(kind).module(module).address(address).pid(pid).name(name),
        ));
        self.frames.insert(key, id);
        id
    }

    /// A Python frame: a synthetic frame with its `function (file.py:line)` name.
    fn named(
        &mut self,
        pid: u32,
        id: u64,
        name: &str,
        strs: &mut StringInterner,
        out: &mut Emitter,
    ) -> FrameId {
        let key = (u32::MAX, id, pid);
        if let Some(f) = self.frames.get(&key) {
            return *f;
        }
        let fid = FrameId(self.frames.len() as u32 + 1);
        let name = strs.intern(out, name);
        out.emit(&Record::Frame(FrameDef::default().id(fid).kind(FrameKind::Synthetic).pid(pid).name(name)));
        self.frames.insert(key, fid);
        fid
    }

    fn module(&mut self, path: &str, strs: &mut StringInterner, out: &mut Emitter) -> ModuleId {
        if let Some(m) = self.modules.get(path) {
            return *m;
        }
        let id = ModuleId(self.modules.len() as u32 + 1);
        let p = strs.intern(out, path);
        out.emit(&Record::Module(ModuleDef::default().id(id).path(p)));
        self.modules.insert(path.to_owned(), id);
        id
    }
}
