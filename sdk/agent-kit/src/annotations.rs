//! Annotation frames: what the program's own annotations say about a launch, put into its
//! stack between the call site and the device work.
//!
//! A framework that runs compiled code marks its operations with annotations (ranges pushed
//! and popped on the launching thread around each operation, such as the NVTX ranges a
//! compiler's runtime emits around every operation it launches). An agent that reads them
//! turns the ones it understands into *labels* ([`Annotations::label`]: a frame of that text,
//! defined like a Python frame, [`wire::MSG_PY_FRAMES`]) and pushes them on the calling
//! thread ([`push_frame`]/[`pop_frame`]); every launch stack taken meanwhile gets them as its
//! innermost frames, so the flame graph reads `call site → operation → kernel`.
//!
//! Work done to prepare code rather than run it (a compiler's autotuning, which launches
//! kernels to time them) is *compile-time*: between [`Annotations::enter_compile`] and
//! [`Annotations::exit_compile`] a thread's launches get the [`COMPILE_MARKER`] frame. Such work
//! often runs on the compiler's own threads, which run no Python: when exactly one thread of
//! the process is in compile-time work and gave its stack (the call that started the
//! compilation), a launch without Python frames of its own gets the marker and, outermost,
//! that stack, so it sits under the line that triggered the compilation.
//!
//! The per-thread state is thread-local (no lock at a launch); the process-wide state is read
//! through one atomic when no compilation runs.

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Mutex, OnceLock};

use crate::wire;

pub use crate::wire::names::COMPILE_MARKER;

/// Label ids: Python frame ids ([`wire::PY_FRAME_TAG`]) above every id the Python side makes.
const LABEL_BASE: u64 = wire::PY_FRAME_TAG | (1 << 44);
/// Most labels made; past it, [`Annotations::label`] gives the last one made for every new text.
const MAX_LABELS: u64 = 1 << 20;
/// Most annotation frames a thread holds at once (deeper pushes are counted, not kept).
const MAX_DEPTH: usize = 64;

/// True when `id` is an annotation label rather than a Python frame or a code address.
pub fn is_label(id: u64) -> bool {
    wire::is_python_frame(id) && id >= LABEL_BASE
}

/// True when `id` is a frame of interpreted code (a Python frame id, not a label).
fn is_interpreted(id: u64) -> bool {
    wire::is_python_frame(id) && id < LABEL_BASE
}

#[derive(Debug, Default)]
struct Table {
    ids: HashMap<String, u64>,
    pending: Vec<(u64, String)>,
    sent: Vec<(u64, String)>,
}

/// The stack of a thread in compile-time work, for the launches of other threads.
#[derive(Debug)]
struct Context {
    tid: u32,
    frames: Vec<u64>,
}

/// Labels made so far and the threads in compile-time work.
#[derive(Debug, Default)]
pub struct Annotations {
    table: Mutex<Table>,
    resend: AtomicBool,
    compile_marker: OnceLock<u64>,
    /// Threads in compile-time work (their outermost range).
    compiling: AtomicU32,
    contexts: Mutex<Vec<Context>>,
}

#[derive(Debug, Default)]
struct ThreadState {
    /// Label ids, outermost first.
    frames: Vec<u64>,
    /// Pushes past [`MAX_DEPTH`] not kept (their pops are not taken off the kept frames).
    lost: u32,
    /// Nesting of compile-time work on this thread.
    compile: u32,
}

thread_local! {
    static THREAD: RefCell<ThreadState> = RefCell::new(ThreadState::default());
}

/// Pushes label `id` on the calling thread: its next launches get it (innermost of those held).
pub fn push_frame(id: u64) {
    let _ = THREAD.try_with(|t| {
        let mut t = t.borrow_mut();
        if t.frames.len() < MAX_DEPTH {
            t.frames.push(id);
        } else {
            t.lost += 1;
        }
    });
}

/// Takes the calling thread's innermost label off.
pub fn pop_frame() {
    let _ = THREAD.try_with(|t| {
        let mut t = t.borrow_mut();
        if t.lost > 0 {
            t.lost -= 1;
        } else {
            t.frames.pop();
        }
    });
}

fn tid() -> u32 {
    // SAFETY: gettid has no preconditions.
    unsafe { libc::syscall(libc::SYS_gettid) as u32 }
}

