//! Turning captured stacks into interned frames and stacks: the user stack copied by BPF is
//! unwound here with [`xpuprof_unwind::remote`] (the binaries' CFI, frame pointers where the code
//! keeps them), then user addresses are normalised to (module, file offset) with the process's
//! maps; the host symbolises them later.

use std::path::PathBuf;
use std::sync::Arc;

use xpuprof_sdk::model::{FrameId, ModuleId, StackId};
use xpuprof_sdk::Emitter;
use xpuprof_unwind::remote::{Mapping, Remote};
use xpuprof_unwind::{Cut, End, Registers, Walk};

use crate::decode::{StackEvent, START_CALLER};
use crate::procmaps::MapsCache;
use crate::python::Interpreters;
use xpuprof_toolbox::normalise::{build_id, openable_path};
use xpuprof_toolbox::Interner;

/// Most user frames of one stack (a 64 KiB copy holds about as many frames of the deepest
/// stacks seen: CPython 3.9/3.10 spend three to four C frames per Python call).
const MAX_USER_FRAMES: usize = 512;
/// The loss cause of stacks that had more user frames than [`MAX_USER_FRAMES`].
pub const MAX_DEPTH_CAUSE: &str = "user stacks cut short: more than 512 frames";

/// Counts of frames that could not be normalised and walks that ended early.
#[derive(Debug, Default, Clone, Copy)]
pub struct StackStats {
    /// User addresses in no mapping the process was seen with (it exited before its maps were
    /// read after it mapped the file).
    pub unmapped_frames: u64,
    /// Events whose user stack BPF could not copy.
    pub missing_user_stacks: u64,
    /// User stacks cut before the thread's root, by cause ([`Cut`] as index).
    pub cut: [u64; Cut::COUNT],
    /// User stacks that filled the frame limit.
    pub max_depth: u64,
    /// User stacks unwound to the thread's root, by the stack bytes the walk needed:
    /// at most 4, 8, 16, 32, 64 KiB ([`DEPTH_BUCKETS`]).
    pub root_bytes: [u64; DEPTH_BUCKETS.len()],
    /// The most stack bytes a walk to the root needed.
    pub deepest: u64,
}

/// Upper bounds of [`StackStats::root_bytes`]' buckets: the copy sizes `ustack_copy_bytes` offers.
pub const DEPTH_BUCKETS: [u64; 5] = [4 << 10, 8 << 10, 16 << 10, 32 << 10, 64 << 10];

impl StackStats {
    /// A line saying how much of the stack copy the walks that reached the root needed, so the
    /// copy size can be chosen by measurement; `None` when no walk reached a root.
    pub fn depth_report(&self, copy: u32) -> Option<String> {
        let n: u64 = self.root_bytes.iter().sum();
        if n == 0 {
            return None;
        }
        let parts: Vec<String> = DEPTH_BUCKETS
            .iter()
            .zip(self.root_bytes)
            .map(|(b, c)| format!("<= {} KiB {:.1}%", b >> 10, 100.0 * c as f64 / n as f64))
            .collect();
        Some(format!(
            "user stacks unwound to their root: {n}; stack bytes they needed: {} (deepest {:.1} KiB, copy {} KiB)",
            parts.join(", "),
            self.deepest as f64 / 1024.0,
            copy >> 10
        ))
    }
}

/// Whether an unwound user stack lies wholly in known mappings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unwound {
    /// Every frame is in a mapping of the process's maps snapshot.
    Complete,
    /// A frame is in no mapping the snapshot has, or the walk stopped at code outside every one
    /// of them: a library mapped after the snapshot, or code no file backs (JIT).
    Unmapped,
}

/// Builds stacks, reusing one frame buffer.
#[derive(Debug, Default)]
pub struct StackBuilder {
    frames: Vec<FrameId>,
    addrs: Vec<u64>,
    /// The stack pointer of each frame in `addrs` (before the Python merge).
    sps: Vec<u64>,
    unwinder: Remote,
    /// How the last walk ([`Self::unwind`]) ended (`None`: no user stack).
    walk: Option<Walk>,
    /// The module of the last user frame, by its path (consecutive frames share modules).
    last_module: Option<(Arc<str>, ModuleId)>,
    /// What could not be normalised so far.
    pub stats: StackStats,
}

impl StackBuilder {
    /// Unwinds the user stack of `ev` (nothing interned, nothing counted yet: [`Self::intern`]
    /// does both). Returns [`Unwound::Complete`] when every user frame lies in a mapping the
    /// process's maps snapshot knows and the walk did not stop for lack of one.
    pub fn unwind(&mut self, ev: &StackEvent, ustack: &[u8], maps: &mut MapsCache) -> Unwound {
        self.user_addresses(ev, ustack, maps);
        let cut_unmapped = self.walk.is_some_and(|w| w.end == End::Cut(Cut::OutsideModules));
        // A miss reads the maps again when they are older than the event (a library mapped
        // since); what still misses is code no snapshot of this process maps.
        if cut_unmapped || !maps.covers(ev.pid, ev.time, &self.addrs) {
            Unwound::Unmapped
        } else {
            Unwound::Complete
        }
    }

