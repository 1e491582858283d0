//! Reuse of a thread's previous walk: a launch made right after another one from the same thread
//! usually shares the outer part of its stack (the interpreter, the framework's dispatcher, the
//! program's loop). The walk records, for every frame it writes, the frame's registers and the
//! rule its step took (from the per-address cache); the next walk of the same thread, on
//! reaching a frame whose registers (`ip`, `sp`, `bp`) are those of a recorded frame, steps
//! every recorded frame from there again from its recorded registers with its recorded rule,
//! and when each step leads to the next recorded frame, writes the recorded frames instead of
//! walking on.
//!
//! Exact, not a guess: a step is a function of the frame's registers, its address's unwind rule
//! (fixed while the module list is: [`Memo`] belongs to one list's generation) and the stack
//! words it reads, so a step that leads where it led is the step the walk would take. What it
//! saves is the walk's dependency chain: a step's rule lookup waits for the return address
//! the step before read, and the next read waits for the rule; the recorded registers are known
//! in advance, so the steps' reads go out together. Matching only the innermost frames and
//! keeping the rest would not be exact (a function called twice from two lines of its caller,
//! at the same depth, runs at the same `sp` with the same `ip`: only its caller's return
//! address differs), hence every recorded step is taken again.
//!
//! A walk that went through code outside every module or was cut is not recorded (its end
//! depends on more than the stack words), and frames stepped by framehop (rules of other
//! shapes) are not reused past.

use crate::regs::Registers;
use crate::rules::{step, Rule};
use crate::walk::{End, Stack};

/// One recorded frame: its registers and the rule its step took.
#[derive(Debug, Clone, Copy)]
struct Frame {
    ip: u64,
    sp: u64,
    bp: u64,
    rule: Rule,
}

/// One recorded walk: its written frames from the first one.
#[derive(Debug, Default)]
struct Recorded {
    frames: Vec<Frame>,
    /// How the walk ended after its last frame.
    end: Option<End>,
    /// One past the highest stack word the walk read.
    top: u64,
}

impl Recorded {
    fn clear(&mut self) {
        self.frames.clear();
        self.end = None;
        self.top = 0;
    }
}

/// A thread's previous walk and the one being made.
#[derive(Debug, Default)]
pub(crate) struct Memo {
    prev: Recorded,
    cur: Recorded,
    /// The module list `prev` was walked with.
    generation: u64,
}

/// A walk in progress with a [`Memo`]: records the frames written, and offers the previous
/// walk's frames where their registers come up.
pub(crate) struct Tracer<'a> {
    prev: &'a Recorded,
    cur: &'a mut Recorded,
    /// The next recorded frame whose `sp` the walk has not passed.
    next: usize,
    /// `prev.frames[next].sp`, or `u64::MAX` when no more reuse is asked in this walk.
    probe: u64,
    /// Frames taken from the previous walk.
    pub reused: usize,
}

impl Memo {
    /// Starts a walk with the module list of `generation` (the previous walk is offered only if
    /// it was made with the same list).
    pub fn begin(&mut self, generation: u64) -> Tracer<'_> {
        if self.generation != generation {
            self.prev.clear();
            self.generation = generation;
        }
        self.cur.clear();
        let probe = match self.prev.end {
            Some(_) => self.prev.frames.first().map_or(u64::MAX, |f| f.sp),
            None => u64::MAX,
        };
        let Memo { prev, cur, .. } = self;
        Tracer { prev, cur, next: 0, probe, reused: 0 }
    }

    /// After [`Tracer::end`]: the walk just made becomes the previous one (or none, when it
    /// cannot be reused).
    pub fn finish(&mut self, kept: bool) {
        if kept {
            std::mem::swap(&mut self.prev, &mut self.cur);
        } else {
            self.prev.clear();
        }
    }
}

/// The rule recorded for a frame not stepped by a cached rule (framehop's: [`Rule::CFI`]).
pub(crate) const NOT_REUSED: Rule = Rule { cfa: 0, bp: Rule::CFI };

impl Tracer<'_> {
    /// The `sp` at or above which the walk asks [`Tracer::reuse`] before writing a frame.
    #[inline(always)]
    pub fn probe(&self) -> u64 {
        self.probe
    }

    /// A frame written, with the rule of its step ([`NOT_REUSED`] when not a cached one).
    #[inline(always)]
    pub fn frame(&mut self, ip: u64, sp: u64, bp: u64, rule: Rule) {
        self.cur.frames.push(Frame { ip, sp, bp, rule });
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
        let p = &self.prev.frames;
        while self.next < p.len() && p[self.next].sp < r.sp {
            self.next += 1;
        }
        let j = self.next;
        let same_regs = |f: &Frame| (f.ip, f.sp, f.bp) == (r.ip, r.sp, r.bp);
        if !p.get(j).is_some_and(same_regs) {
            // Not a recorded frame: ask again at the next recorded `sp` above this one.
            let above = if p.get(j).is_some_and(|f| f.sp == r.sp) { j + 1 } else { j };
            self.probe = p.get(above).map_or(u64::MAX, |f| f.sp);
            return None;
        }
        let end = self.prev.end?;
        let frames = p.len() - j;
        let room = out.len().saturating_sub(n);
        if frames == 0 || (frames < room && end == End::MaxDepth) {
            // (The previous walk stopped at its depth limit; this one goes further.)
            self.probe = u64::MAX;
            return None;
        }
        let k = frames.min(room);
        // Each frame stepped again from its recorded registers: the steps' reads do not wait
        // for each other (a difference is the unlikely branch). The last frame's step is
        // checked when the walk would take it (to its root).
        let last = if k == frames && end == End::Root { j + k } else { j + k - 1 };
        if let Some(d) = (j..last).position(|i| !steps_to(&p[i], p.get(i + 1), stack)) {
            // The frames up to this one would fail here again: ask again at the frame after it
            // (a caller that called from another line: its callers are the same again).
            self.next = j + d + 1;
            self.probe = p.get(self.next).map_or(u64::MAX, |f| f.sp);
            return None;
        }
        self.probe = u64::MAX;
        for (i, f) in p[j..j + k].iter().enumerate() {
            out[n + i] = f.ip;
            if let Some(s) = sp_out.get_mut(n + i) {
                *s = f.sp;
            }
        }
        // This walk's record: its own frames, then the previous walk's from j.
        self.cur.frames.extend_from_slice(&p[j..j + k]);
        self.reused = k;
        let (end, top) = if k < frames { (End::MaxDepth, p[j + k - 1].sp) } else { (end, self.prev.top) };
        Some((n + k, end, top))
    }

    /// The walk ended: it becomes the previous walk when it can be reused (it reached its root
    /// or its depth limit through known code).
    pub fn end(self, end: End, top: u64, reusable: bool) -> bool {
        let keep = reusable && matches!(end, End::Root | End::MaxDepth);
        self.cur.end = keep.then_some(end);
        self.cur.top = top;
        keep
    }
}

/// True when frame `f`'s recorded step, taken again, leads to `next` (the thread's root when
/// `None`), as the walk's step would.
#[inline(always)]
fn steps_to(f: &Frame, next: Option<&Frame>, stack: &impl Stack) -> bool {
    if f.rule == NOT_REUSED {
        return false;
    }
    match (step(f.rule, f.sp, f.bp, stack), next) {
        (Ok(Some((ra, sp, bp))), Some(n)) => ra >= 0x1000 && (ra, sp, bp) == (n.ip, n.sp, n.bp),
        (Ok(None) | Ok(Some((0, _, _))), None) => true,
        _ => false,
    }
}
