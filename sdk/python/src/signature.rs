//! What classified a thread's innermost frame (in a backward call or not), kept to be checked
//! again cheaply: the reads the classification made, as a few ranges of memory with the bytes
//! they held. The ranges are read again in one `process_vm_readv`; where they all lie in memory
//! that stays mapped while the interpreter runs ([`Fixed`]: the main thread's state and frames
//! from 3.11 on), directly, with no system call.

use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::chain::{self, RawFrame};
use crate::cpython_offsets::{CHUNK_PREVIOUS, CHUNK_SIZE, OBJECT_TYPE};
use crate::memory::{Memory, ProcessMemory};
use crate::own::Interpreter;
use crate::Error;

/// Most reads of one classification replayed (more: classified anew each time).
const MAX_READS: usize = 16;
/// Most ranges a replay reads: the reads of one object (a frame's fields) are one range.
const MAX_SPANS: usize = 8;
/// Most bytes of one range.
const SPAN: usize = 64;

/// The reads that classified a thread's innermost frame, as a few ranges of memory, with what
/// they held then and what was found.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Signature {
    /// The thread state read (0: none).
    pub(crate) tstate: u64,
    /// The ranges that hold every read of the classification.
    spans: [(u64, usize); MAX_SPANS],
    n: usize,
    /// What they held, one after the other.
    bytes: [u8; MAX_SPANS * SPAN],
    /// The ranges hold every read and held the values the classification read: only then can
    /// a replay stand for a classification.
    complete: bool,
    /// The innermost frame runs a backward entry.
    pub(crate) in_backward: bool,
    /// The ranges read again directly (all but the code object's type, which lies in memory
    /// that may be freed); 0: through `process_vm_readv`.
    direct: [usize; MAX_SPANS],
    n_direct: usize,
}

impl Signature {
    pub(crate) const EMPTY: Signature = Signature {
        tstate: 0,
        spans: [(0, 0); MAX_SPANS],
        n: 0,
        bytes: [0; MAX_SPANS * SPAN],
        complete: false,
        in_backward: false,
        direct: [0; MAX_SPANS],
        n_direct: 0,
    };

    fn len(&self) -> usize {
        self.spans[..self.n].iter().map(|s| s.1).sum()
    }

    /// True when the ranges hold what they held (one system call, or none where they lie in
    /// [`Fixed`] memory): every read of the classification would read the same, so the
    /// thread's innermost frame is the one classified and `in_backward` still holds.
    pub(crate) fn holds(&self, mem: &ProcessMemory, direct: &AtomicU64) -> bool {
        if !self.complete {
            return false;
        }
        if self.n_direct > 0 {
            direct.fetch_add(1, Ordering::Relaxed);
            return self.holds_directly();
        }
        let mut now = [0u8; MAX_SPANS * SPAN];
        let len = self.len();
        mem.read_ranges(&self.spans[..self.n], &mut now) && now[..len] == self.bytes[..len]
    }

    /// [`Signature::holds`] for ranges in [`Fixed`] memory: each read as the thread may be
    /// writing it (a byte read mid-write differs or not, as through `process_vm_readv`). The
    /// code object's type is not read again: the frame's bytes hold the same code object
    /// pointer and instruction pointer, and a frame keeps its code object alive.
    fn holds_directly(&self) -> bool {
        for &i in &self.direct[..self.n_direct] {
            let (at, len) = self.spans[i];
            let off: usize = self.spans[..i].iter().map(|s| s.1).sum();
            for (k, &was) in self.bytes[off..off + len].iter().enumerate() {
                // SAFETY: `allow_direct` kept only ranges inside memory that stays mapped while
                // the interpreter runs (`Fixed`: `_PyRuntime`, the main stack, the root chunk of
                // the frame stack of a thread state that lives in `_PyRuntime`).
                let now = unsafe { std::ptr::read_volatile((at + k as u64) as *const u8) };
                if now != was {
                    return false;
                }
            }
        }
        true
    }

    /// Reads the ranges directly from now on when every one lies in `regions` (`[start, end)`
    /// each), but the one that holds only the type of the code object at `code`.
    fn allow_direct(&mut self, regions: &[(u64, u64)], code: Option<u64>) {
        self.n_direct = 0;
        let mut k = 0;
        for i in 0..self.n {
            let (at, len) = self.spans[i];
            if code.is_some_and(|c| (at, len) == (c + OBJECT_TYPE, 8)) {
                continue;
            }
            if !regions.iter().any(|&(lo, hi)| at >= lo && at + len as u64 <= hi) {
                return;
            }
            self.direct[k] = i;
            k += 1;
        }
        self.n_direct = k;
    }
}

