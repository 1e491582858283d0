//! Turning captured addresses into interned frames and stacks: user addresses are normalised to
//! (module, file offset) with the process's maps; the host symbolises them later.

use xpuprof_sdk::model::{FrameId, StackId};
use xpuprof_sdk::Emitter;

use crate::decode::StackEvent;
use crate::intern::Interner;
use crate::procmaps::{openable_path, MapsCache};

/// What to do with the word at the user stack pointer (`StackEvent::ret_addr`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Splice {
    /// Ignore it (samples can land anywhere in a function).
    Never,
    /// Insert it after the leaf: the event was taken at a function entry, where the frame-pointer
    /// walk would otherwise skip the direct caller (uprobes).
    Always,
    /// Insert it when it points into executable file-backed code: a thread blocked inside a
    /// frameless leaf such as a libc syscall wrapper (off-CPU).
    IfCode,
}

/// Counts of frames that could not be normalised.
#[derive(Debug, Default, Clone, Copy)]
pub struct StackStats {
    /// User addresses in no mapping of a process whose maps were never read (it exited first).
    pub unmapped_frames: u64,
    /// Events whose user stack the kernel could not capture.
    pub missing_user_stacks: u64,
}

/// Builds stacks, reusing one frame buffer.
#[derive(Debug, Default)]
pub struct StackBuilder {
    frames: Vec<FrameId>,
    addrs: Vec<u64>,
    /// What could not be normalised so far.
    pub stats: StackStats,
}

impl StackBuilder {
    /// The interned stack of `ev`: kernel frames (innermost) first, then user frames.
    pub fn build(
        &mut self,
        ev: &StackEvent,
        splice: Splice,
        maps: &mut MapsCache,
        int: &mut Interner,
        em: &mut Emitter,
    ) -> StackId {
        self.frames.clear();
        for &addr in ev.kernel_frames() {
            self.frames.push(int.kernel_frame(em, addr));
        }
        if ev.ustack_bytes < 0 {
            self.stats.missing_user_stacks += 1;
        }
        self.user_addresses(ev, splice, maps);
        for i in 0..self.addrs.len() {
            // Non-leaf frames hold return addresses: step back into the call instruction so the
            // symboliser names the caller's line, not the next one.
            let addr = if i == 0 { self.addrs[i] } else { self.addrs[i] - 1 };
            let frame = self.user_frame(ev.pid, ev.time, addr, maps, int, em);
            self.frames.push(frame);
        }
        int.stack(em, &self.frames)
    }

    fn user_addresses(&mut self, ev: &StackEvent, splice: Splice, maps: &mut MapsCache) {
        self.addrs.clear();
        let user = ev.user_frames();
        self.addrs.extend_from_slice(user);
        let ret = ev.ret_addr;
        if user.is_empty() || ret == 0 || user.get(1) == Some(&ret) {
            return;
        }
        let insert = match splice {
            Splice::Never => false,
            Splice::Always => true,
            Splice::IfCode => maps.find(ev.pid, ev.time, ret).is_some_and(|m| m.exec && m.is_file()),
        };
        if insert {
            self.addrs.insert(1, ret);
        }
    }

    fn user_frame(
        &mut self,
        pid: u32,
        time: u64,
        addr: u64,
        maps: &mut MapsCache,
        int: &mut Interner,
        em: &mut Emitter,
    ) -> FrameId {
        let had_maps = maps.get(pid).is_some();
        match maps.find(pid, time, addr) {
            Some(m) if m.is_file() => {
                let offset = m.file_offset(addr);
                let path = m.path.clone();
                let module = int.module(em, &path, || read_build_id(pid, &path));
                int.file_frame(em, module, offset)
            }
            Some(m) if m.path.starts_with('[') && &*m.path != "[heap]" && &*m.path != "[stack]" => {
                let name = m.path.clone();
                int.named_frame(em, &name)
            }
            found => {
                if found.is_none() && !had_maps && maps.get(pid).is_none() {
                    self.stats.unmapped_frames += 1;
                }
                int.virtual_frame(em, pid, addr)
            }
        }
    }
}

/// The GNU build id of a file `pid` maps, empty when it has none or cannot be read.
pub fn read_build_id(pid: u32, path: &str) -> Vec<u8> {
    let file = openable_path(pid, path);
    match blazesym::helper::read_elf_build_id(&file) {
        Ok(Some(id)) => id.to_vec(),
        _ => Vec::new(),
    }
}
