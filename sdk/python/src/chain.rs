//! A thread's Python frames: the frame chain from its thread state, innermost first, as code
//! object + instruction offset pairs, each marked when it is the first frame its eval-loop call
//! ran (where the native stack's `_PyEval_EvalFrameDefault` frame sits). No allocation: the
//! agent calls this at every launch.

use crate::cpython_offsets::{self, Frames, Layout};
use crate::memory::Memory;
use crate::reuse::{NoReuse, Reuse};
use crate::Error;

/// Most links followed (a corrupt chain that loops ends here).
pub(crate) const MAX_LINKS: usize = 4096;

/// One Python frame, unresolved.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct RawFrame {
    /// Address of the code object.
    pub code: u64,
    /// Byte offset of the current instruction from the start of the code's instructions, or
    /// `u64::MAX` when the frame has not started.
    pub offset: u64,
    /// The first frame of its eval-loop call: the native stack's eval-loop frame stands for this
    /// frame and the frames after it back to the previous entry.
    pub entry: bool,
    /// For an entry frame of 3.11 and later: the address of its eval-loop call's marker on the C
    /// stack, a local of that `_PyEval_EvalFrameDefault` call (3.11: its `_PyCFrame`; 3.12,
    /// 3.13: its entry frame owned by the C stack), so the native frame that runs the call is
    /// the one whose stack range holds it ([`crate::merge::merge_placed`]); 0 when not known.
    pub marker: u64,
}

impl RawFrame {
    /// The instruction offset, when the frame has started.
    pub fn offset(&self) -> Option<u64> {
        (self.offset != u64::MAX).then_some(self.offset)
    }
}

/// Reads the frames of the thread state at `tstate` into `out`, innermost first; returns how many
/// were written and whether the chain went on past `out`. `code_type` is the address of
/// `PyCode_Type` when known: every code pointer is checked against it.
pub fn walk(
    mem: &impl Memory,
    layout: &Layout,
    tstate: u64,
    code_type: Option<u64>,
    out: &mut [RawFrame],
) -> Result<(usize, bool), Error> {
    walk_with(mem, layout, tstate, code_type, out, &mut NoReuse)
}

/// [`walk`] that records the links it follows in `re` and takes the frames of a previous walk
/// from a link on where they still hold ([`crate::reuse`]).
pub(crate) fn walk_with(
    mem: &impl Memory,
    layout: &Layout,
    tstate: u64,
    code_type: Option<u64>,
    out: &mut [RawFrame],
    re: &mut impl Reuse,
) -> Result<(usize, bool), Error> {
    let mut frame = mem.u64(tstate + layout.tstate_frame)?;
    // 3.11: the _PyCFrame of the eval-loop call running `frame` (one per call, chained outward).
    let mut cframe = 0;
    if let Some(current) = layout.cframe_current_frame {
        if frame == 0 {
            return Ok((0, false));
        }
        if layout.owner_cstack.is_none() && layout.cframe_previous.is_some() {
            cframe = frame;
        }
        frame = mem.u64(frame + current)?;
    }
    let mut n = 0;
    for links in 0..MAX_LINKS {
        if frame == 0 {
            return Ok((n, false));
        }
        if n == out.len() {
            return Ok((n, true));
        }
        if let Some(total) = re.reuse(frame, cframe, n, links, out) {
            return Ok((total, false));
        }
        let at = (frame, cframe);
        let (next, next_cframe, wrote) = follow(mem, layout, code_type, at, out, n)?;
        re.link(at, n, wrote.then(|| out[n]));
        n += usize::from(wrote);
        (frame, cframe) = (next, next_cframe);
    }
    Err(Error::Object { addr: frame, what: "the end of a frame chain" })
}

/// Follows the link at frame `at.0` (3.11's `_PyCFrame` then: `at.1`), `n` frames written to
/// `out` before it (`n < out.len()`): writes its frame to `out[n]` (returns true), or, for a
/// C-stack entry frame, marks `out[n - 1]` as its eval call's entry frame. Returns the next
/// frame, the next `_PyCFrame`, and whether a frame was written.
#[inline(always)]
pub(crate) fn follow(
    mem: &impl Memory,
    layout: &Layout,
    code_type: Option<u64>,
    (frame, mut cframe): (u64, u64),
    out: &mut [RawFrame],
    n: usize,
) -> Result<(u64, u64, bool), Error> {
    let (next, wrote) = match layout.frames {
        Frames::Objects { back, code, lasti, lasti_in_units } => {
            let lasti = mem.u32(frame + lasti)? as i32;
            let offset = match lasti {
                i32::MIN..=-1 => u64::MAX,
                l if lasti_in_units => l as u64 * 2,
                l => l as u64,
            };
            out[n] = RawFrame { code: mem.u64(frame + code)?, offset, entry: true, marker: 0 };
            (mem.u64(frame + back)?, true)
        }
        Frames::Interpreter { code, previous, instr, owner, is_entry } => {
            let own = mem.u8(frame + owner)?;
            let next = mem.u64(frame + previous)?;
            if layout.owner_cstack == Some(own) {
                if n > 0 {
                    out[n - 1].entry = true;
                    out[n - 1].marker = frame;
                }
                (next, false)
            } else {
                let c = mem.u64(frame + code)?;
                let start = c + layout.code_instructions.unwrap_or(0);
                let ip = mem.u64(frame + instr)?;
                let offset = if ip >= start { ip - start } else { u64::MAX };
                let entry = match is_entry {
                    Some(at) => mem.u8(frame + at)? != 0,
                    None => false,
                };
                let mut marker = 0;
                if entry && cframe != 0 {
                    // The next call out is the _PyCFrame's previous one, whose current frame
                    // is the next frame of the chain (else the chains do not pair up, e.g.
                    // frames run by a PEP 523 evaluator: no more markers).
                    marker = cframe;
                    cframe = mem.u64(cframe + layout.cframe_previous.unwrap_or(0))?;
                    if cframe != 0 && mem.u64(cframe + layout.cframe_current_frame.unwrap_or(0))? != next {
                        cframe = 0;
                    }
                }
                out[n] = RawFrame { code: c, offset, entry, marker };
                (next, true)
            }
        }
    };
    let last = n + usize::from(wrote);
    if let Some(ty) = code_type {
        if last > 0 && mem.u64(out[last - 1].code + cpython_offsets::OBJECT_TYPE)? != ty {
            return Err(Error::Object { addr: out[last - 1].code, what: "a code object" });
        }
    }
    Ok((next, cframe, wrote))
}
