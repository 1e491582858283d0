//! The fast path: a per-address cache of the unwind rule each frame's address needs, in a form
//! the walk runs in a few instructions, without going through framehop.
//!
//! The rule of an address comes from the binary's CFI, through framehop itself: the first time
//! an address is met, framehop steps it on two synthetic frames (registers and stacks
//! whose every word is distinct, [`classify`]) and the rule is read off what it did. On x86_64
//! every rule framehop caches has one of two shapes, both recognised exactly:
//!
//! - the frame-pointer rule (functions built with frame pointers): `sp' = bp + 16`,
//!   `bp' = [bp]`, return address `[bp + 8]`;
//! - a stack-pointer rule (functions built without them): `sp' = sp + cfa`, return address
//!   `[sp' - 8]`, and `bp` either untouched or restored from `[sp + k]`;
//! - a frame-pointer-based rule of another layout (hand-written assembly such as libffi's call
//!   trampoline, which `ctypes` and every FFI call go through): `sp' = bp + a`, return address
//!   `[bp + b]`, `bp` untouched or restored from `[bp + c]` (framehop keeps no cached form of
//!   it and runs the DWARF each time).
//!
//! So the fast path takes exactly the step the CFI prescribes, never a frame-pointer guess over
//! code that does not keep one (where a plain frame-pointer walk silently skips the caller of a
//! function that leaves `rbp` alone). A rule of any other shape (a CFA computed from another
//! register, a DWARF expression) stays with framehop ([`Class::Cfi`]), as does any address
//! outside every known module (the walk checks those steps).
//!
//! The first frame of a walk starts at an instruction pointer, not a return address: its rule
//! depends on where in a prologue or epilogue it is, so it is cached under its exact address
//! ([`key`]). In-process walks start in the agent's callback, at the same few addresses every
//! time, and cache it; walks of samples (which start anywhere) step it with framehop.
//!
//! The cache is two-way set-associative (one probe of one cache line, one or two compares) and
//! tied to one module list: [`Classes::sync`] empties it when the list changes. Behind it, a
//! [`Spill`] keeps every rule the thread classified (a hash map), so a program whose launch
//! paths meet more return addresses than the first level holds finds an evicted rule in a hash
//! probe instead of classifying it through framehop again.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::ops::Deref;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};

use framehop::x86_64::{CacheX86_64, UnwindRegsX86_64, UnwinderX86_64};
use framehop::{Error, FrameAddress, Unwinder};

use crate::walk::{Cut, Stack};

/// Sets in a [`Classes`] cache (a power of two), two entries each: 2048 return addresses cover
/// the call sites of a program's hot launch paths; 16 bytes an entry (32 KiB per cache). A
/// program whose launch paths meet more finds the evicted ones in the [`Spill`]; on ResNet-18
/// training and Qwen decoding (H200) a first level 16 times larger was not needed (0.05 and 0.5
/// CFI lookups per walk without the spill) and a size read at run time cost the criterion
/// budget case about 10 ns.
const SETS: usize = 1024;

/// How the frame of a return address is stepped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Class {
    /// The frame-pointer rule: `sp' = bp + 16`, `bp' = [bp]`, return address `[bp + 8]`.
    FramePointer,
    /// `sp' = sp + cfa`, return address `[sp' - 8]`; `bp' = [sp + bp]` when `bp` is not
    /// [`Class::BP_KEPT`], else `bp` is left as it is.
    StackPointer { cfa: u32, bp: u32 },
    /// `sp' = bp + cfa`, return address `[bp + ra]`, `bp' = [bp + bp]` when `bp` is not
    /// [`Class::BP_KEPT`] (offsets below 32 KiB).
    BpBased { cfa: u32, ra: u32, bp: u32 },
    /// The CFI marks the end of the stack (the thread's root).
    Root,
    /// Any other rule: framehop runs it (from its own rule cache).
    Cfi,
}

impl Class {
    /// [`Class::StackPointer`]'s `bp` when the rule leaves `bp` as it is.
    pub const BP_KEPT: u32 = u32::MAX;
}

/// A class as the cache keeps it: `0 < cfa < 2^31` is [`Class::StackPointer`]; `cfa` with the
/// top bit set is [`Class::BpBased`] (`bp` holds the return address's offset in its high half,
/// the saved `bp`'s in its low half, 0xffff when kept); with `cfa == 0`, `bp` says which of
/// the other classes it is ([`Rule::FRAME_POINTER`], [`Rule::ROOT`], [`Rule::CFI`]). 8 bytes,
/// read with the entry's key in one cache line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Rule {
    pub cfa: u32,
    pub bp: u32,
}