impl Annotations {
    /// The label of `text`: a frame id whose definition (the text) goes out before the next
    /// stacks ([`Annotations::put_definitions`]).
    pub fn label(&self, text: &str) -> u64 {
        let Ok(mut t) = self.table.lock() else { return LABEL_BASE };
        if let Some(&id) = t.ids.get(text) {
            return id;
        }
        let n = (t.ids.len() as u64).min(MAX_LABELS - 1);
        let id = LABEL_BASE + n;
        if n < MAX_LABELS - 1 {
            t.ids.insert(text.to_owned(), id);
            t.pending.push((id, text.to_owned()));
        }
        id
    }

    fn compile_marker(&self) -> u64 {
        *self.compile_marker.get_or_init(|| self.label(COMPILE_MARKER))
    }

    /// The calling thread enters compile-time work. `context` is its stack (innermost first,
    /// as launch stacks are written) for the launches of threads without Python frames; it is
    /// kept only for the thread's outermost compile-time range and when it holds Python frames.
    pub fn enter_compile(&self, context: Option<Vec<u64>>) {
        let first = THREAD
            .try_with(|t| {
                let mut t = t.borrow_mut();
                t.compile += 1;
                t.compile == 1
            })
            .unwrap_or(false);
        if !first {
            return;
        }
        self.compiling.fetch_add(1, Ordering::Relaxed);
        let Some(frames) = context.filter(|f| f.iter().any(|&a| is_interpreted(a))) else { return };
        if let Ok(mut c) = self.contexts.lock() {
            c.push(Context { tid: tid(), frames });
        }
    }

    /// The calling thread leaves compile-time work (an exit without an entry is ignored).
    pub fn exit_compile(&self) {
        let last = THREAD
            .try_with(|t| {
                let mut t = t.borrow_mut();
                let was = t.compile;
                t.compile = was.saturating_sub(1);
                was == 1
            })
            .unwrap_or(false);
        if !last {
            return;
        }
        self.compiling.fetch_sub(1, Ordering::Relaxed);
        let me = tid();
        if let Ok(mut c) = self.contexts.lock() {
            c.retain(|x| x.tid != me);
        }
    }

    /// True while the calling thread is in compile-time work.
    pub fn in_compile(&self) -> bool {
        THREAD.try_with(|t| t.borrow().compile > 0).unwrap_or(false)
    }

    /// Puts the calling thread's annotation frames into the launch stack `stack[..n]`
    /// (innermost first): its labels, innermost first, then [`COMPILE_MARKER`] in compile-time
    /// work, ahead of the stack; for a stack without Python frames while one other thread is
    /// in compile-time work, the marker and that thread's stack after it. Returns the new
    /// length (frames past `stack.len()` are cut).
    #[inline]
    pub fn decorate(&self, stack: &mut [u64], n: usize) -> usize {
        let compiling = self.compiling.load(Ordering::Relaxed) > 0;
        THREAD
            .try_with(|t| {
                let t = t.borrow();
                if t.frames.is_empty() && !compiling {
                    return n;
                }
                self.decorate_with(&t, stack, n, compiling)
            })
            .unwrap_or(n)
    }

    #[cold]
    fn decorate_with(&self, t: &ThreadState, stack: &mut [u64], n: usize, compiling: bool) -> usize {
        let n = n.min(stack.len());
        let own_python = stack[..n].iter().any(|&a| is_interpreted(a));
        let mut front: Vec<u64> = t.frames.iter().rev().copied().collect();
        let mut marked = false;
        if t.compile > 0 {
            front.push(self.compile_marker());
            marked = true;
        }
        let mut n = prepend(stack, n, &front);
        if compiling && !own_python {
            let me = tid();
            let context = self.contexts.lock().ok().and_then(|c| {
                let others: Vec<&Context> = c.iter().filter(|x| x.tid != me).collect();
                (others.len() == 1).then(|| others[0].frames.clone())
            });
            if let Some(frames) = context {
                if !marked && n < stack.len() {
                    stack[n] = self.compile_marker();
                    n += 1;
                }
                for f in frames {
                    if n == stack.len() {
                        break;
                    }
                    stack[n] = f;
                    n += 1;
                }
            }
        }
        n
    }

