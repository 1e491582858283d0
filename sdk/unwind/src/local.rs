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
//! per-address rules, [`crate::walk`]) and its own reference to the module list, checked
//! against the list's generation (one atomic load), so a repeated call site costs a cache probe
//! and one or two stack reads per frame, and no lock.

use std::cell::RefCell;
use std::ops::Deref;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};

use framehop::x86_64::UnwinderX86_64;
use framehop::Unwinder;

use crate::memo::{Memo, Tracer, NOT_REUSED};
use crate::regs::Registers;
use crate::walk::{self, follows_call, Caches, Code, Cut, End, Reuse, Stack, Walk};

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

static MODULES: RwLock<Option<Arc<Modules>>> = RwLock::new(None);
/// The generation of the list in [`MODULES`] (0 before the first), stored after it.
static GENERATION: AtomicU64 = AtomicU64::new(0);

/// A thread's walk state: the module list it last used and its caches.
#[derive(Default)]
struct Thread {
    modules: Option<Arc<Modules>>,
    caches: Caches,
    /// The previous walk of [`walk_reusing`].
    memo: Memo,
}

thread_local! {
    static THREAD: RefCell<Option<Box<Thread>>> = const { RefCell::new(None) };
}

/// The live part of the calling thread's stack: `[lo, hi)`.
struct Live {
    lo: u64,
    /// `hi - 8 - lo`: a word may be read at `lo ..= lo + span`.
    span: u64,
}

impl Stack for Live {
    #[inline(always)]
    fn word(&self, addr: u64) -> Option<u64> {
        if addr.wrapping_sub(self.lo) > self.span || addr % 8 != 0 {
            return None;
        }
        // SAFETY: `[addr, addr + 8)` lies inside `[lo, hi)`, the live part of the calling thread's
        // stack (at or above the stack pointer of a frame that is still active), so it is mapped
        // and readable; the read is aligned.
        Some(unsafe { std::ptr::read_volatile(addr as *const u64) })
    }
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
    walk_skipping_with_sp(regs, lo, hi, out, &mut [], skip)
}

/// [`walk_skipping`] that also writes each written frame's stack pointer: `sp_out[i]` for the
/// frame in `out[i]` (as far as `sp_out` goes; the frame spans up to the next one's).
pub fn walk_skipping_with_sp(
    regs: Registers,
    lo: u64,
    hi: u64,
    out: &mut [u64],
    sp_out: &mut [u64],
    skip: impl Fn(u64) -> bool + Copy,
) -> (Walk, Option<Registers>) {
    let (w, first, _) = walk_twice(regs, lo, hi, (out, sp_out), skip, false);
    (w, first)
}

/// [`walk_skipping_with_sp`] that keeps this walk for the calling thread's next one and takes
/// the frames of its previous one where they still hold ([`crate::memo`]: every stack word
/// those frames' steps read is read again and compared, so the frames are the ones a walk
/// would find). Also returns how many frames were taken from the previous walk.
pub fn walk_reusing(
    regs: Registers,
    lo: u64,
    hi: u64,
    out: &mut [u64],
    sp_out: &mut [u64],
    skip: impl Fn(u64) -> bool + Copy,
) -> (Walk, Option<Registers>, usize) {
    walk_twice(regs, lo, hi, (out, sp_out), skip, true)
}

/// Walks; walks again when the walk met an address outside every module and the module list
/// changed since it was read.
fn walk_twice(
    regs: Registers,
    lo: u64,
    hi: u64,
    (out, sp_out): (&mut [u64], &mut [u64]),
    skip: impl Fn(u64) -> bool + Copy,
    reuse: bool,
) -> (Walk, Option<Registers>, usize) {
    let lo = lo.max(regs.sp);
    let start = walk::Start { regs, ip_is_return: false, cache_first: true, skip };
    let (r, used) = walk_once(start, lo, hi, out, sp_out, reuse);
    // An address outside every module: a library loaded since the list was built? (Another
    // thread may have rebuilt the list since this walk read it: walk again then too.)
    let r = if r.0.saw_unknown && (refresh() || generation() != used) {
        walk_once(start, lo, hi, out, sp_out, reuse).0
    } else {
        r
    };
    let (r, reused) = r;
    crate::stats().walk(r.walk.len, r.fast_steps, r.lookups, r.walk.end);
    (r.walk, r.first, reused)
}

