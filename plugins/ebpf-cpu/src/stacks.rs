//! Turning captured addresses into interned frames and stacks: user addresses are normalised to
//! (module, file offset) with the process's maps; the host symbolises them later.

use std::sync::Arc;

use xpuprof_sdk::model::{FrameId, ModuleId, StackId};
use xpuprof_sdk::Emitter;

use crate::callsite::CallSites;
use crate::decode::{StackEvent, EV_LAUNCH, EV_TRAMPOLINE, SP_WORDS};
use crate::procmaps::MapsCache;
use xpuprof_toolbox::normalise::{build_id, openable_path};
use xpuprof_toolbox::Interner;

/// Counts of frames that could not be normalised.
#[derive(Debug, Default, Clone, Copy)]
pub struct StackStats {
    /// User addresses in no mapping the process was seen with (it exited before its maps were
    /// read after it mapped the file).
    pub unmapped_frames: u64,
    /// Events whose user stack the kernel could not capture.
    pub missing_user_stacks: u64,
}

/// Builds stacks, reusing one frame buffer.
#[derive(Debug, Default)]
pub struct StackBuilder {
    frames: Vec<FrameId>,
    addrs: Vec<u64>,
    calls: CallSites,
    /// The module of the last user frame, by its path (consecutive frames share modules).
    last_module: Option<(Arc<str>, ModuleId)>,
    /// What could not be normalised so far.
    pub stats: StackStats,
}

impl StackBuilder {
    /// The interned stack of `ev`: kernel frames (innermost) first, then user frames.
    pub fn build(
        &mut self,
        ev: &StackEvent,
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
        self.user_addresses(ev, maps);
        for i in 0..self.addrs.len() {
            // Non-leaf frames hold return addresses: step back into the call instruction so the
            // symboliser names the caller's line, not the next one.
            // (A zero word in a broken frame-pointer chain stays zero.)
            let addr = if i == 0 { self.addrs[i] } else { self.addrs[i].saturating_sub(1) };
            let frame = self.user_frame(ev.pid, ev.time, addr, maps, int, em);
            self.frames.push(frame);
        }
        int.stack(em, &self.frames)
    }

    /// The user frames: the frame-pointer chain, with the return addresses of frameless callers
    /// (found in the words between the stack pointer and the frame pointer) after the leaf.
    fn user_addresses(&mut self, ev: &StackEvent, maps: &mut MapsCache) {
        self.addrs.clear();
        let user = cut_self_loop(ev.user_frames(), |a| maps.find(ev.pid, ev.time, a).is_some());
        self.addrs.extend_from_slice(user);
        if user.is_empty() {
            return;
        }
        let (sp, bp) = (ev.user_sp, ev.user_bp);
        // At a uprobe (a function's first instruction) the direct caller's return address is
        // exactly the word at the stack pointer: take it alone. (The in-target agents call the
        // trampoline with the frame pointer set to the application's frame, so the words above
        // belong to the agent and the vendor library, not to the stack the agent reports.)
        // Elsewhere a frame pointer above the stack pointer bounds the leaf's frame; anything
        // else is not a frame pointer and the whole copied window is searched.
        let words = if matches!(ev.kind, EV_LAUNCH | EV_TRAMPOLINE) {
            1
        } else if bp > sp {
            ((bp - sp) / 8).min(SP_WORDS as u64) as usize
        } else {
            SP_WORDS
        };
        let next = user.get(1).copied();
        let mut at = 1;
        for &w in &ev.sp_words[..words] {
            if Some(w) == next {
                break;
            }
            if w < 0x1000 {
                continue; // small integers and null: not code addresses
            }
            if let Some(has_frame) = self.return_address(ev.pid, ev.time, w, maps) {
                self.addrs.insert(at, w);
                at += 1;
                if has_frame {
                    break;
                }
            }
        }
    }

    /// `Some(owner sets up a frame pointer)` when `addr` is a return address, else `None`.
    fn return_address(&mut self, pid: u32, time: u64, addr: u64, maps: &mut MapsCache) -> Option<bool> {
        let m = maps.find(pid, time, addr)?;
        if !m.exec || !m.is_file() {
            return None;
        }
        let (path, offset) = (m.path.clone(), m.file_offset(addr));
        let open = openable_path(pid, &path);
        if !self.calls.follows_call(&path, || open.clone(), offset) {
            return None;
        }
        Some(self.calls.in_function_with_frame(&path, &open, offset))
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
        match maps.find(pid, time, addr) {
            Some(m) if m.is_file() => {
                let offset = m.file_offset(addr);
                let module = match &self.last_module {
                    Some((path, id)) if Arc::ptr_eq(path, &m.path) => *id,
                    _ => {
                        let path = m.path.clone();
                        let id = int.module(em, &path, || build_id(&openable_path(pid, &path)));
                        self.last_module = Some((path, id));
                        id
                    }
                };
                int.file_frame(em, module, offset)
            }
            Some(m) if m.path.starts_with('[') && &*m.path != "[heap]" && &*m.path != "[stack]" => {
                let name = m.path.clone();
                int.named_frame(em, &name)
            }
            found => {
                // An address outside every mapping of a live process is a broken frame-pointer
                // chain (shown as an unknown frame); of an exited one, a mapping never seen.
                if found.is_none() && maps.is_gone(pid) {
                    self.stats.unmapped_frames += 1;
                }
                int.virtual_frame(em, pid, addr)
            }
        }
    }
}

/// `frames` up to a frame pointer that points at itself: the kernel's walk then repeats one
/// address outside every mapping until its depth limit. Recursion repeats addresses too, but
/// inside code (`mapped` is true), so it is kept.
fn cut_self_loop(frames: &[u64], mut mapped: impl FnMut(u64) -> bool) -> &[u64] {
    let end = frames.windows(2).position(|w| w[0] == w[1] && !mapped(w[0])).map_or(frames.len(), |i| i + 1);
    &frames[..end]
}

#[cfg(test)]
mod tests {
    use super::cut_self_loop;

    #[test]
    fn a_self_referencing_frame_pointer_is_cut_but_recursion_kept() {
        let mapped = |a: u64| a < 100;
        assert_eq!(cut_self_loop(&[1, 500, 500, 500, 500], mapped), &[1, 500]);
        assert_eq!(cut_self_loop(&[1, 7, 7, 7, 2], mapped), &[1, 7, 7, 7, 2]);
        assert_eq!(cut_self_loop(&[], mapped), &[] as &[u64]);
    }
}