/// Memory that stays mapped while the interpreter runs: `_PyRuntime` (from 3.11 it holds the
/// main interpreter and its first thread state, the main thread's, never freed) and the
/// process's main stack (its mapping grows down and never shrinks).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Fixed {
    runtime: (u64, u64),
    stack: (u64, u64),
}

impl Fixed {
    /// `runtime` (`_PyRuntime`'s range) and the main stack, from `/proc/self/maps`.
    pub(crate) fn find(runtime: (u64, u64)) -> Option<Fixed> {
        let maps = std::fs::read_to_string("/proc/self/maps").ok()?;
        let stack = xpuprof_wire::maps::parse(&maps).into_iter().find(|m| m.path == "[stack]")?;
        Some(Fixed { runtime, stack: (stack.start, stack.end) })
    }

    /// The regions of thread state `tstate` read directly: `_PyRuntime` and the main stack,
    /// and when `tstate` lives in `_PyRuntime` (3.11 and later: the main thread), the root
    /// chunk of its frame stack, which is never freed before the thread state.
    fn regions(&self, py: &Interpreter, mem: &ProcessMemory, tstate: u64) -> [(u64, u64); 3] {
        let mut out = [self.runtime, self.stack, (0, 0)];
        let Some(at) = py.layout.tstate_datastack_chunk else { return out };
        if !(tstate >= self.runtime.0 && tstate + at + 8 <= self.runtime.1) {
            return out;
        }
        let Ok(mut chunk) = mem.u64(tstate + at) else { return out };
        for _ in 0..1 << 16 {
            match mem.u64(chunk + CHUNK_PREVIOUS) {
                Ok(0) => {
                    if let Ok(size) = mem.u64(chunk + CHUNK_SIZE) {
                        out[2] = (chunk, chunk.saturating_add(size));
                    }
                    break;
                }
                Ok(previous) => chunk = previous,
                Err(_) => break,
            }
        }
        out
    }
}

/// The reads made so far: (address, length, value) of each, how many, and whether one was
/// not recorded.
type Reads = ([(u64, usize, u64); MAX_READS], usize, bool);

/// A [`Memory`] that records the reads it passes to `process_vm_readv`.
struct Recorder {
    mem: ProcessMemory,
    reads: RefCell<Reads>,
}

impl Memory for Recorder {
    fn read(&self, addr: u64, buf: &mut [u8]) -> Result<(), Error> {
        let r = self.mem.read(addr, buf);
        let (reads, n, lost) = &mut *self.reads.borrow_mut();
        if r.is_err() || buf.len() > 8 || *n == MAX_READS {
            *lost = true;
        } else {
            let mut word = [0u8; 8];
            word[..buf.len()].copy_from_slice(buf);
            reads[*n] = (addr, buf.len(), u64::from_le_bytes(word));
            *n += 1;
        }
        r
    }
}

impl Recorder {
    /// The signature of the reads made: ranges of at most [`SPAN`] bytes that hold them, read
    /// once more and checked against the values the reads found.
    fn finish(self, tstate: u64, in_backward: bool) -> Signature {
        let (reads, n, lost) = self.reads.into_inner();
        let mut sig = Signature { tstate, in_backward, complete: !lost, ..Signature::EMPTY };
        for &(addr, len, _) in &reads[..n] {
            let fits = sig.spans[..sig.n].iter().position(|&(at, l)| {
                addr.max(at + l as u64).max(addr + len as u64) - addr.min(at) <= SPAN as u64
            });
            match fits {
                Some(i) => {
                    let (at, l) = sig.spans[i];
                    let lo = at.min(addr);
                    sig.spans[i] = (lo, ((at + l as u64).max(addr + len as u64) - lo) as usize);
                }
                None if sig.n < MAX_SPANS => {
                    sig.spans[sig.n] = (addr, len);
                    sig.n += 1;
                }
                None => sig.complete = false,
            }
        }
        let len = sig.len();
        sig.complete &= self.mem.read_ranges(&sig.spans[..sig.n], &mut sig.bytes[..len]);
        // Each read's value where its range holds it (else the memory changed meanwhile).
        for &(addr, l, value) in &reads[..n] {
            let mut base = 0;
            let held = sig.spans[..sig.n].iter().any(|&(at, sl)| {
                let inside = addr >= at && addr + l as u64 <= at + sl as u64;
                let off = base + (addr - at.min(addr)) as usize;
                base += sl;
                inside && sig.bytes[off..off + l] == value.to_le_bytes()[..l]
            });
            sig.complete &= held;
        }
        sig
    }
}

