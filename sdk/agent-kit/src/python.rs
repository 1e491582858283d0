//! Python frames in launch stacks: where the process runs CPython, the launching thread's
//! Python functions replace the eval-loop frames of its native stack (`xpuprof-python` does the
//! reading and the merge; this is the agents' switch, cache and wire side).
//!
//! `auto` finds the interpreter at the first launch stack by the symbols the process exports
//! (a `python3.X` executable or a `libpython3.X.so`), so a program that is not Python pays one
//! lookup per process and nothing per launch.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;

use std::cell::Cell;

use xpuprof_python::autograd::{is_engine_thread, Caller, AUTOGRAD_MARKER};
use xpuprof_python::merge;
use xpuprof_python::own::Interpreter;

use crate::wire;

/// Eval-loop calls placed by their C-stack marker per launch stack (a deeper stack places them
/// all by the eval loop's symbol, counted).
const MAX_RUNS: usize = 32;

/// `frames` (with `raw`, the same frames as read) merged into `native` (stack pointers `sp`)
/// into `out`, each run of Python frames in the native frame holding its eval call's marker;
/// counts how the runs were placed.
#[inline]
fn place_and_merge(
    py: &Interpreter,
    native: &[u64],
    sp: &[u64],
    frames: &[(u64, bool)],
    raw: &[xpuprof_python::chain::RawFrame],
    out: &mut [u64],
) -> usize {
    let runs = merge::runs(frames);
    let by_symbol = |n: usize| {
        if n > 0 {
            py.counts.runs_by_symbol.fetch_add(n as u64, Ordering::Relaxed);
        }
    };
    if runs > MAX_RUNS {
        // More eval-loop calls than places kept (rare): all by symbol.
        by_symbol(runs);
        return merge::merge(native, |ra| py.is_eval(ra), frames, out).len;
    }
    let mut places = [None; MAX_RUNS];
    let sp = &sp[..sp.len().min(native.len())];
    // Run k ends at the k-th entry frame (a chain read only in part ends with a run without one:
    // no marker, placed by symbol).
    merge::frames_holding(sp, raw.iter().filter(|f| f.entry).map(|f| f.marker), &mut places);
    let merged = merge::merge_placed(native, |ra| py.is_eval(ra), frames, &mut places[..runs], out);
    by_symbol(merged.by_symbol);
    merged.len
}

thread_local! {
    /// Whether this thread is an autograd engine thread (by its name), once known.
    static ENGINE_THREAD: Cell<Option<bool>> = const { Cell::new(None) };
}

/// True on PyTorch's autograd engine threads (`pt_autograd_N`).
pub(crate) fn on_engine_thread() -> bool {
    ENGINE_THREAD.with(|c| {
        if let Some(v) = c.get() {
            return v;
        }
        let mut name = [0u8; 17];
        // SAFETY: PR_GET_NAME writes at most 16 bytes and a NUL into the 17-byte buffer.
        let ok = unsafe { libc::prctl(libc::PR_GET_NAME, name.as_mut_ptr() as libc::c_ulong, 0, 0, 0) } == 0;
        let v = ok && is_engine_thread(&name);
        c.set(Some(v));
        v
    })
}

/// Python frame definitions sent (tagged id, text) and their functions' first lines.
type Sent = (Vec<(u64, String)>, Vec<(u64, u32)>);

/// The Python side of an agent's launch stacks.
#[derive(Debug, Default)]
pub struct PythonFrames {
    enabled: AtomicBool,
    interpreter: OnceLock<Option<Interpreter>>,
    /// The frame id of [`AUTOGRAD_MARKER`], made at the first attributed launch.
    autograd_marker: OnceLock<u64>,
    /// Why the interpreter could not be read (said once by the agent).
    pub problem: OnceLock<String>,
    /// Every definition sent, and every first line, for a new host ([`PythonFrames::resend_all`]).
    sent: std::sync::Mutex<Sent>,
    resend: AtomicBool,
}

impl PythonFrames {
    /// Turns Python frames on (`python = "auto"`) or off.
    pub fn set_enabled(&self, on: bool) {
        self.enabled.store(on, Ordering::Relaxed);
    }

    /// The interpreter, found on first use.
    pub fn interpreter(&self) -> Option<&Interpreter> {
        if !self.enabled.load(Ordering::Relaxed) {
            return None;
        }
        self.interpreter
            .get_or_init(|| match Interpreter::find() {
                Ok(found) => found,
                Err(e) => {
                    let _ = self.problem.set(e.to_string());
                    None
                }
            })
            .as_ref()
    }

