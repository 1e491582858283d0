//! Unwinding stacks copied out of other processes (the eBPF source's samples): the user
//! registers and a bounded slice of the stack from the stack pointer up, unwound with the
//! unwind tables of the files the process maps.
//!
//! The caller tells [`Remote`] a process's executable mappings ([`Remote::set_maps`], again when
//! they change); each file is opened once (by the name it has in the maps) and shared by every
//! process that maps it. Anonymous executable memory (JIT code) and the vDSO count as code.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use framehop::x86_64::UnwinderX86_64;
use framehop::{ExplicitModuleSectionInfo, Module, Unwinder};

use crate::image::{own_vdso, Bytes, Image};
use crate::local::contains;
use crate::regs::Registers;
use crate::walk::{self, Caches, Code, Cut, End, Walk};

/// One mapping of a process, as `/proc/PID/maps` shows it.
#[derive(Debug, Clone, Copy)]
pub struct Mapping<'a> {
    /// First address.
    pub start: u64,
    /// One past the last address.
    pub end: u64,
    /// File offset of `start`.
    pub offset: u64,
    /// Executable.
    pub exec: bool,
    /// The name in the maps (`/usr/lib/libc.so.6`, `[vdso]`, empty for anonymous memory): the key
    /// files are cached under.
    pub name: &'a str,
    /// Where the file can be opened from here (`/proc/PID/root/...` for another mount namespace).
    pub open: &'a Path,
}

struct Process {
    generation: u64,
    unwinder: UnwinderX86_64<Bytes>,
    /// Executable ranges, sorted.
    code: Vec<(u64, u64)>,
    /// The rule caches of this process's module list (created at its first walk).
    caches: Option<Box<Caches>>,
}

/// The unwinder for copied stacks of many processes.
#[derive(Default)]
pub struct Remote {
    images: HashMap<Arc<str>, Option<Arc<Image>>>,
    procs: HashMap<u32, Process>,
}

impl std::fmt::Debug for Remote {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Remote")
            .field("files", &self.images.len())
            .field("processes", &self.procs.len())
            .finish()
    }
}

impl Remote {
    /// True when `pid`'s modules were set with this `generation` already.
    pub fn is_current(&self, pid: u32, generation: u64) -> bool {
        self.procs.get(&pid).is_some_and(|p| p.generation == generation)
    }

