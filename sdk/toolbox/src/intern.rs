//! Interning of a source's definitions: every string, process, thread, module, frame and stack is
//! emitted once, before the first event that uses it, and numbered in the source's own id space
//! (the host renumbers session-wide).

use xpuprof_sdk::model::{
    FrameDef, FrameId, FrameKind, ModuleDef, ModuleId, ProcessDef, Record, StackDef, StackId, StrId,
    ThreadDef,
};
use xpuprof_sdk::{Emitter, StringInterner};

use xpuprof_sdk::hash::{IdMap, IdSet};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum FrameKey {
    File(ModuleId, u64),
    Kernel(u64),
    Virtual(u32, u64),
    Synthetic(StrId),
}

/// Emits definitions on first use and hands out their ids.
#[derive(Debug, Default)]
pub struct Interner {
    strings: StringInterner,
    modules: IdMap<String, ModuleId>,
    frames: IdMap<FrameKey, FrameId>,
    stacks: IdMap<Vec<FrameId>, StackId>,
    processes: IdSet<u32>,
    threads: IdSet<(u32, u32)>,
}

impl Interner {
    /// The id of `text`.
    pub fn string(&mut self, em: &mut Emitter, text: &str) -> StrId {
        self.strings.intern(em, text)
    }

    /// The module mapped from `path`; `build_id` is called once, on first use.
    pub fn module(&mut self, em: &mut Emitter, path: &str, build_id: impl FnOnce() -> Vec<u8>) -> ModuleId {
        if let Some(id) = self.modules.get(path) {
            return *id;
        }
        let id = ModuleId(self.modules.len() as u32 + 1);
        let path_id = self.string(em, path);
        em.emit(&Record::Module(ModuleDef::default().id(id).path(path_id).build_id(build_id())));
        self.modules.insert(path.to_owned(), id);
        id
    }

    /// A user frame at file offset `offset` of `module`.
    pub fn file_frame(&mut self, em: &mut Emitter, module: ModuleId, offset: u64) -> FrameId {
        self.frame(em, FrameKey::File(module, offset), |id| {
            FrameDef::default().id(id).kind(FrameKind::FileOffset).module(module).address(offset)
        })
    }

    /// A kernel frame at `addr`.
    pub fn kernel_frame(&mut self, em: &mut Emitter, addr: u64) -> FrameId {
        self.frame(em, FrameKey::Kernel(addr), |id| {
            FrameDef::default().id(id).kind(FrameKind::Kernel).address(addr)
        })
    }

    /// A user address that no file mapping covers (JIT code, or a process whose maps are gone).
    pub fn virtual_frame(&mut self, em: &mut Emitter, pid: u32, addr: u64) -> FrameId {
        self.frame(em, FrameKey::Virtual(pid, addr), |id| {
            FrameDef::default().id(id).kind(FrameKind::Virtual).address(addr).pid(pid)
        })
    }

    /// A frame that is only a name (`[vdso]`).
    pub fn named_frame(&mut self, em: &mut Emitter, name: &str) -> FrameId {
        let name = self.string(em, name);
        self.frame(em, FrameKey::Synthetic(name), |id| {
            FrameDef::default().id(id).kind(FrameKind::Synthetic).name(name)
        })
    }

    /// A Python frame named `name` (`function (file:line)`) whose function starts at line
    /// `start_line` of its file (0: not known; then it is [`Interner::named_frame`]).
    pub fn python_frame(&mut self, em: &mut Emitter, name: &str, start_line: u32) -> FrameId {
        let name = self.string(em, name);
        self.frame(em, FrameKey::Synthetic(name), |id| {
            FrameDef::default().id(id).kind(FrameKind::Synthetic).name(name).start_line(start_line)
        })
    }

    fn frame(&mut self, em: &mut Emitter, key: FrameKey, def: impl FnOnce(FrameId) -> FrameDef) -> FrameId {
        if let Some(id) = self.frames.get(&key) {
            return *id;
        }
        let id = FrameId(self.frames.len() as u32 + 1);
        em.emit(&Record::Frame(def(id)));
        self.frames.insert(key, id);
        id
    }

    /// The stack made of `frames`, innermost first.
    pub fn stack(&mut self, em: &mut Emitter, frames: &[FrameId]) -> StackId {
        if let Some(id) = self.stacks.get(frames) {
            return *id;
        }
        let id = StackId(self.stacks.len() as u32 + 1);
        em.emit(&Record::Stack(StackDef::default().id(id).frames(frames.to_vec())));
        self.stacks.insert(frames.to_vec(), id);
        id
    }

    /// True when process `pid` has been defined.
    pub fn has_process(&self, pid: u32) -> bool {
        self.processes.contains(&pid)
    }

    /// Defines process `pid` the first time it is seen; true if it was new.
    pub fn process(&mut self, em: &mut Emitter, pid: u32, ppid: u32, command: &str) -> bool {
        if !self.processes.insert(pid) {
            return false;
        }
        let command = self.string(em, command);
        em.emit(&Record::Process(ProcessDef::default().pid(pid).ppid(ppid).command(command)));
        true
    }

    /// Defines thread `tid` of `pid` the first time it is seen (an empty name is no name).
    pub fn thread(&mut self, em: &mut Emitter, pid: u32, tid: u32, name: &str) {
        if self.threads.insert((pid, tid)) {
            let name = if name.is_empty() { StrId::NONE } else { self.string(em, name) };
            em.emit(&Record::Thread(ThreadDef::default().pid(pid).tid(tid).name(name)));
        }
    }
}

#[cfg(test)]
mod tests {
    use xpuprof_sdk::codec::decode_all;

    use super::*;

    #[test]
    fn definitions_are_emitted_once() {
        let mut em = Emitter::detached();
        let mut int = Interner::default();
        let m = int.module(&mut em, "/lib/x.so", || vec![1, 2]);
        assert_eq!(int.module(&mut em, "/lib/x.so", || unreachable!()), m);
        let a = int.file_frame(&mut em, m, 0x10);
        let b = int.kernel_frame(&mut em, 0xffff_ffff_8100_0000);
        assert_eq!(int.file_frame(&mut em, m, 0x10), a);
        let s = int.stack(&mut em, &[a, b]);
        assert_eq!(int.stack(&mut em, &[a, b]), s);
        assert_ne!(int.stack(&mut em, &[b, a]), s);
        let records = decode_all(&em.take_buffer()).unwrap();
        let stacks = records.iter().filter(|r| matches!(r, Record::Stack(_))).count();
        let frames = records.iter().filter(|r| matches!(r, Record::Frame(_))).count();
        let modules = records.iter().filter(|r| matches!(r, Record::Module(_))).count();
        assert_eq!((stacks, frames, modules), (2, 2, 1));
    }
}