    /// Writes `native` with the calling thread's Python frames merged in into `out`; returns the
    /// frames written (`native` as is when Python frames are off or the process runs no CPython).
    /// `sp[i]` is the stack pointer of `native[i]`'s frame (as far as it goes): each run of
    /// Python frames replaces the native frame whose stack range holds its eval-loop call's
    /// marker ([`merge::merge_placed`]; the eval loop's symbol only where no marker is known).
    #[inline]
    pub fn merge(&self, native: &[u64], sp: &[u64], out: &mut [u64]) -> usize {
        self.merge_reusing(native, sp, out, false).0
    }

    /// [`PythonFrames::merge`] that, with `reuse`, keeps the resolved frames of the thread's
    /// previous capture where every field read of them is unchanged ([`crate::reuse`]); also
    /// returns whether it kept any.
    #[inline]
    pub fn merge_reusing(&self, native: &[u64], sp: &[u64], out: &mut [u64], reuse: bool) -> (usize, bool) {
        let copy = |out: &mut [u64]| {
            let n = native.len().min(out.len());
            out[..n].copy_from_slice(&native[..n]);
            n
        };
        let Some(py) = self.interpreter() else { return (copy(out), false) };
        // The frames are merged where the capture wrote them (the thread's reused buffer).
        let (merged, reused) = py.with_capture_reusing(reuse, |frames, raw| {
            (!frames.is_empty()).then(|| place_and_merge(py, native, sp, frames, raw, out))
        });
        let n = match merged {
            Some(n) => n,
            None if on_engine_thread() => self.autograd(py, native, out, reuse),
            None => copy(out),
        };
        (n, reused)
    }

    /// A launch of an autograd engine thread: its native frames, then (outermost last) the
    /// marker [`AUTOGRAD_MARKER`] and the Python frames of the thread whose backward call it
    /// runs, when exactly one is known ([`xpuprof_python::autograd`]). Not cold: in a training
    /// step most launches are the engine's.
    fn autograd(&self, py: &Interpreter, native: &[u64], out: &mut [u64], reuse: bool) -> usize {
        let mut n = native.len().min(out.len());
        out[..n].copy_from_slice(&native[..n]);
        // The caller's frames are appended where they were resolved (the thread's reused buffer).
        py.with_backward_caller_reusing(reuse, |caller, frames| {
            if let Caller::Found(_) = caller {
                let marker = *self.autograd_marker.get_or_init(|| py.marker(AUTOGRAD_MARKER));
                for f in std::iter::once(marker).chain(frames.iter().map(|&(id, _)| id)) {
                    if n == out.len() {
                        break;
                    }
                    out[n] = f;
                    n += 1;
                }
            }
        });
        n
    }

    /// Appends the definitions of the Python frames made since the last call
    /// ([`wire::MSG_PY_FRAMES`]), then their functions' first lines ([`wire::MSG_PY_FIRST_LINES`]).
    pub fn put_definitions(&self, out: &mut Vec<u8>) {
        if let Some(Some(py)) = self.interpreter.get() {
            let (new, lines) = (py.take_definitions(), py.take_first_lines());
            let Ok(mut sent) = self.sent.lock() else { return };
            if self.resend.swap(false, Ordering::Relaxed) {
                wire::put_py_frames(out, &sent.0);
                wire::put_py_first_lines(out, &sent.1);
            }
            wire::put_py_frames(out, &new);
            wire::put_py_first_lines(out, &lines);
            sent.0.extend(new);
            sent.1.extend(lines);
        }
    }

    /// Sends every definition again at the next [`PythonFrames::put_definitions`]: a new host
    /// (an agent attached again) knows none of the frame ids the threads have cached.
    pub fn resend_all(&self) {
        self.resend.store(true, Ordering::Relaxed);
    }

    /// Appends the capture counts ([`wire::MSG_PY_COUNTS`]) when an interpreter was found.
    pub fn put_counts(&self, out: &mut Vec<u8>) {
        if let Some(Some(py)) = self.interpreter.get() {
            let c = &py.counts;
            let v = [
                &c.with_frames,
                &c.without_frames,
                &c.errors,
                &c.autograd_attributed,
                &c.autograd_ambiguous,
                &c.autograd_unattributed,
                &c.runs_by_symbol,
            ]
            .map(|a| a.load(Ordering::Relaxed).to_le_bytes());
            wire::put_message(out, wire::MSG_PY_COUNTS, &v.each_ref().map(|b| &b[..]));
        }
    }
}
