//! Reuse of a thread's previous frame-chain capture: a launch made right after another one from
//! the same thread usually runs under the same outer Python frames. The capture records, for
//! every link of the chain it follows, the frame's address (and 3.11's `_PyCFrame`) and every
//! field it read with its value; the next capture, on reaching a frame the previous one
//! followed at the same place, reads those fields again in the order they were read, and when
//! each holds its value, takes the previous capture's frames (and their resolved ids) from
//! there instead of following the chain.
//!
//! Exact: the walk is a function of the frame it is at and the values it reads, so equal
//! values give the frames the walk would have found; the resolved ids are kept only where the
//! code object still holds the same name and line-table objects (what the resolved-frame cache
//! checks). Safe: each field is read at an address the fields already found equal lead to (the
//! frame reached, its `previous` frame, its code object), so every read is one the full walk
//! would make; the first difference ends the comparison. What it saves is the chain's
//! dependency: the full walk reads a frame's `previous` before it can read the next frame, the
//! comparison knows every address in advance.
//!
//! Matching the innermost frames alone would not be exact: a function called twice from two
//! lines of its caller runs at the same frame address with the same instruction; only its
//! caller's instruction differs.

use std::cell::RefCell;

use crate::chain::RawFrame;
use crate::memory::Memory;
use crate::Error;

/// One link the walk followed: the frame, 3.11's `_PyCFrame` then, the frames written before
/// it, and the index in the read log of its first read.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Link {
    frame: u64,
    cframe: u64,
    n: u32,
    at: u32,
}

/// A read the walk made: address, size (1, 4 or 8 bytes), value.
type Read = (u64, u8, u64);

/// One capture: its links and reads, the frames it wrote with what resolved them.
#[derive(Debug)]
struct Capture {
    /// The thread state read (0: none kept).
    tstate: u64,
    links: Vec<Link>,
    reads: Vec<Read>,
    frames: Vec<RawFrame>,
    /// Per frame: the code object's name and line-table objects, and its resolved id.
    resolved: Vec<(u64, u64, u64)>,
    /// Links by frame address ([`slot`]): the link's index + 1, 0 for none (a later link of
    /// the same slot replaces an earlier one: that one is then not found, and not reused).
    index: [u32; SLOTS],
}

impl Default for Capture {
    fn default() -> Self {
        Capture {
            tstate: 0,
            links: Vec::new(),
            reads: Vec::new(),
            frames: Vec::new(),
            resolved: Vec::new(),
            index: [0; SLOTS],
        }
    }
}

/// Slots of a capture's link index (a power of two).
const SLOTS: usize = 128;

/// The index slot of a frame address.
#[inline(always)]
fn slot(frame: u64) -> usize {
    ((frame >> 4).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 57) as usize & (SLOTS - 1)
}

impl Capture {
    /// Indexes the links by frame address.
    fn index_links(&mut self) {
        self.index = [0; SLOTS];
        for (i, l) in self.links.iter().enumerate() {
            self.index[slot(l.frame)] = i as u32 + 1;
        }
    }

    fn clear(&mut self) {
        self.tstate = 0;
        self.links.clear();
        self.reads.clear();
        self.frames.clear();
        self.resolved.clear();
    }
}

/// A thread's previous capture of one chain and the one being made.
#[derive(Debug, Default)]
pub(crate) struct ChainMemo {
    prev: Capture,
    cur: Capture,
    /// The reads of the capture being made, shared with [`Logged`].
    log: RefCell<Vec<Read>>,
    /// Where the frames of `cur` from index `from_prev.0` on came from in `prev` (index
    /// `from_prev.1`): their ids may be kept.
    from_prev: Option<(usize, usize)>,
}

/// Memory whose reads go to a log.
pub(crate) struct Logged<'a, M: Memory> {
    pub mem: &'a M,
    pub log: &'a RefCell<Vec<Read>>,
}

impl<M: Memory> Memory for Logged<'_, M> {
    fn read(&self, addr: u64, buf: &mut [u8]) -> Result<(), Error> {
        self.mem.read(addr, buf)?;
        if buf.len() <= 8 {
            let mut w = [0u8; 8];
            w[..buf.len()].copy_from_slice(buf);
            self.log.borrow_mut().push((addr, buf.len() as u8, u64::from_le_bytes(w)));
        }
        Ok(())
    }

    fn u64(&self, addr: u64) -> Result<u64, Error> {
        let v = self.mem.u64(addr)?;
        self.log.borrow_mut().push((addr, 8, v));
        Ok(v)
    }
}

/// What the chain walk asks of a previous capture it may reuse: [`NoReuse`] compiles to nothing.
pub(crate) trait Reuse {
    /// A link about to be followed (`n` frames written before it, `links` followed).
    fn link(&mut self, frame: u64, cframe: u64, n: usize);
    /// At link `frame` (`cframe`), `n` frames written and `links` followed: the frames the
    /// previous capture wrote from there, written into `out`; returns the frames written in
    /// all, or `None`: walk on.
    fn reuse(
        &mut self,
        frame: u64,
        cframe: u64,
        n: usize,
        links: usize,
        out: &mut [RawFrame],
    ) -> Option<usize>;
}

/// A walk that reuses nothing.
pub(crate) struct NoReuse;

impl Reuse for NoReuse {
    #[inline(always)]
    fn link(&mut self, _: u64, _: u64, _: usize) {}
    #[inline(always)]
    fn reuse(&mut self, _: u64, _: u64, _: usize, _: usize, _: &mut [RawFrame]) -> Option<usize> {
        None
    }
}

