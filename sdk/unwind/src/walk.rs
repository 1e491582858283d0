//! The walk loop both unwinders share: framehop steps, checked so that a broken walk is cut
//! instead of continued with garbage, with a fast path ([`crate::rules`]): an address whose
//! CFI rule is the frame-pointer rule (a function built with frame pointers) or a stack-pointer
//! rule (built without them) is stepped from a per-address rule cache in a few instructions,
//! on the registers kept in locals; rules of other shapes, and the first frame of a sample,
//! go through framehop (its own per-address cache).

use std::ops::Deref;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};

use framehop::x86_64::{CacheX86_64, UnwindRegsX86_64, UnwinderX86_64};
use framehop::{Error, FrameAddress, Unwinder};

use crate::regs::Registers;
use crate::rules::{classify, key, rule_spill_on, step, Classes, Rule, Spill, Stepped};

/// Why a walk was cut before the thread's root.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Cut {
    /// The next step needed memory outside the stack given (the copy was too short, or a rule
    /// pointed outside the thread's stack).
    Unreadable = 0,
    /// Two consecutive frames outside every known module (code without unwind information whose
    /// frame pointer led nowhere), or the first frame of a step that could not be trusted.
    OutsideModules = 1,
    /// A return address that cannot be code (below the first page) or a step that did not advance.
    BadAddress = 2,
    /// The unwind information could not be applied (overflow, a rule framehop cannot run).
    Error = 3,
    /// This architecture has no unwinder.
    Unsupported = 4,
}

impl Cut {
    /// Number of causes.
    pub const COUNT: usize = 5;
    /// Every cause, in index order.
    pub const ALL: [Cut; Cut::COUNT] =
        [Cut::Unreadable, Cut::OutsideModules, Cut::BadAddress, Cut::Error, Cut::Unsupported];

    /// A short name for reports (`unreadable stack`, ...).
    pub fn name(self) -> &'static str {
        match self {
            Cut::Unreadable => "stack not readable",
            Cut::OutsideModules => "outside every module",
            Cut::BadAddress => "bad return address",
            Cut::Error => "unwind rule failed",
            Cut::Unsupported => "architecture not supported",
        }
    }
}

/// How a walk ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum End {
    /// The thread's root was reached (CFI marks the return address undefined, or it is zero).
    Root,
    /// The output was full.
    MaxDepth,
    /// The walk broke; the frames written are the ones before the break.
    Cut(Cut),
}

/// A finished walk: `len` frames written, and how it ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Walk {
    /// Frames written to the output.
    pub len: usize,
    /// How it ended.
    pub end: End,
    /// Bytes of stack above the start's stack pointer the walk read (the size of stack copy it
    /// needed); 0 when it read none.
    pub stack_bytes: u64,
}

/// What the walk asks of the module list.
pub(crate) trait Code {
    /// True when `addr` lies in a module the unwinder has (code whose rules it can find, or
    /// known code without them, such as JIT code).
    fn known(&self, addr: u64) -> bool;
    /// True when a return address found through a frame pointer of code without unwind
    /// information is believable (it is in known code and follows a call instruction).
    fn believable(&self, ra: u64) -> bool;
}

/// The stack a walk reads.
pub(crate) trait Stack {
    /// The 8-byte word at `addr`, or `None` outside the readable stack.
    fn word(&self, addr: u64) -> Option<u64>;
}

/// Where a walk starts and which leading frames it leaves out.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Start<S> {
    /// The registers of the first frame.
    pub regs: Registers,
    /// `regs.ip` is a return address (a caller frame found by an earlier walk): its rule is
    /// looked up at `ip - 1`.
    pub ip_is_return: bool,
    /// The first frame's rule is cached under its instruction pointer (in-process walks, which
    /// start at the same few places); otherwise framehop steps it.
    pub cache_first: bool,
    /// Leading frames for which this is true are not written (the profiler's own frames).
    pub skip: S,
}