    /// Sets `pid`'s modules from its mappings (non-executable ones are ignored). `generation`
    /// identifies this version of the maps for [`Remote::is_current`].
    pub fn set_maps<'a>(&mut self, pid: u32, generation: u64, maps: impl IntoIterator<Item = Mapping<'a>>) {
        let mut unwinder = UnwinderX86_64::new();
        let mut code = Vec::new();
        for m in maps.into_iter().filter(|m| m.exec && m.end > m.start) {
            code.push((m.start, m.end));
            if m.name.is_empty() || (m.name.starts_with('[') && m.name != "[vdso]") {
                continue; // anonymous code: no unwind tables (frame pointers only)
            }
            let Some(image) = self.image(m.name, m.open) else { continue };
            let Some(bias) = image.bias(m.start, m.offset) else { continue };
            unwinder.add_module(module(m.name, m.start..m.end, bias, &image));
        }
        code.sort_unstable();
        self.procs.insert(pid, Process { generation, unwinder, code, caches: None });
    }

    /// Forgets `pid` (it exited and its samples are done).
    pub fn forget(&mut self, pid: u32) {
        self.procs.remove(&pid);
    }

    /// Unwinds a stack of `pid` from `regs`, with `stack` the bytes copied from `regs.sp` up.
    /// Writes the start ip then return addresses into `out`, innermost first.
    pub fn walk(&mut self, pid: u32, regs: Registers, stack: &[u8], out: &mut [u64]) -> Walk {
        self.walk_with_sp(pid, regs, false, stack, out, &mut [])
    }

    /// Like [`Remote::walk`] for registers whose `ip` is a return address: the caller-side
    /// start an in-process walk reported ([`crate::local::walk_skipping`]).
    pub fn walk_caller(&mut self, pid: u32, regs: Registers, stack: &[u8], out: &mut [u64]) -> Walk {
        self.walk_with_sp(pid, regs, true, stack, out, &mut [])
    }

    /// [`Remote::walk`] (or [`Remote::walk_caller`] when `caller`) that also writes each
    /// frame's stack pointer: `sp_out[i]` for the frame in `out[i]` (as far as `sp_out` goes).
    /// Frame `i` occupies the stack from `sp_out[i]` up to `sp_out[i + 1]` (its canonical frame
    /// address), so a local variable's address tells which frame owns it.
    pub fn walk_with_sp(
        &mut self,
        pid: u32,
        regs: Registers,
        caller: bool,
        stack: &[u8],
        out: &mut [u64],
        sp_out: &mut [u64],
    ) -> Walk {
        let Some(p) = self.procs.get_mut(&pid) else {
            let w = Walk { len: 0, end: End::Cut(Cut::OutsideModules), stack_bytes: 0 };
            crate::stats().walk(0, 0, 0, w.end);
            return w;
        };
        let caches = p.caches.get_or_insert_with(Box::default);
        let start = walk::Start { regs, ip_is_return: caller, cache_first: false, skip: |_| false };
        let copy = Copy { base: regs.sp, bytes: stack };
        let r = walk::run(&p.unwinder, caches, start, &copy, &Copied(&p.code), out, sp_out);
        crate::stats().walk(r.walk.len, r.fast_steps, r.lookups, r.walk.end);
        r.walk
    }

    fn image(&mut self, name: &str, open: &Path) -> Option<Arc<Image>> {
        if let Some(i) = self.images.get(name) {
            return i.clone();
        }
        // `open` may name the file through a process that is exiting (`/proc/PID/root/...`):
        // fall back to the name itself before concluding the file cannot be read.
        let image = if name == "[vdso]" {
            own_vdso()
        } else {
            Image::open(open)
                .or_else(|| name.starts_with('/').then(|| Image::open(Path::new(name))).flatten())
        }
        .map(Arc::new);
        self.images.insert(Arc::from(name), image.clone());
        image
    }
}

/// A copy of a stack from its stack pointer `base` up.
struct Copy<'a> {
    base: u64,
    bytes: &'a [u8],
}

impl walk::Stack for Copy<'_> {
    #[inline]
    fn word(&self, addr: u64) -> Option<u64> {
        let off = usize::try_from(addr.checked_sub(self.base)?).ok()?;
        let word = self.bytes.get(off..off.checked_add(8)?)?;
        Some(u64::from_le_bytes(word.try_into().ok()?))
    }
}

/// A copied process's code ranges as the walk sees them. Code bytes are not at hand, so a
/// frame-pointer step out of code without unwind tables is believed when it lands in code.
struct Copied<'a>(&'a [(u64, u64)]);

impl Code for Copied<'_> {
    fn known(&self, a: u64) -> bool {
        contains(self.0, a)
    }

    fn believable(&self, ra: u64) -> bool {
        contains(self.0, ra)
    }
}

fn module(name: &str, avma: std::ops::Range<u64>, bias: u64, image: &Image) -> Module<Bytes> {
    let info = ExplicitModuleSectionInfo {
        base_svma: 0,
        text_svma: image.text.clone(),
        eh_frame_svma: image.eh_frame.as_ref().map(|(r, _)| r.clone()),
        eh_frame: image.eh_frame.as_ref().map(|(_, b)| b.clone()),
        eh_frame_hdr_svma: image.eh_frame_hdr.as_ref().map(|(r, _)| r.clone()),
        eh_frame_hdr: image.eh_frame_hdr.as_ref().map(|(_, b)| b.clone()),
        debug_frame: image.debug_frame.clone(),
        ..Default::default()
    };
    Module::new(name.to_owned(), avma, bias, info)
}