/// A walk in progress with a [`ChainMemo`].
pub(crate) struct Tracer<'a, M: Memory> {
    prev: &'a Capture,
    cur: &'a mut Capture,
    log: &'a RefCell<Vec<Read>>,
    from_prev: &'a mut Option<(usize, usize)>,
    /// The memory compared (read without logging).
    mem: &'a M,
    /// The previous capture's link at which a comparison found a difference: a comparison
    /// from a link before it would find it again.
    failed_at: Option<usize>,
}

impl ChainMemo {
    /// Starts a capture of the chain of `tstate` (the previous one is offered when it was of
    /// the same thread state); returns the tracer and the log the walk's reads go to.
    pub fn begin<'a, M: Memory>(
        &'a mut self,
        tstate: u64,
        mem: &'a M,
    ) -> (Tracer<'a, M>, &'a RefCell<Vec<Read>>) {
        if self.prev.tstate != tstate {
            self.prev.clear();
        }
        self.cur.clear();
        self.cur.tstate = tstate;
        self.log.get_mut().clear();
        self.from_prev = None;
        let ChainMemo { prev, cur, log, from_prev } = self;
        (Tracer { prev, cur, log, from_prev, mem, failed_at: None }, log)
    }

    /// The capture ended with `frames` written, the chain read to its end: it becomes the
    /// previous one (its ids are added by [`ChainMemo::resolved`]). Any other end forgets it.
    pub fn end(&mut self, frames: Option<&[RawFrame]>) {
        match frames {
            Some(f) if self.log.borrow().len() < u32::MAX as usize => {
                self.cur.frames.clear();
                self.cur.frames.extend_from_slice(f);
                std::mem::swap(&mut self.cur.reads, self.log.get_mut());
                self.cur.index_links();
                std::mem::swap(&mut self.prev, &mut self.cur);
                // `cur` now holds the capture before, whose ids the resolution may keep.
            }
            _ => {
                self.prev.clear();
                self.cur.clear();
                self.from_prev = None;
            }
        }
    }

    /// For frame `i` of the capture just ended (resolving it): its id when it came from the
    /// capture before and its code object still holds `name` and `table`.
    #[inline]
    pub fn kept_id(&self, i: usize, name: u64, table: u64) -> Option<u64> {
        let (from, at) = self.from_prev?;
        let k = i.checked_sub(from)? + at;
        let &(n, t, id) = self.cur.resolved.get(k)?;
        (n == name && t == table).then_some(id)
    }

    /// Frame `i` of the capture just ended resolved to `id` (in order, from 0).
    #[inline]
    pub fn resolved(&mut self, i: usize, name: u64, table: u64, id: u64) {
        if self.prev.resolved.len() == i {
            self.prev.resolved.push((name, table, id));
        }
    }

    /// The resolution of the capture just ended stopped before its end: it cannot be reused.
    pub fn unresolved(&mut self) {
        self.prev.clear();
    }

    /// Whether the capture just ended took frames from the one before.
    pub fn reused(&self) -> bool {
        self.from_prev.is_some()
    }
}

impl<M: Memory> Reuse for Tracer<'_, M> {
    #[inline(always)]
    fn link(&mut self, frame: u64, cframe: u64, n: usize) {
        let at = self.log.borrow().len() as u32;
        self.cur.links.push(Link { frame, cframe, n: n as u32, at });
    }

    #[inline]
    fn reuse(
        &mut self,
        frame: u64,
        cframe: u64,
        n: usize,
        links: usize,
        out: &mut [RawFrame],
    ) -> Option<usize> {
        let p = self.prev;
        let j = (p.index[slot(frame)] as usize).checked_sub(1)?;
        let l = p.links[j];
        if l.frame != frame || self.failed_at.is_some_and(|f| j <= f) {
            return None;
        }
        let end_n = p.links.get(j + 1).map_or(p.frames.len(), |x| x.n as usize);
        // Only at a link that wrote a frame (a link of a C-stack entry marks the frame before
        // it, which this walk wrote), with room for every frame left, within the walk's bound.
        let left = p.frames.len() - l.n as usize;
        if l.cframe != cframe || end_n == l.n as usize || n + left >= out.len() {
            return None;
        }
        if links + (p.links.len() - j) > crate::chain::MAX_LINKS {
            return None;
        }
        let from = l.at as usize;
        // In the order read, stopping at the first difference: every address read is one the
        // values already found equal lead to.
        for (d, &(addr, size, was)) in p.reads[from..].iter().enumerate() {
            let now = match size {
                8 => self.mem.u64(addr),
                4 => self.mem.u32(addr).map(u64::from),
                _ => self.mem.u8(addr).map(u64::from),
            };
            if now.ok() != Some(was) {
                // The link that made this read (a frame of the same address further out can
                // still match: a caller that moved on from a frame whose callers did not).
                self.failed_at = Some(p.links.partition_point(|x| x.at as usize <= from + d) - 1);
                return None;
            }
        }
        out[n..n + left].copy_from_slice(&p.frames[l.n as usize..]);
        // This capture's record: its own links and reads, then the previous capture's.
        let mut log = self.log.borrow_mut();
        let base = log.len() as u32;
        let shift_n = n as i64 - i64::from(l.n);
        let c = &mut *self.cur;
        c.links.extend(p.links[j..].iter().map(|x| Link {
            n: (i64::from(x.n) + shift_n) as u32,
            at: x.at - l.at + base,
            ..*x
        }));
        log.extend_from_slice(&p.reads[from..]);
        *self.from_prev = Some((n, l.n as usize));
        Some(n + left)
    }
}