/// Classifies the innermost frame of thread state `tstate`, recording the reads when `record`
/// (else the signature never holds).
pub(crate) fn classify(py: &Interpreter, mem: &ProcessMemory, tstate: u64, record: bool) -> Signature {
    let mut first = [RawFrame::default(); 1];
    let backward = |walked: &Result<(usize, bool), Error>, first: &[RawFrame; 1]| {
        matches!(walked, Ok((1, _))) && py.is_backward_code(mem, first[0].code)
    };
    if !record {
        let walked = chain::walk(mem, py.layout, tstate, Some(py.code_type), &mut first);
        return Signature { tstate, in_backward: backward(&walked, &first), ..Signature::EMPTY };
    }
    let rec = Recorder { mem: *mem, reads: RefCell::new(([(0, 0, 0); MAX_READS], 0, false)) };
    let walked = chain::walk(&rec, py.layout, tstate, Some(py.code_type), &mut first);
    let mut sig = rec.finish(tstate, backward(&walked, &first));
    let fixed = py.fixed.get_or_init(|| Fixed::find(py.runtime?));
    if let Some(fixed) = fixed {
        let code = matches!(walked, Ok((1, _))).then_some(first[0].code);
        sig.allow_direct(&fixed.regions(py, mem, tstate), code);
    }
    sig
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_signature_holds_until_a_byte_of_its_ranges_changes() {
        let mut obj = [0u64; 16];
        obj[1] = 7;
        obj[10] = 9;
        let base = obj.as_mut_ptr();
        let at = base as u64;
        let mem = ProcessMemory { pid: std::process::id() };
        let rec = Recorder { mem, reads: RefCell::new(([(0, 0, 0); MAX_READS], 0, false)) };
        assert_eq!(
            (rec.u64(at + 8).unwrap(), rec.u64(at + 80).unwrap(), rec.u64(at + 16).unwrap()),
            (7, 9, 0)
        );
        let sig = rec.finish(at, true);
        assert_eq!(sig.spans[..sig.n], [(at + 8, 16), (at + 80, 8)], "reads 72 bytes apart: two ranges");
        let direct = AtomicU64::new(0);
        assert!(sig.complete && sig.holds(&mem, &direct) && sig.in_backward);
        // SAFETY: `base` points to `obj`, alive and not borrowed; volatile so that the writes
        // happen before the reads through the kernel.
        let set = |i: usize, v: u64| unsafe { std::ptr::write_volatile(base.add(i), v) };
        set(2, 1);
        assert!(!sig.holds(&mem, &direct), "a byte read changed");
        set(2, 0);
        assert!(sig.holds(&mem, &direct));
        set(13, 5);
        assert!(sig.holds(&mem, &direct), "outside every range");
        let rec = Recorder { mem, reads: RefCell::new(([(0, 0, 0); MAX_READS], 0, false)) };
        assert!(rec.u64(8).is_err());
        assert!(!rec.finish(at, true).holds(&mem, &direct), "a failed read: never replayed");
        assert_eq!(direct.load(Ordering::Relaxed), 0);
        // The same, read directly: the ranges lie in a region given as mapped; the range that
        // holds only a code object's type is left out.
        let mut sig = sig;
        sig.allow_direct(&[(at, at + 128)], Some(at + 80 - OBJECT_TYPE));
        assert_eq!(sig.direct[..sig.n_direct], [0], "{sig:?}");
        sig.allow_direct(&[(at, at + 64)], None);
        assert_eq!(sig.n_direct, 0, "a range outside every region: through the kernel");
        sig.allow_direct(&[(at, at + 128)], None);
        assert_eq!(sig.n_direct, 2);
        assert!(sig.holds(&mem, &direct));
        set(2, 1);
        assert!(!sig.holds(&mem, &direct), "a byte read changed");
        set(2, 0);
        assert!(sig.holds(&mem, &direct));
        assert_eq!(direct.load(Ordering::Relaxed), 3);
    }
}