/// A walk's result: the walk, the registers of its first written frame, and whether it met an
/// address outside every known module.
pub(crate) struct Run {
    pub walk: Walk,
    pub first: Option<Registers>,
    pub saw_unknown: bool,
    /// Steps taken by the fast path (a cached rule), not by framehop.
    pub fast_steps: u64,
    /// Return addresses whose rule was not in the per-address cache (found through framehop's
    /// CFI lookup and cached).
    pub lookups: u64,
}

static FAST_PATH: AtomicBool = AtomicBool::new(true);

/// Turns the fast path ([`crate::rules`]: cached frame-pointer and stack-pointer rules) on (the
/// default) or off, process-wide: off, every frame is stepped by framehop. For benchmarks and tests that compare the two; the frames are the same.
pub fn set_fast_path(on: bool) {
    FAST_PATH.store(on, Relaxed);
}

/// The caches a walk uses: framehop's rule cache, the fast path's per-address classes and the
/// spill behind them.
#[derive(Default)]
pub(crate) struct Caches {
    pub framehop: CacheX86_64,
    pub classes: Classes,
    pub spill: Spill,
}

impl Caches {
    /// Empties what was made for another module list.
    #[inline]
    pub fn sync(&mut self, generation: u64) {
        self.classes.sync(generation);
        self.spill.sync(generation);
    }
}

/// Runs a walk over `stack`; `sp_out[i]`, where it exists, receives the stack pointer of the
/// frame written to `out[i]` (its frame's lowest address: the frame spans up to the next
/// frame's stack pointer).
pub(crate) fn run<D: Deref<Target = [u8]>>(
    unwinder: &UnwinderX86_64<D>,
    caches: &mut Caches,
    start: Start<impl Fn(u64) -> bool>,
    stack: &impl Stack,
    code: &impl Code,
    out: &mut [u64],
    sp_out: &mut [u64],
) -> Run {
    run_with(unwinder, caches, start, stack, code, (out, sp_out), &mut NoReuse)
}

/// What a walk asks of a previous walk it may reuse ([`crate::memo`]): [`NoReuse`] compiles
/// to nothing.
pub(crate) trait Reuse {
    /// Whether there is anything to ask.
    const ON: bool;
    /// The `sp` at or above which [`Reuse::reuse`] is asked before a frame is written.
    fn probe(&self) -> u64;
    /// A frame written: its registers and the rule of its step (`None`: not a cached rule).
    fn frame(&mut self, ip: u64, sp: u64, bp: u64, rule: Option<Rule>);
    /// The frames from registers `r` on, when the previous walk's still hold: (frames written
    /// in all, end, one past the highest word read).
    fn reuse(
        &mut self,
        n: usize,
        r: Registers,
        out: &mut [u64],
        sp_out: &mut [u64],
    ) -> Option<(usize, End, u64)>;
}

/// A walk that reuses nothing.
pub(crate) struct NoReuse;

impl Reuse for NoReuse {
    const ON: bool = false;
    #[inline(always)]
    fn probe(&self) -> u64 {
        u64::MAX
    }
    #[inline(always)]
    fn frame(&mut self, _: u64, _: u64, _: u64, _: Option<Rule>) {}
    #[inline(always)]
    fn reuse(&mut self, _: usize, _: Registers, _: &mut [u64], _: &mut [u64]) -> Option<(usize, End, u64)> {
        None
    }
}

/// [`run`] that records its frames in `re` and takes the previous walk's where they still hold.
pub(crate) fn run_with<D: Deref<Target = [u8]>, R: Reuse>(
    unwinder: &UnwinderX86_64<D>,
    caches: &mut Caches,
    start: Start<impl Fn(u64) -> bool>,
    stack: &impl Stack,
    code: &impl Code,
    (out, sp_out): (&mut [u64], &mut [u64]),
    re: &mut R,
) -> Run {
    let mut run = Run {
        walk: Walk { len: 0, end: End::MaxDepth, stack_bytes: 0 },
        first: None,
        saw_unknown: false,
        fast_steps: 0,
        lookups: 0,
    };
    // One past the highest stack word read, for the walk's `stack_bytes`.
    let base = start.regs.sp;
    let mut top = base;
    let (len, end) = steps(unwinder, caches, start, stack, code, (out, sp_out), &mut run, &mut top, re);
    run.walk = Walk { len, end, stack_bytes: top - base };
    run
}