impl Rule {
    pub const FRAME_POINTER: u32 = 0;
    pub const ROOT: u32 = 1;
    pub const CFI: u32 = 2;
    const BP_BASED: u32 = 1 << 31;
    const KEPT16: u32 = 0xffff;

    #[inline]
    pub fn of(class: Class) -> Rule {
        match class {
            Class::StackPointer { cfa, bp } => Rule { cfa, bp },
            Class::FramePointer => Rule { cfa: 0, bp: Rule::FRAME_POINTER },
            Class::BpBased { cfa, ra, bp } => {
                let bp = if bp == Class::BP_KEPT { Rule::KEPT16 } else { bp };
                Rule { cfa: Rule::BP_BASED | cfa, bp: ra << 16 | bp }
            }
            Class::Root => Rule { cfa: 0, bp: Rule::ROOT },
            Class::Cfi => Rule { cfa: 0, bp: Rule::CFI },
        }
    }

    #[cfg(test)]
    pub fn class(self) -> Class {
        match (self.cfa, self.bp) {
            (0, Rule::FRAME_POINTER) => Class::FramePointer,
            (0, Rule::ROOT) => Class::Root,
            (0, _) => Class::Cfi,
            (cfa, bp) if cfa & Rule::BP_BASED != 0 => {
                let saved = if bp & 0xffff == Rule::KEPT16 { Class::BP_KEPT } else { bp & 0xffff };
                Class::BpBased { cfa: cfa & !Rule::BP_BASED, ra: bp >> 16, bp: saved }
            }
            (cfa, bp) => Class::StackPointer { cfa, bp },
        }
    }
}

/// The cache key of a frame's address: a return address as it is, the instruction pointer of
/// a walk's first frame (whose rule is looked up at the address itself, not before it) with
/// the top bit set (no user-space address has it).
#[inline]
pub(crate) fn key(addr: u64, is_return: bool) -> u64 {
    if is_return {
        addr
    } else {
        addr | 1 << 63
    }
}

/// One cache entry: a key ([`key`]; 0 = empty) and its rule.
#[derive(Debug, Clone, Copy)]
struct Entry {
    key: u64,
    rule: Rule,
}

const EMPTY: Entry = Entry { key: 0, rule: Rule { cfa: 0, bp: Rule::CFI } };

/// Per-address rules of the frames seen, for one module list: two-way set-associative (a set
/// is 32 bytes, one probe of one cache line; a new key goes to the first way and the one there
/// moves to the second, so two hot addresses of one set do not evict each other).
pub(crate) struct Classes {
    /// The module list the entries belong to.
    generation: u64,
    sets: Box<[[Entry; 2]; SETS]>,
}

impl Default for Classes {
    fn default() -> Self {
        Self { generation: 0, sets: Box::new([[EMPTY; 2]; SETS]) }
    }
}

impl Classes {
    /// Empties the cache when the module list is not the one its entries were made for.
    #[inline]
    pub fn sync(&mut self, generation: u64) {
        if self.generation != generation {
            self.sets.fill([EMPTY; 2]);
            self.generation = generation;
        }
    }

    /// The set of `key`: its low bits as they are (return addresses are spread over them; no
    /// multiplication on the walk's dependency chain, two ways for the pairs that meet). Code
    /// laid out at one stride (functions of one shape one after the other) uses a fraction of
    /// the sets and evicts itself; the [`Spill`] behind keeps those rules. Folding the higher
    /// bits in (a shift and an xor) cost the criterion budget case 3-6% (490 -> 508-522 ns).
    #[inline(always)]
    fn set(&self, key: u64) -> usize {
        key as usize & (SETS - 1)
    }

    /// The rule cached for `key` ([`key`]).
    #[inline(always)]
    pub fn get(&self, key: u64) -> Option<Rule> {
        let set = &self.sets[self.set(key)];
        // A branch, not a select: the walk's next load does not wait for the compare.
        if set[0].key == key {
            return Some(set[0].rule);
        }
        Self::second(set, key)
    }

    #[cold]
    #[inline(never)]
    fn second(set: &[Entry; 2], key: u64) -> Option<Rule> {
        (set[1].key == key).then_some(set[1].rule)
    }

    /// Caches the rule of `key` (an address in a known module).
    #[inline]
    pub fn put(&mut self, key: u64, class: Class) {
        self.put_rule(key, Rule::of(class));
    }

