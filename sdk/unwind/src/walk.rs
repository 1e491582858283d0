//! The walk loop both unwinders share: framehop steps, checked so that a broken walk is cut
//! instead of continued with garbage, with a fast path ([`crate::rules`]): a return address whose
//! CFI rule is the frame-pointer rule (a function built with frame pointers) or a stack-pointer
//! rule (built without them) is stepped from a per-address rule cache in a few instructions;
//! the first frame and rules of other shapes go through framehop (its own per-address cache).

use std::ops::Deref;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};

use framehop::x86_64::{CacheX86_64, UnwindRegsX86_64, UnwinderX86_64};
use framehop::{Error, FrameAddress, Unwinder};

use crate::regs::Registers;
use crate::rules::{classify, step, Class, Classes};

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

/// Where a walk starts and which leading frames it leaves out.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Start<S> {
    /// The registers of the first frame.
    pub regs: Registers,
    /// `regs.ip` is a return address (a caller frame found by an earlier walk): its rule is
    /// looked up at `ip - 1`.
    pub ip_is_return: bool,
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
}

static FAST_PATH: AtomicBool = AtomicBool::new(true);

/// Turns the fast path ([`crate::rules`]: cached frame-pointer and stack-pointer rules) on (the
/// default) or off, process-wide: off, every frame is stepped by framehop. For benchmarks and tests that compare the two; the frames are the same.
pub fn set_fast_path(on: bool) {
    FAST_PATH.store(on, Relaxed);
}

/// The caches a walk uses: framehop's rule cache and the fast path's per-address classes.
#[derive(Default)]
pub(crate) struct Caches {
    pub framehop: CacheX86_64,
    pub classes: Classes,
}

/// Runs a walk, reading stack words with `read`; `sp_out[i]`, where it exists, receives the
/// stack pointer of the frame written to `out[i]` (its frame's lowest address: the frame spans
/// up to the next frame's stack pointer).
pub(crate) fn run<D: Deref<Target = [u8]>>(
    unwinder: &UnwinderX86_64<D>,
    caches: &mut Caches,
    start: Start<impl Fn(u64) -> bool>,
    read: &mut impl FnMut(u64) -> Result<u64, ()>,
    code: &impl Code,
    out: &mut [u64],
    sp_out: &mut [u64],
) -> Run {
    let mut run = Run {
        walk: Walk { len: 0, end: End::MaxDepth, stack_bytes: 0 },
        first: None,
        saw_unknown: false,
        fast_steps: 0,
    };
    // The highest stack word read, for the walk's `stack_bytes`.
    let base = start.regs.sp;
    let mut top = base;
    let mut read = |addr: u64| {
        let r = read(addr);
        if r.is_ok() {
            top = top.max(addr.saturating_add(8));
        }
        r
    };
    run.walk = steps(unwinder, caches, start, &mut read, code, (out, sp_out), &mut run);
    run.walk.stack_bytes = top - base;
    run
}

fn steps<D: Deref<Target = [u8]>>(
    unwinder: &UnwinderX86_64<D>,
    caches: &mut Caches,
    start: Start<impl Fn(u64) -> bool>,
    read: &mut impl FnMut(u64) -> Result<u64, ()>,
    code: &impl Code,
    (out, sp_out): (&mut [u64], &mut [u64]),
    run: &mut Run,
) -> Walk {
    let regs = start.regs;
    if out.is_empty() {
        return Walk { len: 0, end: End::MaxDepth, stack_bytes: 0 };
    }
    let mut n = 0;
    let mut skipping = true;
    let mut r = UnwindRegsX86_64::new(regs.ip, regs.sp, regs.bp);
    let mut at = if start.ip_is_return {
        match FrameAddress::from_return_address(regs.ip) {
            Some(a) => a,
            None => return Walk { len: 0, end: End::Cut(Cut::BadAddress), stack_bytes: 0 },
        }
    } else {
        FrameAddress::from_instruction_pointer(regs.ip)
    };
    let mut ip = regs.ip;
    let fast = FAST_PATH.load(Relaxed);
    loop {
        if skipping && !(start.skip)(ip) {
            skipping = false;
            run.first = Some(Registers { ip, sp: r.sp(), bp: r.bp() });
        }
        if !skipping {
            out[n] = ip;
            if let Some(sp) = sp_out.get_mut(n) {
                *sp = r.sp();
            }
            n += 1;
        }
        if n == out.len() {
            return Walk { len: n, end: End::MaxDepth, stack_bytes: 0 };
        }
        // The frame's rule: from the per-address classes for a return address in known code
        // (the fast path), from framehop for the first frame and for code outside every module.
        let class = if fast && at.is_return_address() {
            match caches.classes.get(ip) {
                Some(c) => Some(c),
                None if code.known(ip) => {
                    let c = classify(unwinder, &mut caches.framehop, ip);
                    caches.classes.put(ip, c);
                    Some(c)
                }
                None => None,
            }
        } else {
            code.known(ip).then_some(Class::Cfi)
        };
        let unknown = class.is_none();
        run.saw_unknown |= unknown;
        let stepped = match class {
            Some(c @ (Class::FramePointer | Class::StackPointer { .. } | Class::Root)) => {
                run.fast_steps += 1;
                step(c, &mut r, read)
            }
            _ => unwinder.unwind_frame(at, &mut r, &mut caches.framehop, read),
        };
        let ra = match stepped {
            Ok(None) => return Walk { len: n, end: End::Root, stack_bytes: 0 },
            Ok(Some(ra)) => ra,
            Err(e) => return Walk { len: n, end: End::Cut(cut_of(e)), stack_bytes: 0 },
        };
        if ra < 0x1000 {
            return Walk { len: n, end: End::Cut(Cut::BadAddress), stack_bytes: 0 };
        }
        // A step out of code outside every module used the frame pointer: trust it only when
        // it lands right after a call instruction in known code.
        if unknown && !code.believable(ra) {
            return Walk { len: n, end: End::Cut(Cut::OutsideModules), stack_bytes: 0 };
        }
        ip = ra;
        at = match FrameAddress::from_return_address(ra) {
            Some(a) => a,
            None => return Walk { len: n, end: End::Cut(Cut::BadAddress), stack_bytes: 0 },
        };
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
