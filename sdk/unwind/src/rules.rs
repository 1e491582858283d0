//! The fast path: a per-address cache of the unwind rule each return address needs, in a form
//! the walk runs in a few instructions, without going through framehop.
//!
//! The rule of an address comes from the binary's CFI, through framehop itself: the first time
//! a return address is met, framehop steps it on two synthetic frames (registers and stacks
//! whose every word is distinct, [`classify`]) and the rule is read off what it did. On x86_64
//! every rule framehop caches has one of two shapes, both recognised exactly:
//!
//! - the frame-pointer rule (functions built with frame pointers): `sp' = bp + 16`,
//!   `bp' = [bp]`, return address `[bp + 8]`;
//! - a stack-pointer rule (functions built without them): `sp' = sp + cfa`, return address
//!   `[sp' - 8]`, and `bp` either untouched or restored from `[sp + k]`.
//!
//! So the fast path takes exactly the step the CFI prescribes, never a frame-pointer guess over
//! code that does not keep one (where a plain frame-pointer walk silently skips the caller of a
//! function that leaves `rbp` alone). A rule of any other shape (a CFA computed from another
//! register, a DWARF expression) stays with framehop ([`Class::Cfi`]), as does the first frame
//! of a walk (its rule may depend on where in a prologue or epilogue the instruction pointer
//! is) and any address outside every known module (the walk checks those steps).
//!
//! The cache is direct-mapped (one slot per address hash, a later address takes the slot) and
//! tied to one module list: [`Classes::sync`] empties it when the list changes.

use std::ops::Deref;

use framehop::x86_64::{CacheX86_64, UnwindRegsX86_64, UnwinderX86_64};
use framehop::{Error, FrameAddress, Unwinder};

/// Slots in a [`Classes`] cache (a power of two): 2048 distinct return addresses cover the
/// call sites of a program's hot launch paths; 16 bytes a slot (32 KiB per cache).
const SLOTS: usize = 2048;

/// How the frame of a return address is stepped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Class {
    /// The frame-pointer rule: `sp' = bp + 16`, `bp' = [bp]`, return address `[bp + 8]`.
    FramePointer,
    /// `sp' = sp + cfa`, return address `[sp' - 8]`; `bp' = [sp + bp]` when `bp` is not
    /// [`Class::BP_KEPT`], else `bp` is left as it is.
    StackPointer { cfa: u32, bp: u32 },
    /// The CFI marks the end of the stack (the thread's root).
    Root,
    /// Any other rule: framehop runs it (from its own rule cache).
    Cfi,
}

impl Class {
    /// [`Class::StackPointer`]'s `bp` when the rule leaves `bp` as it is.
    pub const BP_KEPT: u32 = u32::MAX;
}

/// Per-address classes of the return addresses seen, for one module list.
pub(crate) struct Classes {
    /// The module list the entries belong to.
    generation: u64,
    /// `(address, class)`, address 0 = empty slot.
    slots: Box<[(u64, Class)]>,
}

impl Default for Classes {
    fn default() -> Self {
        Self { generation: 0, slots: vec![(0, Class::Cfi); SLOTS].into_boxed_slice() }
    }
}

impl Classes {
    /// Empties the cache when the module list is not the one its entries were made for.
    #[inline]
    pub fn sync(&mut self, generation: u64) {
        if self.generation != generation {
            self.slots.fill((0, Class::Cfi));
            self.generation = generation;
        }
    }

    #[inline]
    fn slot(ra: u64) -> usize {
        (ra.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - SLOTS.trailing_zeros())) as usize
    }

    /// The class of return address `ra`, if cached.
    #[inline]
    pub fn get(&self, ra: u64) -> Option<Class> {
        let (a, c) = self.slots[Self::slot(ra)];
        (a == ra).then_some(c)
    }

    /// Caches the class of return address `ra` (in a known module).
    #[inline]
    pub fn put(&mut self, ra: u64, class: Class) {
        self.slots[Self::slot(ra)] = (ra, class);
    }
}

/// Every synthetic stack word is its address mixed with this, so all words are distinct and
/// non-zero.
const PROBE_MIX: u64 = 0x5a5a_0000_0000_0008;
/// Synthetic `(sp, bp)` pairs, far apart: no rule that moves `sp` from `sp` can land where the
/// frame-pointer rule lands, and two probes tell a rule from a coincidence.
const PROBES: [(u64, u64); 2] = [(0x1000_0000_0000, 0x4000_0000_0000), (0x2000_0000_0100, 0x3000_0000_0800)];
/// Largest `cfa` recognised (a frame of 1 MiB).
const MAX_CFA: u64 = 1 << 20;

