//! Reuse of a thread's previous walk: a launch made right after another one from the same thread
//! usually shares the outer part of its stack (the interpreter, the framework's dispatcher, the
//! program's loop). The walk records, for every frame it writes, the frame's registers and the
//! stack words its step read; the next walk of the same thread, on reaching a frame whose
//! registers (`ip`, `sp`, `bp`) are those of a recorded frame, reads every word the recorded
//! steps from there on read, at the addresses they read them, and when each holds the value it
//! held, writes the recorded frames instead of stepping them.
//!
//! Exact, not a guess: a step is a function of the frame's registers, its address's unwind rule
//! (fixed while the module list is: [`Memo`] belongs to one list's generation) and the words it
//! reads, so equal registers and equal words give the steps the walk would have taken. What
//! it saves is the walk's dependency chain: a step's rule lookup waits for the return address
//! the step before read, and the next read waits for the rule; the recorded addresses are known
//! in advance, so their reads go out together. Matching only the innermost frames and keeping
//! the rest would not be exact (a function called twice from two lines of its caller, at the
//! same depth, runs at the same `sp` with the same `ip`: only its caller's return address
//! differs), hence every recorded word is checked.
//!
//! A walk that went through code outside every module or was cut is not recorded (its end
//! depends on more than the stack words).

use std::cell::RefCell;

use crate::regs::Registers;
use crate::walk::{End, Stack};

/// One recorded walk: its written frames from the first one, and the words their steps read.
#[derive(Debug, Default)]
struct Recorded {
    ip: Vec<u64>,
    sp: Vec<u64>,
    bp: Vec<u64>,
    /// Index in `reads` of the first word each frame's step read.
    at: Vec<u32>,
    /// (address, value) of every word read, in order.
    reads: Vec<(u64, u64)>,
    /// How the walk ended after its last frame.
    end: Option<End>,
    /// One past the highest stack word the walk read.
    top: u64,
}

impl Recorded {
    fn clear(&mut self) {
        self.ip.clear();
        self.sp.clear();
        self.bp.clear();
        self.at.clear();
        self.reads.clear();
        self.end = None;
        self.top = 0;
    }
}

/// A thread's previous walk and the one being made.
#[derive(Debug, Default)]
pub(crate) struct Memo {
    prev: Recorded,
    cur: Recorded,
    /// The words the walk being made read (`cur`'s), shared with [`Logged`].
    log: RefCell<Vec<(u64, u64)>>,
    /// The module list `prev` was walked with.
    generation: u64,
}

/// A walk in progress with a [`Memo`]: records the frames written and the words read, and
/// offers the previous walk's frames where their registers come up.
pub(crate) struct Tracer<'a> {
    prev: &'a Recorded,
    cur: &'a mut Recorded,
    log: &'a RefCell<Vec<(u64, u64)>>,
    /// The next recorded frame whose `sp` the walk has not passed.
    next: usize,
    /// `prev.sp[next]`, or `u64::MAX` when no more reuse is asked in this walk.
    probe: u64,
    /// Frames taken from the previous walk.
    pub reused: usize,
}

/// The stack as the walk reads it, each word read logged.
pub(crate) struct Logged<'a, S: Stack> {
    pub stack: &'a S,
    pub log: &'a RefCell<Vec<(u64, u64)>>,
}

impl<S: Stack> Stack for Logged<'_, S> {
    #[inline(always)]
    fn word(&self, addr: u64) -> Option<u64> {
        let w = self.stack.word(addr)?;
        self.log.borrow_mut().push((addr, w));
        Some(w)
    }
}

impl Memo {
    /// Starts a walk with the module list of `generation` (the previous walk is offered only if
    /// it was made with the same list); returns the tracer and the log its stack reads go to.
    pub fn begin(&mut self, generation: u64) -> (Tracer<'_>, &RefCell<Vec<(u64, u64)>>) {
        if self.generation != generation {
            self.prev.clear();
            self.generation = generation;
        }
        self.cur.clear();
        self.log.get_mut().clear();
        let probe = match self.prev.end {
            Some(_) => self.prev.sp.first().copied().unwrap_or(u64::MAX),
            None => u64::MAX,
        };
        let Memo { prev, cur, log, .. } = self;
        (Tracer { prev, cur, log, next: 0, probe, reused: 0 }, log)
    }
}

