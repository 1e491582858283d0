//! Which threads are in a backward call, kept by each autograd engine thread from launch to
//! launch, so that a launch reads a few words of one thread instead of scanning them all.
//!
//! A thread's frames change only while it holds the GIL. The engine thread keeps what its last
//! scan of the thread list found, with the GIL's hand-over record ([`Switches`]) read just
//! before that scan. At a launch, when the record is unchanged, no thread but the last holder
//! `L` has run Python since the scan began: every other thread is where the scan saw it (in or
//! out of its backward call), and only `L` is looked at again, by replaying the reads that
//! classified it (its innermost frame: the thread state's frame pointer, the frame's code and
//! instruction pointer...) in one `process_vm_readv`; when all read the same, `L`'s innermost
//! frame is the one classified, else it is classified anew. When the record changed (another
//! thread took the GIL: a thread started, woke up, or entered a backward call), the engine
//! thread scans again. So a loop calling `loss.backward()` again, from another line or the same
//! one, at the same depth (the same frame addresses on 3.11's data stack) is seen for what it
//! is: the caller is `L`; its innermost frame reads the same, so it is in a backward call, and
//! its frames are then read (as for every launch, directly and resolved through the engine
//! thread's cache) with their new lines. A second thread entering a backward call took the GIL
//! to do so: the record changed, and the scan finds both.

use std::cell::RefCell;

use crate::chain::{self, RawFrame};
use crate::gil::Switches;
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
}

impl Signature {
    const EMPTY: Signature = Signature {
        tstate: 0,
        spans: [(0, 0); MAX_SPANS],
        n: 0,
        bytes: [0; MAX_SPANS * SPAN],
        complete: false,
        in_backward: false,
    };

    fn len(&self) -> usize {
        self.spans[..self.n].iter().map(|s| s.1).sum()
    }