/// The class of the rule framehop applies at return address `ra` (a return address of a known
/// module), read off two steps on synthetic frames. Also fills framehop's rule cache.
pub(crate) fn classify<D: Deref<Target = [u8]>>(
    unwinder: &UnwinderX86_64<D>,
    cache: &mut CacheX86_64,
    ra: u64,
) -> Class {
    let Some(at) = FrameAddress::from_return_address(ra) else { return Class::Cfi };
    let mut classes = PROBES.iter().map(|&(sp, bp)| {
        let mut regs = UnwindRegsX86_64::new(ra, sp, bp);
        let mut read = |addr: u64| -> Result<u64, ()> { Ok(addr ^ PROBE_MIX) };
        let step = unwinder.unwind_frame(at, &mut regs, cache, &mut read);
        shape(step, sp, bp, &regs)
    });
    match (classes.next(), classes.next()) {
        (Some(a), Some(b)) if a == b => a,
        _ => Class::Cfi,
    }
}

/// The rule a synthetic step from `(sp, bp)` followed, recognised from its result.
fn shape(step: Result<Option<u64>, Error>, sp: u64, bp: u64, after: &UnwindRegsX86_64) -> Class {
    let word = |addr: u64| addr ^ PROBE_MIX;
    let ra = match step {
        Ok(None) => return Class::Root,
        Ok(Some(ra)) => ra,
        Err(_) => return Class::Cfi,
    };
    let (new_sp, new_bp) = (after.sp(), after.bp());
    if new_sp == bp + 16 && new_bp == word(bp) && ra == word(bp + 8) {
        return Class::FramePointer;
    }
    let cfa = new_sp.wrapping_sub(sp);
    if !(8..=MAX_CFA).contains(&cfa) || cfa % 8 != 0 || ra != word(new_sp - 8) {
        return Class::Cfi;
    }
    let saved = word(new_bp).wrapping_sub(sp);
    let bp_rule = if new_bp == bp {
        Class::BP_KEPT
    } else if saved < cfa - 8 && saved % 8 == 0 {
        saved as u32
    } else {
        return Class::Cfi;
    };
    Class::StackPointer { cfa: cfa as u32, bp: bp_rule }
}