#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn steps<D: Deref<Target = [u8]>, R: Reuse>(
    unwinder: &UnwinderX86_64<D>,
    caches: &mut Caches,
    start: Start<impl Fn(u64) -> bool>,
    stack: &impl Stack,
    code: &impl Code,
    (out, sp_out): (&mut [u64], &mut [u64]),
    run: &mut Run,
    top: &mut u64,
    re: &mut R,
) -> (usize, End) {
    let Registers { mut ip, mut sp, mut bp } = start.regs;
    if out.is_empty() {
        return (0, End::MaxDepth);
    }
    let mut is_return = start.ip_is_return;
    if is_return && ip == 0 {
        return (0, End::Cut(Cut::BadAddress));
    }
    let fast = FAST_PATH.load(Relaxed);
    let mut n = 0;
    let mut skipping = true;
    loop {
        if fast && is_return && !skipping {
            // The frames whose rule is cached, in a loop of their own.
            let mut at = Frame { n, ip, sp, bp, top: *top, fast_steps: run.fast_steps };
            let end = if sp_out.is_empty() {
                cached_run::<false, R>(&caches.classes, stack, out, &mut [], &mut at, re)
            } else {
                cached_run::<true, R>(&caches.classes, stack, out, sp_out, &mut at, re)
            };
            (n, ip, sp, bp, *top, run.fast_steps) = (at.n, at.ip, at.sp, at.bp, at.top, at.fast_steps);
            if let Some(end) = end {
                return (n, end);
            }
        }
        if skipping && !(start.skip)(ip) {
            skipping = false;
            run.first = Some(Registers { ip, sp, bp });
        }
        if !skipping {
            if R::ON && sp >= re.probe() {
                if let Some((len, end, reached)) = re.reuse(n, Registers { ip, sp, bp }, out, sp_out) {
                    run.fast_steps += (len - n) as u64;
                    *top = (*top).max(reached);
                    return (len, end);
                }
            }
            out[n] = ip;
            if let Some(s) = sp_out.get_mut(n) {
                *s = sp;
            }
            n += 1;
            if n == out.len() {
                re.frame(ip, sp, bp, None);
                return (n, End::MaxDepth);
            }
        }
        // The frame's rule: from the per-address cache (the fast path), else found and cached
        // (cold); `None` for code outside every module.
        let cacheable = fast && (is_return || start.cache_first);
        let k = key(ip, is_return);
        let rule = if !cacheable {
            code.known(ip).then_some(Rule::of(crate::rules::Class::Cfi))
        } else {
            match caches.classes.get(k) {
                Some(r) => Some(r),
                None => {
                    let (rule, looked_up) = lookup(unwinder, caches, ip, is_return, code);
                    run.lookups += u64::from(looked_up);
                    rule
                }
            }
        };
        if R::ON && !skipping {
            let cached = rule.filter(|&r| r != Rule::of(crate::rules::Class::Cfi));
            re.frame(ip, sp, bp, cached);
        }
        let stepped = match rule {
            Some(r) if r != Rule::of(crate::rules::Class::Cfi) => {
                run.fast_steps += 1;
                match step(r, sp, bp, stack) {
                    // Every word the step read lies below the stack pointer it gave.
                    Ok(Some((ra, new_sp, new_bp))) => {
                        *top = (*top).max(new_sp);
                        Ok((ra != 0).then_some((ra, new_sp, new_bp)))
                    }
                    other => other,
                }
            }
            _ => framehop_step(unwinder, &mut caches.framehop, ip, is_return, sp, bp, stack, top),
        };
        let (ra, new_sp, new_bp) = match stepped {
            Ok(Some(next)) => next,
            Ok(None) => return (n, End::Root),
            Err(c) => return (n, End::Cut(c)),
        };
        if ra < 0x1000 {
            return (n, End::Cut(Cut::BadAddress));
        }
        // A step out of code outside every module used the frame pointer: trust it only when
        // it lands right after a call instruction in known code.
        if rule.is_none() {
            run.saw_unknown = true;
            if !code.believable(ra) {
                return (n, End::Cut(Cut::OutsideModules));
            }
        }
        (ip, sp, bp, is_return) = (ra, new_sp, new_bp, true);
    }
}