    /// Caches `rule` for `key`.
    #[inline]
    pub fn put_rule(&mut self, key: u64, rule: Rule) {
        let i = self.set(key);
        let set = &mut self.sets[i];
        set[1] = set[0];
        set[0] = Entry { key, rule };
    }
}

/// Whether a rule-cache miss looks in the thread's [`Spill`] before the CFI ([`set_rule_spill`]).
static SPILL: AtomicBool = AtomicBool::new(true);

/// Turns the rule spill on (the default) or off, process-wide; returns whether it was on. Off,
/// every rule-cache miss looks the rule up in the CFI again (the walk before the spill).
pub fn set_rule_spill(on: bool) -> bool {
    SPILL.swap(on, Relaxed)
}

/// Whether rule-cache misses look in the spill first.
#[inline]
pub fn rule_spill_on() -> bool {
    SPILL.load(Relaxed)
}

/// Hashes an address key for [`Spill`]: one multiplication (keys are distinct addresses).
#[derive(Default)]
pub(crate) struct AddrHasher(u64);

impl Hasher for AddrHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
    }
    fn write_u64(&mut self, v: u64) {
        self.0 = v.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

/// Every rule a thread classified, for one module list: the second level behind [`Classes`],
/// which holds 2048 return addresses in a fixed place each, so that a program whose launch paths
/// meet more of them than that (libtorch's dispatcher, operators and cuDNN's internals meet
/// thousands) finds a rule evicted from the first level in a hash probe instead of running
/// framehop over the CFI again (a binary search of the module's `.eh_frame_hdr` and the FDE's
/// CFA program, twice, at each miss). Bounded: emptied past [`Spill::MAX`] rules.
#[derive(Default)]
pub(crate) struct Spill {
    generation: u64,
    rules: HashMap<u64, Rule, BuildHasherDefault<AddrHasher>>,
}

impl Spill {
    const MAX: usize = 1 << 18;

    /// Empties the spill when the module list is not the one its rules were made for.
    #[inline]
    pub fn sync(&mut self, generation: u64) {
        if self.generation != generation {
            self.rules.clear();
            self.generation = generation;
        }
    }

    /// The rule of `key`, when classified before.
    #[inline]
    pub fn get(&self, key: u64) -> Option<Rule> {
        self.rules.get(&key).copied()
    }

    /// Keeps the rule of `key`.
    pub fn put(&mut self, key: u64, rule: Rule) {
        if self.rules.len() >= Self::MAX {
            self.rules.clear();
        }
        self.rules.insert(key, rule);
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

/// The class of the rule framehop applies at `addr` (in a known module): a return address
/// when `is_return`, else the instruction pointer of a walk's first frame. Read off two steps on
/// synthetic frames; also fills framehop's rule cache.
pub(crate) fn classify<D: Deref<Target = [u8]>>(
    unwinder: &UnwinderX86_64<D>,
    cache: &mut CacheX86_64,
    addr: u64,
    is_return: bool,
) -> Class {
    let at = if is_return {
        let Some(at) = FrameAddress::from_return_address(addr) else { return Class::Cfi };
        at
    } else {
        FrameAddress::from_instruction_pointer(addr)
    };
    let mut classes = PROBES.iter().map(|&(sp, bp)| {
        let mut regs = UnwindRegsX86_64::new(addr, sp, bp);
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
    if let Some(c) = bp_based(sp, bp, new_sp, new_bp, ra) {
        return c;
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

/// A step's outcome: the caller's frame (its return address, `sp`, `bp`), or `None` at the
/// thread's root.
pub(crate) type Stepped = Result<Option<(u64, u64, u64)>, Cut>;

/// Largest offset from `bp` a [`Class::BpBased`] rule keeps.
const MAX_BP_OFFSET: u64 = 1 << 15;

/// The frame-pointer-based rule a synthetic step followed, if it was one: `sp'`, the return
/// address and the new `bp` (when not kept) all at fixed offsets from `bp`.
fn bp_based(sp: u64, bp: u64, new_sp: u64, new_bp: u64, ra: u64) -> Option<Class> {
    let word_at = |w: u64| (w ^ PROBE_MIX).wrapping_sub(bp);
    let offset = |o: u64| (o < MAX_BP_OFFSET && o % 8 == 0).then_some(o as u32);
    let cfa = offset(new_sp.wrapping_sub(bp)).filter(|&c| c >= 16)?;
    let ra = offset(word_at(ra)).filter(|&r| r < cfa)?;
    let saved = if new_bp == bp { Class::BP_KEPT } else { offset(word_at(new_bp)).filter(|&b| b < cfa)? };
    // (The probes' `sp` lies far from `bp`: a rule that used `sp` cannot land here.)
    (new_sp.abs_diff(sp) > MAX_CFA).then_some(Class::BpBased { cfa, ra, bp: saved })
}

/// One step from `(sp, bp)` by a cached rule (not [`Rule::CFI`]), as framehop takes it: `None`
/// at the root (the root rule, or a zero `bp` for the frame-pointer rule), a zero return address
/// (also the root: the caller checks) with the `sp'` it was read below; a cut where a
/// frame-pointer chain goes backwards or a read leaves the readable stack. Every word read lies
/// below `sp'`.
#[inline(always)]
pub(crate) fn step(rule: Rule, sp: u64, bp: u64, stack: &impl Stack) -> Stepped {
    let read = |a: u64| stack.word(a).ok_or(Cut::Unreadable);
    let (new_sp, new_bp) = if rule.cfa as i32 > 0 {
        // (A stack pointer this close to the top of the address space wraps to an address the
        // stack cannot hold: the read below fails.)
        let new_sp = sp.wrapping_add(u64::from(rule.cfa));
        let new_bp = if rule.bp == Class::BP_KEPT { bp } else { read(sp.wrapping_add(u64::from(rule.bp)))? };
        (new_sp, new_bp)
    } else if rule.bp == Rule::FRAME_POINTER {
        if bp == 0 {
            return Ok(None);
        }
        let new_sp = bp.checked_add(16).ok_or(Cut::Error)?;
        if new_sp <= sp {
            return Err(Cut::OutsideModules);
        }
        (new_sp, read(bp)?)
    } else if rule.cfa != 0 {
        // Frame-pointer-based, another layout: `sp'`, the return address and `bp` from `bp`.
        let new_sp = bp.wrapping_add(u64::from(rule.cfa & !Rule::BP_BASED));
        if new_sp <= sp {
            return Err(Cut::OutsideModules);
        }
        let ra = read(bp.wrapping_add(u64::from(rule.bp >> 16)))?;
        let saved = rule.bp & 0xffff;
        let new_bp = if saved == Rule::KEPT16 { bp } else { read(bp.wrapping_add(u64::from(saved)))? };
        return Ok(Some((ra, new_sp, new_bp)));
    } else {
        // The root rule (the walk hands Rule::CFI to framehop).
        return Ok(None);
    };
    let ra = read(new_sp.wrapping_sub(8))?;
    Ok(Some((ra, new_sp, new_bp)))
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Words<'a>(u64, &'a [u64]);
    impl Stack for Words<'_> {
        fn word(&self, a: u64) -> Option<u64> {
            self.1.get((a.checked_sub(self.0)? / 8) as usize).copied()
        }
    }

    #[test]
    fn the_cache_answers_what_was_put_and_forgets_on_a_new_module_list() {
        let mut c = Classes::default();
        c.sync(7);
        assert_eq!(c.get(0x40_1234), None);
        c.put(0x40_1234, Class::FramePointer);
        c.put(0x40_5678, Class::StackPointer { cfa: 24, bp: Class::BP_KEPT });
        c.put(key(0x40_1234, false), Class::Root);
        assert_eq!(c.get(0x40_1234).map(Rule::class), Some(Class::FramePointer));
        let sp = Class::StackPointer { cfa: 24, bp: Class::BP_KEPT };
        assert_eq!(c.get(0x40_5678).map(Rule::class), Some(sp));
        assert_eq!(c.get(key(0x40_1234, false)).map(Rule::class), Some(Class::Root), "an ip is its own key");
        c.sync(7);
        assert_eq!(c.get(0x40_1234).map(Rule::class), Some(Class::FramePointer), "same list: kept");
        c.sync(8);
        assert_eq!(c.get(0x40_1234), None, "another list: emptied");
    }

    #[test]
    fn the_spill_keeps_every_rule_until_the_module_list_changes() {
        let mut s = Spill::default();
        s.sync(3);
        let rules: Vec<(u64, Rule)> = (0..5000u64)
            .map(|i| {
                (
                    0x40_0000 + i * 32 + 12,
                    Rule::of(Class::StackPointer { cfa: 8 * (i as u32 % 64 + 1), bp: Class::BP_KEPT }),
                )
            })
            .collect();
        for &(k, r) in &rules {
            s.put(k, r);
        }
        assert!(
            rules.iter().all(|&(k, r)| s.get(k) == Some(r)),
            "more rules than the first level holds, all kept"
        );
        assert_eq!(s.get(0x40_0000), None);
        s.sync(3);
        assert_eq!(s.get(rules[0].0), Some(rules[0].1), "same list: kept");
        s.sync(4);
        assert_eq!(s.get(rules[0].0), None, "another list: emptied");
    }

    #[test]
    fn two_keys_of_one_set_are_both_kept_a_third_evicts_the_older() {
        let mut c = Classes::default();
        let same: Vec<u64> = (0x1000..).filter(|&k| c.set(k) == c.set(0x1000)).take(3).collect();
        c.put(same[0], Class::FramePointer);
        c.put(same[1], Class::Root);
        assert_eq!(c.get(same[0]).map(Rule::class), Some(Class::FramePointer));
        assert_eq!(c.get(same[1]).map(Rule::class), Some(Class::Root));
        c.put(same[2], Class::Cfi);
        assert_eq!(c.get(same[0]), None);
        assert_eq!(c.get(same[2]).map(Rule::class), Some(Class::Cfi));
        for class in [
            Class::FramePointer,
            Class::Root,
            Class::Cfi,
            Class::StackPointer { cfa: 8, bp: 0 },
            Class::BpBased { cfa: 32, ra: 8, bp: 0 },
            Class::BpBased { cfa: 48, ra: 40, bp: Class::BP_KEPT },
        ] {
            assert_eq!(Rule::of(class).class(), class);
        }
    }

    #[test]
    fn steps_follow_frame_pointer_and_stack_pointer_rules_and_stop_at_the_root() {
        let fp = Rule::of(Class::FramePointer);
        // [saved bp, return address] pairs at word 2 and word 6 of a fake stack at 0x1000.
        let words = [0u64, 0, 0x1030, 0x40_1000, 0, 0, 0, 0x40_2000];
        let s = Words(0x1000, &words);
        assert_eq!(step(fp, 0x1000, 0x1010, &s), Ok(Some((0x40_1000, 0x1020, 0x1030))));
        assert_eq!(step(fp, 0x1020, 0x1030, &s), Ok(Some((0x40_2000, 0x1040, 0))));
        assert_eq!(step(fp, 0x1040, 0, &s), Ok(None), "bp 0: the root");
        assert_eq!(step(fp, 0x1020, 0x1010, &s), Err(Cut::OutsideModules), "backwards");
        assert_eq!(step(fp, 0x1000, 0x1100, &s), Err(Cut::Unreadable));

        // A frameless function: 16 bytes of locals, rbp pushed below the return address.
        // Words at 0x1000: [local, saved rbp 0x1230, ra 0x40_3000, ...].
        let words = [7u64, 0x1230, 0x40_3000, 0];
        let s = Words(0x1000, &words);
        let saved = Rule::of(Class::StackPointer { cfa: 24, bp: 8 });
        assert_eq!(step(saved, 0x1000, 0x99, &s), Ok(Some((0x40_3000, 0x1018, 0x1230))));
        let kept = Rule::of(Class::StackPointer { cfa: 24, bp: Class::BP_KEPT });
        assert_eq!(step(kept, 0x1000, 0x99, &s), Ok(Some((0x40_3000, 0x1018, 0x99))), "bp kept");
        assert_eq!(step(kept, 0x1008, 0x99, &s), Ok(Some((0, 0x1020, 0x99))), "a zero return address");
        assert_eq!(step(Rule::of(Class::Root), 0x1000, 0x99, &s), Ok(None));

        // libffi's call trampoline: the caller's frame at bp = 0x1008: [saved bp, ra], CFA bp + 32.
        let ffi = Rule::of(Class::BpBased { cfa: 32, ra: 8, bp: 0 });
        assert_eq!(step(ffi, 0x1000, 0x1008, &s), Ok(Some((0x40_3000, 0x1028, 0x1230))));
        assert_eq!(step(ffi, 0x1030, 0x1008, &s), Err(Cut::OutsideModules), "backwards");
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
        // CFA = bp + 32, return address at bp + 8, bp restored from [bp] (libffi's trampoline).
        let ffi = shape(Ok(Some(w(bp + 8))), sp, bp, &regs(bp + 32, w(bp)));
        assert_eq!(ffi, Class::BpBased { cfa: 32, ra: 8, bp: 0 });
    }
}
