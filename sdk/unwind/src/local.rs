//! In-process unwinding: the calling thread's own stack, with the unwind tables of the modules
//! this process has loaded, read where the loader mapped them.
//!
//! Modules come from `dl_iterate_phdr`: for each loaded object its `PT_GNU_EH_FRAME` segment
//! (`.eh_frame_hdr`, the binary-search index of `.eh_frame`) and the `.eh_frame` it points to,
//! as slices of the mapped image (nothing is read from files or copied). The list is built at
//! the first walk and refreshed when a walk meets an address outside every known module and the
//! loader's load/unload counters (`dlpi_adds`/`dlpi_subs`) say something changed.
//!
//! Each thread keeps its own caches (framehop's unwind rules per address, and the fast path's
//! per-address rule classes, [`crate::walk`]), so a repeated call site costs a cache probe per
//! frame, plus two stack reads where the rule is the frame-pointer rule, and no lock but the
//! module list's read lock.

use std::cell::RefCell;
use std::ops::Deref;
use std::sync::RwLock;

use framehop::x86_64::UnwinderX86_64;
use framehop::Unwinder;

use crate::regs::Registers;
use crate::walk::{self, follows_call, Caches, Code, Cut, End, Walk};

mod phdr;

/// A section of a loaded module, in place in this process's memory.
#[derive(Debug, Clone, Copy, Default)]
pub struct Mem(&'static [u8]);

impl Deref for Mem {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        self.0
    }
}

/// The modules known to the in-process unwinder.
struct Modules {
    unwinder: UnwinderX86_64<Mem>,
    /// Code ranges, sorted, for the "known module" check.
    ranges: Vec<(u64, u64)>,
    /// `dlpi_adds` / `dlpi_subs` when the list was built.
    adds: u64,
    subs: u64,
    /// Which build of the list this is (the threads' per-address classes belong to one).
    generation: u64,
}

static MODULES: RwLock<Option<Modules>> = RwLock::new(None);

thread_local! {
    static CACHE: RefCell<Option<Box<Caches>>> = const { RefCell::new(None) };
}

/// Walks the calling thread's stack from `regs` (taken with [`Registers::here`] in a frame that
/// is still live), reading only `[lo, hi)` (`lo` is raised to `regs.sp`). Writes the start ip
/// then return addresses into `out`, innermost first.
pub fn walk(regs: Registers, lo: u64, hi: u64, out: &mut [u64]) -> Walk {
    walk_skipping(regs, lo, hi, out, |_| false).0
}

/// Like [`walk`], but the leading frames for which `skip` is true (the profiler's own code: the
/// agent's callback, the vendor's tracing library) are not written. Also returns the registers
/// of the first frame written, the caller-side start of the stack (its `ip` is a return
/// address): a copy of the stack unwound from them with [`crate::remote::Remote::walk_caller`]
/// gives the same frames.
pub fn walk_skipping(
    regs: Registers,
    lo: u64,
    hi: u64,
    out: &mut [u64],
    skip: impl Fn(u64) -> bool + Copy,
) -> (Walk, Option<Registers>) {
    let lo = lo.max(regs.sp);
    let start = walk::Start { regs, ip_is_return: false, skip };
    let (r, used) = walk_once(start, lo, hi, out);
    // An address outside every module: a library loaded since the list was built? (Another
    // thread may have rebuilt the list since this walk read it: walk again then too.)
    let r = if r.saw_unknown && (refresh() || generation() != used) {
        walk_once(start, lo, hi, out).0
    } else {
        r
    };
    crate::stats().walk(r.walk.len, r.fast_steps, r.walk.end);
    (r.walk, r.first)
}
/// The in-process module list as the walk sees it.
struct InProcess<'a>(&'a Modules);

impl Code for InProcess<'_> {
    fn known(&self, a: u64) -> bool {
        contains(&self.0.ranges, a)
    }

    fn believable(&self, ra: u64) -> bool {
        self.known(ra)
            && follows_call(ra, |at, _| {
                // SAFETY: `ra` lies in a known module's executable segment, mapped readable, and
                // the 7 bytes before it are in the same segment (a return address is never the
                // first byte of code).
                (contains(&self.0.ranges, at))
                    .then(|| unsafe { std::ptr::read_unaligned(at as *const [u8; 7]) })
            })
    }
}

/// Walks once with the module list as it is now; returns the run and the list's generation.
fn walk_once(
    start: walk::Start<impl Fn(u64) -> bool>,
    lo: u64,
    hi: u64,
    out: &mut [u64],
) -> (walk::Run, u64) {
    let cut = |c| {
        let run = walk::Run {
            walk: Walk { len: 0, end: End::Cut(c), stack_bytes: 0 },
            first: None,
            saw_unknown: false,
            fast_steps: 0,
        };
        (run, 0)
    };
    if MODULES.read().map(|m| m.is_none()).unwrap_or(true) {
        refresh();
    }
    let Ok(guard) = MODULES.read() else { return cut(Cut::Error) };
    let Some(m) = guard.as_ref() else { return cut(Cut::Error) };
    let mut read = |addr: u64| -> Result<u64, ()> {
        if addr < lo || addr % 8 != 0 || addr.checked_add(8).is_none_or(|e| e > hi) {
            return Err(());
        }
        // SAFETY: `[addr, addr + 8)` lies inside `[lo, hi)`, the live part of the calling thread's
        // stack (at or above the stack pointer of a frame that is still active), so it is mapped
        // and readable; the read is aligned.
        Ok(unsafe { std::ptr::read_volatile(addr as *const u64) })
    };
    CACHE.with(|c| {
        let mut c = c.borrow_mut();
        let caches = c.get_or_insert_with(Box::default);
        caches.classes.sync(m.generation);
        (walk::run(&m.unwinder, caches, start, &mut read, &InProcess(m), out, &mut []), m.generation)
    })
}

/// The generation of the module list now (0 before the first).
fn generation() -> u64 {
    MODULES.read().ok().and_then(|g| g.as_ref().map(|m| m.generation)).unwrap_or(0)
}

/// True when `a` lies in one of the sorted, disjoint `ranges`.
pub(crate) fn contains(ranges: &[(u64, u64)], a: u64) -> bool {
    let i = ranges.partition_point(|&(s, _)| s <= a);
    i > 0 && a < ranges[i - 1].1
}

/// Rebuilds the module list when the loader's counters changed since the last build (or when
/// there is none). Returns true when it changed.
pub fn refresh() -> bool {
    let (adds, subs) = phdr::counters();
    if let Ok(g) = MODULES.read() {
        if g.as_ref().is_some_and(|m| m.adds == adds && m.subs == subs) {
            return false;
        }
    }
    let Ok(mut g) = MODULES.write() else { return false };
    let found = phdr::modules();
    let mut unwinder = UnwinderX86_64::new();
    let mut ranges = Vec::with_capacity(found.len());
    for f in found {
        ranges.push((f.code.start, f.code.end));
        unwinder.add_module(f.into_module());
    }
    ranges.sort_unstable();
    let generation = g.as_ref().map_or(1, |m| m.generation + 1);
    *g = Some(Modules { unwinder, ranges, adds, subs, generation });
    crate::stats().refresh();
    true
}

/// Code ranges of the modules known now (for tests and diagnostics).
pub fn known_ranges() -> Vec<(u64, u64)> {
    if MODULES.read().map(|m| m.is_none()).unwrap_or(true) {
        refresh();
    }
    MODULES.read().ok().and_then(|g| g.as_ref().map(|m| m.ranges.clone())).unwrap_or_default()
}