/// Where a walk is: frames written, the next frame's registers (its `ip` a return address), the
/// stack read so far, the fast steps taken.
struct Frame {
    n: usize,
    ip: u64,
    sp: u64,
    bp: u64,
    top: u64,
    fast_steps: u64,
}

/// Writes and steps frames while their rules are cached (the walk's hot loop: a cache probe,
/// one or two stack reads and a few checks a frame, everything in registers). Returns how the
/// walk ended, or `None` at the first frame whose rule is not cached (not written: the walk
/// writes it and takes the step itself). With `SP`, each frame's stack pointer goes to `sp_out`
/// (as far as it goes).
#[inline(never)]
fn cached_run<const SP: bool, R: Reuse>(
    classes: &Classes,
    stack: &impl Stack,
    out: &mut [u64],
    sp_out: &mut [u64],
    at: &mut Frame,
    re: &mut R,
) -> Option<End> {
    let Frame { mut n, mut ip, mut sp, mut bp, mut top, fast_steps } = *at;
    let first = n;
    let end = loop {
        // A frame the previous walk may have had: the caller asks it.
        if R::ON && sp >= re.probe() {
            break None;
        }
        let Some(rule) = classes.get(ip) else { break None };
        if rule == Rule::of(crate::rules::Class::Cfi) {
            break None;
        }
        let Some(slot) = out.get_mut(n) else { break Some(End::MaxDepth) };
        *slot = ip;
        if SP {
            if let Some(s) = sp_out.get_mut(n) {
                *s = sp;
            }
        }
        re.frame(ip, sp, bp, Some(rule));
        n += 1;
        if n == out.len() {
            break Some(End::MaxDepth);
        }
        match step(rule, sp, bp, stack) {
            Ok(Some((ra, new_sp, new_bp))) if ra >= 0x1000 => (ip, sp, bp) = (ra, new_sp, new_bp),
            Ok(Some((0, new_sp, _))) => {
                // A zero return address (read just below `new_sp`): the root.
                sp = new_sp;
                break Some(End::Root);
            }
            Ok(Some(_)) => break Some(End::Cut(Cut::BadAddress)),
            Ok(None) => break Some(End::Root),
            Err(c) => break Some(End::Cut(c)),
        }
    };
    // Every word a step read lies below the stack pointer it gave: the highest read is below
    // the last one (the stack a walk to the root needed, `Walk::stack_bytes`).
    top = top.max(sp);
    // Every frame written here was stepped by its cached rule.
    *at = Frame { n, ip, sp, bp, top, fast_steps: fast_steps + (n - first) as u64 };
    end
}

/// The rule of a frame the cache does not hold: from the spill, or found in the CFI (through
/// framehop) and kept in both; `None` outside every known module. Also whether the CFI was
/// looked up (counted by the caller: a counter passed in by reference here kept the walk's
/// state in memory and cost the criterion budget case 50 ns).
#[cold]
#[inline(never)]
fn lookup<D: Deref<Target = [u8]>>(
    unwinder: &UnwinderX86_64<D>,
    caches: &mut Caches,
    ip: u64,
    is_return: bool,
    code: &impl Code,
) -> (Option<Rule>, bool) {
    if !code.known(ip) {
        return (None, false);
    }
    let k = key(ip, is_return);
    let spill = rule_spill_on();
    if let Some(rule) = caches.spill.get(k).filter(|_| spill) {
        caches.classes.put_rule(k, rule);
        return (Some(rule), false);
    }
    let class = classify(unwinder, &mut caches.framehop, ip, is_return);
    caches.classes.put(k, class);
    if spill {
        caches.spill.put(k, Rule::of(class));
    }
    (Some(Rule::of(class)), true)
}