    /// Appends the definitions of the labels made since the last call ([`wire::MSG_PY_FRAMES`]).
    pub fn put_definitions(&self, out: &mut Vec<u8>) {
        let Ok(mut t) = self.table.lock() else { return };
        if self.resend.swap(false, Ordering::Relaxed) {
            wire::put_py_frames(out, &t.sent);
        }
        let new = std::mem::take(&mut t.pending);
        wire::put_py_frames(out, &new);
        t.sent.extend(new);
    }

    /// Sends every definition again at the next [`Annotations::put_definitions`] (a new host).
    pub fn resend_all(&self) {
        self.resend.store(true, Ordering::Relaxed);
    }
}

/// Shifts `stack[..n]` right by `front.len()` (cutting what passes the end) and writes `front`
/// before it; returns the new length.
fn prepend(stack: &mut [u64], n: usize, front: &[u64]) -> usize {
    if front.is_empty() {
        return n;
    }
    let k = front.len().min(stack.len());
    let keep = n.min(stack.len() - k);
    stack.copy_within(0..keep, k);
    stack[..k].copy_from_slice(&front[..k]);
    k + keep
}

#[cfg(test)]
mod tests {
    use super::*;

    const PY: u64 = wire::PY_FRAME_TAG | 7;

    #[test]
    fn labels_sit_between_the_call_site_and_the_device_work() {
        let a = Annotations::default();
        let op = a.label("[xla] jit(f)/dot_general (f.py:3)");
        assert_eq!(a.label("[xla] jit(f)/dot_general (f.py:3)"), op, "one id per text");
        assert!(is_label(op) && !is_label(PY) && !is_label(0x4000));
        let mut stack = [0u64; 8];
        stack[..3].copy_from_slice(&[0x4000, PY, 0x5000]);
        assert_eq!(a.decorate(&mut stack, 3), 3, "nothing pushed: the stack as is");
        push_frame(a.label("outer"));
        push_frame(op);
        let n = a.decorate(&mut stack, 3);
        assert_eq!(&stack[..n], &[op, a.label("outer"), 0x4000, PY, 0x5000]);
        pop_frame();
        pop_frame();
        let mut out = Vec::new();
        a.put_definitions(&mut out);
        let defs = wire::read_py_frames(&out[wire::HEADER_BYTES..]);
        assert_eq!(defs.len(), 2);
        assert_eq!(defs[0].1, "[xla] jit(f)/dot_general (f.py:3)");
        let mut again = Vec::new();
        a.put_definitions(&mut again);
        assert!(again.is_empty(), "each definition goes out once");
        a.resend_all();
        a.put_definitions(&mut again);
        assert_eq!(wire::read_py_frames(&again[wire::HEADER_BYTES..]).len(), 2, "all again for a new host");
    }

    #[test]
    fn a_full_stack_keeps_its_innermost_frames() {
        let mut stack = [1, 2, 3, 4];
        assert_eq!(prepend(&mut stack, 4, &[9, 8]), 4);
        assert_eq!(stack, [9, 8, 1, 2]);
    }

    #[test]
    fn compile_time_work_is_marked_and_other_threads_get_the_compiling_stack() {
        let a = std::sync::Arc::new(Annotations::default());
        let mut stack = [0u64; 8];
        stack[..2].copy_from_slice(&[0x4000, PY]);
        a.enter_compile(Some(vec![0x6000, PY, 0x7000]));
        assert!(a.in_compile());
        let n = a.decorate(&mut stack, 2);
        let marker = a.label(COMPILE_MARKER);
        assert_eq!(&stack[..n], &[marker, 0x4000, PY], "the compiling thread's own launches");
        // A compiler thread without Python frames: the marker, then the compiling stack.
        let b = a.clone();
        let got = std::thread::spawn(move || {
            let mut s = [0u64; 8];
            s[..2].copy_from_slice(&[0x1000, 0x2000]);
            let n = b.decorate(&mut s, 2);
            s[..n].to_vec()
        })
        .join()
        .unwrap();
        assert_eq!(got, [0x1000, 0x2000, marker, 0x6000, PY, 0x7000]);
        a.exit_compile();
        assert!(!a.in_compile());
        let b = a.clone();
        let got = std::thread::spawn(move || {
            let mut s = [0x1000u64, 0, 0];
            b.decorate(&mut s, 1)
        })
        .join()
        .unwrap();
        assert_eq!(got, 1, "after the compilation nothing is added");
        a.exit_compile();
        assert!(!a.in_compile(), "an unbalanced exit stays at zero");
    }
}