impl Tracer<'_> {
    /// The `sp` at or above which the walk asks [`Tracer::reuse`] before writing a frame.
    #[inline(always)]
    pub fn probe(&self) -> u64 {
        self.probe
    }

    /// A frame written: its registers, before its step reads anything.
    #[inline(always)]
    pub fn frame(&mut self, ip: u64, sp: u64, bp: u64) {
        let c = &mut *self.cur;
        c.ip.push(ip);
        c.sp.push(sp);
        c.bp.push(bp);
        c.at.push(self.log.borrow().len() as u32);
    }

    /// At a frame of registers `r` (not written yet, `n` frames written before it): when the
    /// previous walk had a frame with these registers and every word its steps read from there
    /// on still holds its value in `stack`, writes the previous walk's frames from there into
    /// `out` (and their `sp` into `sp_out`, as far as it goes) and returns the frames written in
    /// all, how the walk ends and one past the highest word read; `None`: walk on.
    #[inline(never)]
    pub fn reuse(
        &mut self,
        stack: &impl Stack,
        n: usize,
        r: Registers,
        out: &mut [u64],
        sp_out: &mut [u64],
    ) -> Option<(usize, End, u64)> {
        let p = self.prev;
        while self.next < p.sp.len() && p.sp[self.next] < r.sp {
            self.next += 1;
        }
        let j = self.next;
        if j >= p.sp.len() || p.sp[j] != r.sp || p.ip[j] != r.ip || p.bp[j] != r.bp {
            // Not a recorded frame: ask again at the next recorded `sp` above this one.
            let above = if p.sp.get(j) == Some(&r.sp) { j + 1 } else { j };
            self.probe = p.sp.get(above).copied().unwrap_or(u64::MAX);
            return None;
        }
        let end = p.end?;
        let frames = p.ip.len() - j;
        let room = out.len().saturating_sub(n);
        if frames == 0 || (frames < room && end == End::MaxDepth) {
            // (The previous walk stopped at its depth limit; this one goes further.)
            self.probe = u64::MAX;
            return None;
        }
        let from = p.at[j] as usize;
        // Every word the previous steps read from frame j on, at addresses known in advance:
        // the reads do not wait for each other (a difference is the unlikely branch).
        if let Some(d) = p.reads[from..].iter().position(|&(a, v)| stack.word(a) != Some(v)) {
            // The frames up to the one whose step read it would fail here again: ask again at
            // the frame after it (a caller that called from another line: its callers are the
            // same again).
            let k = p.at.partition_point(|&a| a as usize <= from + d).max(j + 1);
            self.next = k;
            self.probe = p.sp.get(k).copied().unwrap_or(u64::MAX);
            return None;
        }
        self.probe = u64::MAX;
        let k = frames.min(room);
        out[n..n + k].copy_from_slice(&p.ip[j..j + k]);
        let s = sp_out.len().saturating_sub(n).min(k);
        sp_out[n..n + s].copy_from_slice(&p.sp[j..j + s]);
        // This walk's record: its own frames, then the previous walk's from j.
        let mut log = self.log.borrow_mut();
        let base = log.len() as u32;
        let c = &mut *self.cur;
        c.ip.extend_from_slice(&p.ip[j..j + k]);
        c.sp.extend_from_slice(&p.sp[j..j + k]);
        c.bp.extend_from_slice(&p.bp[j..j + k]);
        c.at.extend(p.at[j..j + k].iter().map(|&a| a - from as u32 + base));
        log.extend_from_slice(&p.reads[from..]);
        self.reused = k;
        let (end, top) = if k < frames { (End::MaxDepth, p.sp[j + k - 1]) } else { (end, p.top) };
        Some((n + k, end, top))
    }

    /// The walk ended: it becomes the previous walk when it can be reused (it reached its root
    /// or its depth limit through known code).
    pub fn end(self, end: End, top: u64, reusable: bool) -> bool {
        let keep = reusable && matches!(end, End::Root | End::MaxDepth);
        self.cur.end = keep.then_some(end);
        self.cur.top = top;
        std::mem::swap(&mut self.cur.reads, &mut *self.log.borrow_mut());
        keep
    }
}

impl Memo {
    /// After [`Tracer::end`]: the walk just made becomes the previous one (or none, when it
    /// cannot be reused).
    pub fn finish(&mut self, kept: bool) {
        if kept {
            std::mem::swap(&mut self.prev, &mut self.cur);
        } else {
            self.prev.clear();
        }
        // The read log takes the buffer of the record now unused (no allocation per walk).
        std::mem::swap(self.log.get_mut(), &mut self.cur.reads);
    }
}