/// One step by framehop (a rule of another shape, code outside every module, the fast path off).
#[allow(clippy::too_many_arguments)]
#[inline]
fn framehop_step<D: Deref<Target = [u8]>>(
    unwinder: &UnwinderX86_64<D>,
    cache: &mut CacheX86_64,
    ip: u64,
    is_return: bool,
    sp: u64,
    bp: u64,
    stack: &impl Stack,
    top: &mut u64,
) -> Stepped {
    let at = if is_return {
        FrameAddress::from_return_address(ip).ok_or(Cut::BadAddress)?
    } else {
        FrameAddress::from_instruction_pointer(ip)
    };
    let mut regs = UnwindRegsX86_64::new(ip, sp, bp);
    let mut read = |a: u64| {
        let w = stack.word(a).ok_or(())?;
        *top = (*top).max(a.saturating_add(8));
        Ok(w)
    };
    match unwinder.unwind_frame(at, &mut regs, cache, &mut read) {
        Ok(Some(ra)) => Ok(Some((ra, regs.sp(), regs.bp()))),
        Ok(None) => Ok(None),
        Err(e) => Err(cut_of(e)),
    }
}

/// True when the bytes before `ra` end with a call instruction (`call rel32`, or `call r/m64`
/// in its 2-, 3-, 6- and 7-byte forms); `bytes(addr, n)` reads code.
pub(crate) fn follows_call(ra: u64, bytes: impl Fn(u64, usize) -> Option<[u8; 7]>) -> bool {
    let Some(b) = bytes(ra - 7, 7) else { return false };
    // b[i] is the byte at ra - 7 + i.
    if b[2] == 0xe8 {
        return true; // e8 rel32
    }
    // ff /2 with a ModRM byte (reg field 2), optionally REX-prefixed.
    let modrm_is_call = |m: u8| (m >> 3) & 7 == 2;
    (b[5] == 0xff && modrm_is_call(b[6]))
        || (b[4] == 0xff && modrm_is_call(b[5]))
        || (b[1] == 0xff && modrm_is_call(b[2]))
        || (b[0] == 0xff && modrm_is_call(b[1]))
}

fn cut_of(e: Error) -> Cut {
    match e {
        Error::CouldNotReadStack(_) => Cut::Unreadable,
        Error::ReturnAddressIsNull | Error::DidNotAdvance => Cut::BadAddress,
        Error::FramepointerUnwindingMovedBackwards => Cut::OutsideModules,
        _ => Cut::Error,
    }
}

#[cfg(test)]
mod tests {
    use super::follows_call;

    fn code(bytes: [u8; 7]) -> impl Fn(u64, usize) -> Option<[u8; 7]> {
        move |_, _| Some(bytes)
    }

    #[test]
    fn recognises_call_instructions_before_a_return_address() {
        assert!(follows_call(0x1007, code([0x90, 0x90, 0xe8, 1, 2, 3, 4])), "call rel32");
        assert!(follows_call(0x1007, code([0x90, 0x90, 0x90, 0x90, 0x90, 0xff, 0xd0])), "call rax");
        assert!(follows_call(0x1007, code([0x90, 0x90, 0x90, 0x90, 0xff, 0x55, 0x08])), "call [rbp+8]");
        assert!(!follows_call(0x1007, code([0x90; 7])), "no call");
        assert!(!follows_call(0x1007, |_, _| None), "unreadable code");
    }
}
