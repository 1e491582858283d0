//! Which threads are in a backward call, kept by each autograd engine thread from launch to
//! launch, so that a launch reads a few words of one thread instead of scanning them all.
//!
//! A thread's frames change only while it holds the GIL. The engine thread keeps what its last
//! scan of the thread list found, with the GIL's hand-over record ([`Switches`]) read just
//! before that scan. At a launch, when the record is unchanged, no thread but the last holder
//! `L` has run Python since the scan began: every other thread is where the scan saw it (in or
//! out of its backward call), and only `L` is looked at again, by replaying the reads that
//! classified it (its innermost frame: the thread state's frame pointer, the frame's code and
//! instruction pointer...) in one `process_vm_readv`, or directly where they lie in memory that
//! stays mapped ([`crate::signature`]); when all read the same, `L`'s innermost frame is the
//! one classified, else it is classified anew. When the record changed (another
//! thread took the GIL: a thread started, woke up, or entered a backward call), the engine
//! thread scans again. So a loop calling `loss.backward()` again, from another line or the same
//! one, at the same depth (the same frame addresses on 3.11's data stack) is seen for what it
//! is: the caller is `L`; its innermost frame reads the same, so it is in a backward call, and
//! its frames are then read (as for every launch, directly and resolved through the engine
//! thread's cache) with their new lines. A second thread entering a backward call took the GIL
//! to do so: the record changed, and the scan finds both.

use std::cell::RefCell;

use crate::gil::Switches;
use crate::memory::{Memory, ProcessMemory};
use crate::own::Interpreter;
use crate::signature::{classify, Signature};

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
        if sig.tstate != holder || !sig.holds(&mem, &py.counts.autograd_direct) {
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