/// One step by a cached rule, as framehop takes it: `Ok(None)` at the root (a zero return
/// address, or a zero `bp` for the frame-pointer rule), an error where a frame-pointer chain
/// goes backwards or a read leaves the readable stack.
#[inline]
pub(crate) fn step(
    class: Class,
    regs: &mut UnwindRegsX86_64,
    read: &mut impl FnMut(u64) -> Result<u64, ()>,
) -> Result<Option<u64>, Error> {
    let (sp, bp) = (regs.sp(), regs.bp());
    let (new_sp, new_bp) = match class {
        Class::FramePointer => {
            if bp == 0 {
                return Ok(None);
            }
            let new_sp = bp.checked_add(16).ok_or(Error::IntegerOverflow)?;
            if new_sp <= sp {
                return Err(Error::FramepointerUnwindingMovedBackwards);
            }
            (new_sp, read(bp).map_err(|_| Error::CouldNotReadStack(bp))?)
        }
        Class::StackPointer { cfa, bp: at } => {
            let new_sp = sp.checked_add(cfa as u64).ok_or(Error::IntegerOverflow)?;
            let new_bp = if at == Class::BP_KEPT {
                bp
            } else {
                let a = sp + at as u64;
                read(a).map_err(|_| Error::CouldNotReadStack(a))?
            };
            (new_sp, new_bp)
        }
        Class::Root => return Ok(None),
        // Never asked: the walk hands these to framehop.
        Class::Cfi => return Err(Error::DidNotAdvance),
    };
    let ra = read(new_sp - 8).map_err(|_| Error::CouldNotReadStack(new_sp - 8))?;
    if ra == 0 {
        return Ok(None);
    }
    regs.set_ip(ra);
    regs.set_sp(new_sp);
    regs.set_bp(new_bp);
    Ok(Some(ra))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cache_answers_what_was_put_and_forgets_on_a_new_module_list() {
        let mut c = Classes::default();
        c.sync(7);
        assert_eq!(c.get(0x40_1234), None);
        c.put(0x40_1234, Class::FramePointer);
        c.put(0x40_5678, Class::StackPointer { cfa: 24, bp: Class::BP_KEPT });
        assert_eq!(c.get(0x40_1234), Some(Class::FramePointer));
        assert_eq!(c.get(0x40_5678), Some(Class::StackPointer { cfa: 24, bp: Class::BP_KEPT }));
        c.sync(7);
        assert_eq!(c.get(0x40_1234), Some(Class::FramePointer), "same list: kept");
        c.sync(8);
        assert_eq!(c.get(0x40_1234), None, "another list: emptied");
    }

    #[test]
    fn steps_follow_frame_pointer_and_stack_pointer_rules_and_stop_at_the_root() {
        // [saved bp, return address] pairs at word 2 and word 6 of a fake stack at 0x1000.
        let words = [0u64, 0, 0x1030, 0x40_1000, 0, 0, 0, 0x40_2000];
        let mut read = |a: u64| words.get(((a - 0x1000) / 8) as usize).copied().ok_or(());
        let mut r = UnwindRegsX86_64::new(0x40_0000, 0x1000, 0x1010);
        assert_eq!(step(Class::FramePointer, &mut r, &mut read), Ok(Some(0x40_1000)));
        assert_eq!((r.sp(), r.bp()), (0x1020, 0x1030));
        assert_eq!(step(Class::FramePointer, &mut r, &mut read), Ok(Some(0x40_2000)));
        assert_eq!(r.bp(), 0);
        assert_eq!(step(Class::FramePointer, &mut r, &mut read), Ok(None), "bp 0: the root");
        let mut r = UnwindRegsX86_64::new(0x40_0000, 0x1020, 0x1010);
        assert_eq!(
            step(Class::FramePointer, &mut r, &mut read),
            Err(Error::FramepointerUnwindingMovedBackwards)
        );

        // A frameless function: 16 bytes of locals, rbp pushed below the return address.
        // Words at 0x1000: [local, saved rbp 0x1230, ra 0x40_3000, ...].
        let words = [7u64, 0x1230, 0x40_3000, 0];
        let mut read = |a: u64| words.get(((a - 0x1000) / 8) as usize).copied().ok_or(());
        let mut r = UnwindRegsX86_64::new(0x40_0000, 0x1000, 0x99);
        let class = Class::StackPointer { cfa: 24, bp: 8 };
        assert_eq!(step(class, &mut r, &mut read), Ok(Some(0x40_3000)));
        assert_eq!((r.sp(), r.bp()), (0x1018, 0x1230));
        let mut r = UnwindRegsX86_64::new(0x40_0000, 0x1000, 0x99);
        let kept = Class::StackPointer { cfa: 24, bp: Class::BP_KEPT };
        assert_eq!(step(kept, &mut r, &mut read), Ok(Some(0x40_3000)));
        assert_eq!(r.bp(), 0x99, "bp kept");
        let mut r = UnwindRegsX86_64::new(0x40_0000, 0x1008, 0x99);
        assert_eq!(step(kept, &mut r, &mut read), Ok(None), "a zero return address: the root");
    }

    #[test]
    fn synthetic_steps_are_recognised_by_their_shape() {
        let (sp, bp) = PROBES[0];
        let w = |a: u64| a ^ PROBE_MIX;
        let regs = |sp, bp| UnwindRegsX86_64::new(1, sp, bp);
        let fp = shape(Ok(Some(w(bp + 8))), sp, bp, &regs(bp + 16, w(bp)));
        assert_eq!(fp, Class::FramePointer);
        let kept = shape(Ok(Some(w(sp + 40))), sp, bp, &regs(sp + 48, bp));
        assert_eq!(kept, Class::StackPointer { cfa: 48, bp: Class::BP_KEPT });
        let saved = shape(Ok(Some(w(sp + 40))), sp, bp, &regs(sp + 48, w(sp + 32)));
        assert_eq!(saved, Class::StackPointer { cfa: 48, bp: 32 });
        assert_eq!(shape(Ok(None), sp, bp, &regs(sp, bp)), Class::Root);
        assert_eq!(shape(Ok(Some(5)), sp, bp, &regs(sp + 48, bp)), Class::Cfi, "ra not at the CFA");
        assert_eq!(shape(Ok(Some(w(sp + 40))), sp, bp, &regs(sp + 48, 12345)), Class::Cfi, "bp from nowhere");
        assert_eq!(shape(Err(Error::IntegerOverflow), sp, bp, &regs(sp, bp)), Class::Cfi);
    }
}