/// A walk's [`Reuse`] of the thread's [`Memo`], checking recorded words in `stack`.
struct WithMemo<'a, S: Stack> {
    tracer: Tracer<'a>,
    stack: &'a S,
}

impl<S: Stack> Reuse for WithMemo<'_, S> {
    const ON: bool = true;
    #[inline(always)]
    fn probe(&self) -> u64 {
        self.tracer.probe()
    }
    #[inline(always)]
    fn frame(&mut self, ip: u64, sp: u64, bp: u64, rule: Option<crate::rules::Rule>) {
        self.tracer.frame(ip, sp, bp, rule.unwrap_or(NOT_REUSED));
    }
    fn reuse(
        &mut self,
        n: usize,
        r: Registers,
        out: &mut [u64],
        sp_out: &mut [u64],
    ) -> Option<(usize, End, u64)> {
        self.tracer.reuse(self.stack, n, r, out, sp_out)
    }
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

/// Walks once with the module list as it is now (reusing the thread's previous walk with
/// `reuse`); returns the run, the frames reused, and the list's generation.
fn walk_once(
    start: walk::Start<impl Fn(u64) -> bool>,
    lo: u64,
    hi: u64,
    out: &mut [u64],
    sp_out: &mut [u64],
    reuse: bool,
) -> ((walk::Run, usize), u64) {
    let cut = |c| {
        let run = walk::Run {
            walk: Walk { len: 0, end: End::Cut(c), stack_bytes: 0 },
            first: None,
            saw_unknown: false,
            fast_steps: 0,
            lookups: 0,
        };
        ((run, 0), 0)
    };
    let mut generation = GENERATION.load(Ordering::Acquire);
    if generation == 0 {
        refresh();
        generation = GENERATION.load(Ordering::Acquire);
    }
    let stack = match hi.checked_sub(8).and_then(|last| last.checked_sub(lo)) {
        Some(span) => Live { lo, span },
        None => Live { lo: u64::MAX, span: 0 },
    };
    // (A walk from a thread-local destructor, after this thread's state is gone, is cut.)
    THREAD
        .try_with(|t| {
            let Ok(mut t) = t.try_borrow_mut() else { return cut(Cut::Error) };
            let Thread { modules, caches, memo } = &mut **t.get_or_insert_with(Box::default);
            if modules.as_ref().is_none_or(|m| m.generation != generation) {
                *modules = MODULES.read().ok().and_then(|g| g.clone());
            }
            let Some(m) = modules.as_deref() else { return cut(Cut::Error) };
            caches.sync(m.generation);
            let code = InProcess(m);
            if !reuse {
                return (
                    (walk::run(&m.unwinder, caches, start, &stack, &code, out, sp_out), 0),
                    m.generation,
                );
            }
            let base = start.regs.sp;
            let mut re = WithMemo { tracer: memo.begin(m.generation), stack: &stack };
            let r = walk::run_with(&m.unwinder, caches, start, &stack, &code, (out, sp_out), &mut re);
            let reused = re.tracer.reused;
            let kept = re.tracer.end(r.walk.end, base + r.walk.stack_bytes, !r.saw_unknown);
            memo.finish(kept);
            ((r, reused), m.generation)
        })
        .unwrap_or_else(|_| cut(Cut::Error))
}

/// The generation of the module list now (0 before the first).
fn generation() -> u64 {
    GENERATION.load(Ordering::Acquire)
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
    *g = Some(Arc::new(Modules { unwinder, ranges, adds, subs, generation }));
    GENERATION.store(generation, Ordering::Release);
    crate::stats().refresh();
    true
}

/// Code ranges of the modules known now (for tests and diagnostics).
pub fn known_ranges() -> Vec<(u64, u64)> {
    if generation() == 0 {
        refresh();
    }
    MODULES.read().ok().and_then(|g| g.as_ref().map(|m| m.ranges.clone())).unwrap_or_default()
}