    /// The interned stack of the event [`Self::unwind`] just walked (its walk counted): kernel
    /// frames (innermost) first, then user frames, with the eval-loop frames replaced by the
    /// Python frames they run where `python` knows the process's interpreter.
    pub fn intern(
        &mut self,
        ev: &StackEvent,
        maps: &mut MapsCache,
        mut python: Option<&mut Interpreters>,
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
        if let Some(w) = self.walk {
            self.count_walk(w);
        }
        let caller_start = ev.flags & START_CALLER != 0;
        for (i, a) in self.addrs.iter_mut().enumerate() {
            // Return addresses (every frame but an interrupted leaf): step back into the call
            // instruction so the symboliser names the caller's line, not the next one.
            if i > 0 || caller_start {
                *a = a.saturating_sub(1);
            }
        }
        if let Some(py) = python.as_deref_mut() {
            py.merge_into(ev.pid, &ev.py, &mut self.addrs, &self.sps);
        }
        for i in 0..self.addrs.len() {
            let addr = self.addrs[i];
            let frame = match python.as_deref_mut() {
                Some(py) if xpuprof_python::is_python_frame(addr) => py.named_frame(addr, int, em),
                _ => self.user_frame(ev.pid, ev.time, addr, maps, int, em),
            };
            self.frames.push(frame);
        }
        int.stack(em, &self.frames)
    }

    /// The user frames, unwound from the event's registers through its stack copy.
    fn user_addresses(&mut self, ev: &StackEvent, ustack: &[u8], maps: &mut MapsCache) {
        self.addrs.clear();
        self.sps.clear();
        self.walk = None;
        if ev.user_ip == 0 {
            return;
        }
        // The maps must know the start address (a library mapped since the last read).
        maps.find(ev.pid, ev.time, ev.user_ip);
        self.set_modules(ev.pid, maps);
        let regs = Registers { ip: ev.user_ip, sp: ev.user_sp, bp: ev.user_bp };
        let caller = ev.flags & START_CALLER != 0;
        let (mut out, mut sp) = ([0u64; MAX_USER_FRAMES], [0u64; MAX_USER_FRAMES]);
        let mut walk = |u: &mut Remote| u.walk_with_sp(ev.pid, regs, caller, ustack, &mut out, &mut sp);
        let mut w = walk(&mut self.unwinder);
        if w.end == End::Cut(Cut::OutsideModules) && maps.refresh(ev.pid) {
            // Code mapped since the maps were read: once more with the new maps.
            self.set_modules(ev.pid, maps);
            w = walk(&mut self.unwinder);
        }
        self.addrs.extend_from_slice(&out[..w.len]);
        self.sps.extend_from_slice(&sp[..w.len]);
        self.walk = Some(w);
    }

    /// Counts how the last walk ended.
    fn count_walk(&mut self, w: Walk) {
        match w.end {
            End::Cut(c) => self.stats.cut[c as usize] += 1,
            End::MaxDepth => self.stats.max_depth += 1,
            End::Root => {
                let b =
                    DEPTH_BUCKETS.iter().position(|&b| w.stack_bytes <= b).unwrap_or(DEPTH_BUCKETS.len() - 1);
                self.stats.root_bytes[b] += 1;
                self.stats.deepest = self.stats.deepest.max(w.stack_bytes);
            }
        }
    }

    /// Gives the unwinder `pid`'s current maps when they changed since it last had them.
    fn set_modules(&mut self, pid: u32, maps: &MapsCache) {
        let Some((generation, m)) = maps.get_versioned(pid) else { return };
        if self.unwinder.is_current(pid, generation) {
            return;
        }
        let open: Vec<(PathBuf, &crate::procmaps::Mapping)> = m
            .iter()
            .filter(|m| m.exec)
            .map(|m| (if m.is_file() { openable_path(pid, &m.path) } else { PathBuf::new() }, m))
            .collect();
        self.unwinder.set_maps(
            pid,
            generation,
            open.iter().map(|(p, m)| Mapping {
                start: m.start,
                end: m.end,
                offset: m.offset,
                exec: m.exec,
                name: &m.path,
                open: p,
            }),
        );
    }

    /// Forgets what the unwinder holds for `pid` (its events are all handled).
    pub fn forget(&mut self, pid: u32) {
        self.unwinder.forget(pid);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_depth_cause_names_the_limit() {
        assert!(MAX_DEPTH_CAUSE.ends_with(&format!("more than {MAX_USER_FRAMES} frames")));
    }

    #[test]
    fn the_depth_report_gives_the_share_of_root_walks_per_copy_size() {
        let mut s = StackStats::default();
        assert_eq!(s.depth_report(65536), None, "no walk reached a root");
        s.root_bytes = [2, 1, 0, 1, 0];
        s.deepest = 20 << 10;
        let line = s.depth_report(65536).unwrap();
        assert!(line.starts_with("user stacks unwound to their root: 4;"), "{line}");
        assert!(line.contains("<= 4 KiB 50.0%, <= 8 KiB 25.0%, <= 16 KiB 0.0%, <= 32 KiB 25.0%"), "{line}");
        assert!(line.ends_with("(deepest 20.0 KiB, copy 64 KiB)"), "{line}");
    }
}