    /// True when the ranges hold what they held (one system call): every read of the
    /// classification would read the same, so the thread's innermost frame is the one
    /// classified and `in_backward` still holds.
    fn holds(&self, mem: &ProcessMemory) -> bool {
        let mut now = [0u8; MAX_SPANS * SPAN];
        let len = self.len();
        self.complete && mem.read_ranges(&self.spans[..self.n], &mut now) && now[..len] == self.bytes[..len]
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

/// What an engine thread knows of the backward callers.
#[derive(Debug)]
pub(crate) struct Callers {
    /// The interpreter the scan was made for (its address; 0: nothing known).
    interp: usize,
    /// The GIL's record read before the scan.
    gil: Switches,
    /// The engine thread's own thread state then.
    own: u64,
    /// Threads in a backward call.
    count: usize,
    /// The first two of them.
    sigs: [Signature; 2],
    /// The last GIL holder, when it is not one of them.
    holder: Signature,
}

thread_local! {
    /// Made at the thread's first engine launch (2 KB: not in every thread's TLS block).
    static CALLERS: RefCell<Option<Box<Callers>>> = const { RefCell::new(None) };
}

/// The one thread in a backward call (`Ok(Some(tstate))`), none, or several (`Err`), for the
/// launch the calling engine thread is making. `head` is the interpreter's first thread state,
/// `own` the calling thread's, `gil` the GIL's record now (`None`: not known, scan every time).
pub(crate) fn find(py: &Interpreter, head: u64, own: u64, gil: Option<Switches>) -> Result<Option<u64>, ()> {
    let run = |c: &mut Callers| {
        let key = py as *const Interpreter as usize;
        match gil {
            Some(g) if c.interp == key && c.gil == g && c.own == own => c.recheck(py, g.holder, own),
            _ => {
                c.scan(py, head, own, gil.map(|g| g.holder));
                c.interp = if gil.is_some() { key } else { 0 };
                c.gil = gil.unwrap_or(Switches { number: 0, holder: 0 });
                c.own = own;
            }
        }
        match c.count {
            0 => Ok(None),
            1 => Ok(Some(c.sigs[0].tstate)),
            _ => Err(()),
        }
    };
    // In use further up this thread's stack, or torn down: a scan of its own.
    let fresh = || run(&mut { Callers::EMPTY });
    CALLERS
        .try_with(|c| match c.try_borrow_mut() {
            Ok(mut c) => run(c.get_or_insert_with(|| Box::new(Callers::EMPTY))),
            Err(_) => fresh(),
        })
        .unwrap_or_else(|_| fresh())
}

impl Callers {
    const EMPTY: Callers = Callers {
        interp: 0,
        gil: Switches { number: 0, holder: 0 },
        own: 0,
        count: 0,
        sigs: [Signature::EMPTY; 2],
        holder: Signature::EMPTY,
    };

    /// Classifies every thread but `own`, from `head` on. With the GIL's last `holder` known,
    /// keeps what the classifications of the callers and of the holder read, to replay them at
    /// the next launches.
    fn scan(&mut self, py: &Interpreter, head: u64, own: u64, holder: Option<u64>) {
        py.counts.autograd_scans.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let mem = ProcessMemory { pid: std::process::id() };
        self.count = 0;
        self.holder = Signature::EMPTY;
        let mut tstate = head;
        for _ in 0..crate::autograd::MAX_THREADS {
            if tstate == 0 {
                break;
            }
            if tstate != own {
                let sig = classify(py, &mem, tstate, holder.is_some());
                if sig.in_backward {
                    if self.count < 2 {
                        self.sigs[self.count] = sig;
                    }
                    self.count += 1;
                } else if holder == Some(tstate) {
                    self.holder = sig;
                }
            }
            let Ok(next) = mem.u64(tstate + py.layout.tstate_next) else { break };
            tstate = next;
        }
    }

    /// Looks again at `holder`, the only thread that may have run Python since the scan.
    fn recheck(&mut self, py: &Interpreter, holder: u64, own: u64) {
        // With three callers or more, two at least are still in their calls.
        if holder == 0 || holder == own || self.count > 2 {
            return;
        }
        let mem = ProcessMemory { pid: std::process::id() };
        let known = self.count.min(2);
        let pos = self.sigs[..known].iter().position(|s| s.tstate == holder);
        let sig = match pos {
            Some(i) => &mut self.sigs[i],
            None => &mut self.holder,
        };
        if sig.tstate != holder || !sig.holds(&mem) {
            *sig = classify(py, &mem, holder, true);
        }
        match (pos, sig.in_backward) {
            (Some(i), false) => {
                self.holder = self.sigs[i];
                if i == 0 {
                    self.sigs[0] = self.sigs[1];
                }
                self.count -= 1;
            }
            (None, true) => {
                if self.count < 2 {
                    self.sigs[self.count] = self.holder;
                }
                self.count += 1;
            }
            _ => {}
        }
    }
}

/// Classifies the innermost frame of thread state `tstate`, recording the reads when `record`
/// (else the signature never holds).
fn classify(py: &Interpreter, mem: &ProcessMemory, tstate: u64, record: bool) -> Signature {
    let mut first = [RawFrame::default(); 1];
    let backward = |walked: Result<(usize, bool), Error>, first: &[RawFrame; 1]| {
        matches!(walked, Ok((1, _))) && py.is_backward_code(mem, first[0].code)
    };
    if !record {
        let walked = chain::walk(mem, py.layout, tstate, Some(py.code_type), &mut first);
        return Signature { tstate, in_backward: backward(walked, &first), ..Signature::EMPTY };
    }
    let rec = Recorder { mem: *mem, reads: RefCell::new(([(0, 0, 0); MAX_READS], 0, false)) };
    let walked = chain::walk(&rec, py.layout, tstate, Some(py.code_type), &mut first);
    rec.finish(tstate, backward(walked, &first))
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
            (rec.u64(at + 8).unwrap(), rec.u8(at + 80).unwrap(), rec.u64(at + 16).unwrap()),
            (7, 9, 0)
        );
        let sig = rec.finish(at, true);
        assert_eq!(sig.spans[..sig.n], [(at + 8, 16), (at + 80, 1)], "reads 72 bytes apart: two ranges");
        assert!(sig.complete && sig.holds(&mem) && sig.in_backward);
        // SAFETY: `base` points to `obj`, alive and not borrowed; volatile so that the writes
        // happen before the reads through the kernel.
        let set = |i: usize, v: u64| unsafe { std::ptr::write_volatile(base.add(i), v) };
        set(2, 1);
        assert!(!sig.holds(&mem), "a byte read changed");
        set(2, 0);
        assert!(sig.holds(&mem));
        set(12, 5);
        assert!(sig.holds(&mem), "outside every range");
        let rec = Recorder { mem, reads: RefCell::new(([(0, 0, 0); MAX_READS], 0, false)) };
        assert!(rec.u64(8).is_err());
        assert!(!rec.finish(at, true).holds(&mem), "a failed read: never replayed");
    }
}
