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

use crate::chain::{self, RawFrame};
use crate::cpython_offsets::Layout;
use crate::memory::Memory;

/// One link the walk followed: the frame, 3.11's `_PyCFrame` then, the frames written before
/// it, and the frame it wrote (`None`: a C-stack entry frame, which marks the frame before).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Link {
    frame: u64,
    cframe: u64,
    n: u32,
    wrote: Option<RawFrame>,
}

/// One capture: its links, the frames it wrote with what resolved them.
#[derive(Debug)]
struct Capture {
    /// The thread state read (0: none kept).
    tstate: u64,
    links: Vec<Link>,
    frames: Vec<RawFrame>,
    /// Per frame: the code object's name and line-table objects, and its resolved id.
    resolved: Vec<(u64, u64, u64)>,
    /// Links by frame address ([`slot`]): the link's index + 1, 0 for none (a later link of
    /// the same slot replaces an earlier one: that one is then not found, and not reused).
    index: [u32; SLOTS],
}

impl Default for Capture {
    fn default() -> Self {
        Capture { tstate: 0, links: Vec::new(), frames: Vec::new(), resolved: Vec::new(), index: [0; SLOTS] }
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
        self.frames.clear();
        self.resolved.clear();
    }
}

/// A thread's previous capture of one chain and the one being made.
#[derive(Debug, Default)]
pub(crate) struct ChainMemo {
    prev: Capture,
    cur: Capture,
    /// Where the frames of `cur` from index `from_prev.0` on came from in `prev` (index
    /// `from_prev.1`): their ids may be kept.
    from_prev: Option<(usize, usize)>,
}

/// What the chain walk asks of a previous capture it may reuse: [`NoReuse`] compiles to nothing.
pub(crate) trait Reuse {
    /// A link followed: its frame and `_PyCFrame`, the frames written before it, the frame it
    /// wrote.
    fn link(&mut self, at: (u64, u64), n: usize, wrote: Option<RawFrame>);
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
    fn link(&mut self, _: (u64, u64), _: usize, _: Option<RawFrame>) {}
    #[inline(always)]
    fn reuse(&mut self, _: u64, _: u64, _: usize, _: usize, _: &mut [RawFrame]) -> Option<usize> {
        None
    }
}

/// A walk in progress with a [`ChainMemo`].
pub(crate) struct Tracer<'a, M: Memory> {
    prev: &'a Capture,
    cur: &'a mut Capture,
    from_prev: &'a mut Option<(usize, usize)>,
    /// The memory and layout the links are followed again with.
    mem: &'a M,
    layout: &'a Layout,
    code_type: Option<u64>,
    /// The previous capture's link at which a comparison found a difference: a comparison
    /// from a link before it would find it again.
    failed_at: Option<usize>,
}

impl ChainMemo {
    /// Starts a capture of the chain of `tstate` (the previous one is offered when it was of
    /// the same thread state), whose links are followed with `mem`, `layout`, `code_type`.
    pub fn begin<'a, M: Memory>(
        &'a mut self,
        tstate: u64,
        mem: &'a M,
        layout: &'a Layout,
        code_type: Option<u64>,
    ) -> Tracer<'a, M> {
        if self.prev.tstate != tstate {
            self.prev.clear();
        }
        self.cur.clear();
        self.cur.tstate = tstate;
        self.from_prev = None;
        let ChainMemo { prev, cur, from_prev } = self;
        Tracer { prev, cur, from_prev, mem, layout, code_type, failed_at: None }
    }

    /// The capture ended with `frames` written, the chain read to its end: it becomes the
    /// previous one (its ids are added by [`ChainMemo::resolved`]). Any other end forgets it.
    pub fn end(&mut self, frames: Option<&[RawFrame]>) {
        match frames {
            Some(f) => {
                self.cur.frames.clear();
                self.cur.frames.extend_from_slice(f);
                self.cur.index_links();
                std::mem::swap(&mut self.prev, &mut self.cur);
                // `cur` now holds the capture before, whose ids the resolution may keep.
            }
            None => {
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
    fn link(&mut self, (frame, cframe): (u64, u64), n: usize, wrote: Option<RawFrame>) {
        self.cur.links.push(Link { frame, cframe, n: n as u32, wrote });
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
        // Only at a link that wrote a frame (a link of a C-stack entry marks the frame before
        // it, which this walk wrote), with room for every frame left, within the walk's bound.
        let left = p.frames.len() - l.n as usize;
        if l.cframe != cframe || l.wrote.is_none() || n + left >= out.len() {
            return None;
        }
        if links + (p.links.len() - j) > chain::MAX_LINKS {
            return None;
        }
        // Each link followed again from its recorded frame, in order, stopping at the first
        // difference: every link followed is one the links already found equal lead to.
        for k in j..p.links.len() {
            let x = p.links[k];
            // The frame before it as this capture's walk would hold it (a C-stack entry link
            // marks it; its final value is the one to compare).
            let mut two = [x.n.checked_sub(1).map_or(RawFrame::default(), |i| p.frames[i as usize]); 2];
            let at = usize::from(x.n > 0);
            let (next, next_cframe) = p.links.get(k + 1).map_or((0, None), |y| (y.frame, Some(y.cframe)));
            let same =
                match chain::follow(self.mem, self.layout, self.code_type, (x.frame, x.cframe), &mut two, at)
                {
                    Ok((nx, nc, wrote)) => {
                        nx == next
                            && next_cframe.is_none_or(|c| c == nc)
                            && (if wrote {
                                x.wrote == Some(two[at])
                            } else {
                                x.wrote.is_none() && two[0] == two[1]
                            })
                    }
                    Err(_) => false,
                };
            if !same {
                self.failed_at = Some(k);
                return None;
            }
        }
        out[n..n + left].copy_from_slice(&p.frames[l.n as usize..]);
        // This capture's record: its own links, then the previous capture's.
        let shift_n = n as i64 - i64::from(l.n);
        self.cur
            .links
            .extend(p.links[j..].iter().map(|x| Link { n: (i64::from(x.n) + shift_n) as u32, ..*x }));
        *self.from_prev = Some((n, l.n as usize));
        Some(n + left)
    }
}
