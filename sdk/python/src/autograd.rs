//! PyTorch's autograd engine runs a `backward()` on its own C++ threads (`pt_autograd_N`, one
//! per device): their launches have no Python frame of their own. The thread that called
//! `loss.backward()` (or `torch.autograd.grad`) waits inside the engine meanwhile, its Python
//! frames standing still, innermost `_engine_run_backward` (`torch/autograd/graph.py`; the
//! `backward`/`grad` functions of `torch/autograd/__init__.py` before PyTorch 2.3).
//!
//! [`Interpreter::capture_backward_caller`] finds the threads of the interpreter whose innermost
//! Python frame is such a call. When exactly one thread is in one, the engine's threads work
//! for that call only (the call waits until its graph task, which the launching engine thread
//! is running, has finished), so its Python frames are exactly the Python code the launch was
//! made for. With several such callers the engine serves them all and nothing is attributed.
//!
//! The other threads are read through `process_vm_readv` on this process (a thread running
//! Python may free its frames while they are read; a failed read is an error, never a fault);
//! the one caller found is read directly, as it cannot leave its call before the launch
//! returns. Each engine thread keeps what it found from launch to launch and looks again only
//! at what the GIL's hand-over record says may have changed (`callers.rs`): a launch
//! reads one thread's innermost frame in one system call (none for the main thread from 3.11
//! on), then the caller's frames as any launch reads its own.

use std::collections::HashMap;
use std::ffi::{c_void, CStr};
use std::sync::atomic::Ordering;
use std::sync::Mutex;

use crate::code::Code;
use crate::gil::Gil;
use crate::memory::ProcessMemory;
use crate::own::Interpreter;

type InterpreterHead = unsafe extern "C" fn() -> *mut c_void;
type ThreadHead = unsafe extern "C" fn(*mut c_void) -> *mut c_void;

/// Most thread states looked at (a corrupt list that loops ends here).
pub(crate) const MAX_THREADS: usize = 1024;

/// The C API entry points of the interpreter's thread list.
#[derive(Debug, Clone, Copy)]
pub struct ThreadList {
    head: InterpreterHead,
    threads: ThreadHead,
}

impl ThreadList {
    /// The entry points, through the symbol lookup `sym`; `None` when not exported.
    pub(crate) fn find(sym: &dyn Fn(&CStr) -> Option<*mut c_void>) -> Option<ThreadList> {
        let head = sym(c"PyInterpreterState_Head")?;
        let threads = sym(c"PyInterpreterState_ThreadHead")?;
        // SAFETY: C API functions with exactly these signatures (`PyInterpreterState *(void)`,
        // `PyThreadState *(PyInterpreterState *)`).
        unsafe {
            Some(ThreadList {
                head: std::mem::transmute::<*mut c_void, InterpreterHead>(head),
                threads: std::mem::transmute::<*mut c_void, ThreadHead>(threads),
            })
        }
    }
}

/// What [`Interpreter::capture_backward_caller`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Caller {
    /// One thread is in a backward call: this many of its frames were written.
    Found(usize),
    /// Several threads are.
    Ambiguous,
    /// None is (or its frames could not be read).
    None,
}

/// Code objects already classified: address -> is a backward entry.
static CLASSIFIED: Mutex<Option<HashMap<u64, bool>>> = Mutex::new(None);

/// The frame between an autograd engine thread's stack and the Python frames of the
/// `backward()` call it works for (above it in a flame graph): written by the agents, read by
/// the sinks that explain launches.
pub const AUTOGRAD_MARKER: &str = "[autograd engine thread, running the backward() above]";

/// True for the functions through which Python enters the autograd engine.
pub fn is_backward_entry(function: &str, file: &str) -> bool {
    function == "_engine_run_backward"
        || (file.ends_with("autograd/__init__.py") && (function == "backward" || function == "grad"))
}

/// True when thread name `name` is one of the autograd engine's device threads.
pub fn is_engine_thread(name: &[u8]) -> bool {
    name.starts_with(b"pt_autograd_")
}

impl Interpreter {
    /// For a launch of an autograd engine thread: the Python frames (innermost first, as
    /// [`Interpreter::capture`] writes them) of the one thread blocked in a backward call.
    /// Counts the outcome in [`Interpreter::counts`]. What the calling thread found at its
    /// previous launches is kept and looked at again only where it may have changed
    /// (`callers.rs`).
    pub fn capture_backward_caller(&self, out: &mut [(u64, bool)]) -> Caller {
        self.with_backward_caller(|caller, frames| {
            let k = frames.len().min(out.len());
            out[..k].copy_from_slice(&frames[..k]);
            match caller {
                Caller::Found(_) => Caller::Found(k),
                other => other,
            }
        })
    }

    /// Like [`Interpreter::capture_backward_caller`], but hands `f` the frames where they were
    /// resolved (the calling thread's reused buffer: nothing is copied; empty unless
    /// [`Caller::Found`]). `f` must not capture again.
    #[inline]
    pub fn with_backward_caller<R>(&self, f: impl FnOnce(Caller, &[(u64, bool)]) -> R) -> R {
        self.with_backward_caller_reusing(false, f)
    }

    /// [`Interpreter::with_backward_caller`] that, with `reuse`, takes the frames of the
    /// calling thread's previous capture of the caller's chain where every field it read still
    /// holds (exact: `reuse.rs`).
    #[inline]
    pub fn with_backward_caller_reusing<R>(
        &self,
        reuse: bool,
        f: impl FnOnce(Caller, &[(u64, bool)]) -> R,
    ) -> R {
        let found = match self.heads() {
            Some((head, own)) => {
                let gil = self.gil().map(|g| g.read());
                crate::callers::find(self, head, own, gil)
            }
            None => Ok(None),
        };
        self.with_found(found, reuse, f)
    }

    /// [`Interpreter::capture_backward_caller`] without what earlier launches found: scans
    /// the interpreter's threads now (what every launch paid before they were kept; the
    /// benchmarks' reference).
    pub fn capture_backward_caller_scanning(&self, out: &mut [(u64, bool)]) -> Caller {
        let found = match self.heads() {
            Some((head, own)) => crate::callers::find(self, head, own, None),
            None => Ok(None),
        };
        self.with_found(found, false, |caller, frames| {
            let k = frames.len().min(out.len());
            out[..k].copy_from_slice(&frames[..k]);
            caller
        })
    }

    /// Hands `f` the frames of the caller `found`, counted.
    fn with_found<R>(
        &self,
        found: Result<Option<u64>, ()>,
        reuse: bool,
        f: impl FnOnce(Caller, &[(u64, bool)]) -> R,
    ) -> R {
        let c = &self.counts;
        match found {
            Ok(Some(tstate)) => self.with_frames_of_reusing(tstate, reuse, |frames| match frames {
                Some(frames) => {
                    c.autograd_attributed.fetch_add(1, Ordering::Relaxed);
                    f(Caller::Found(frames.len()), frames)
                }
                None => {
                    c.autograd_unattributed.fetch_add(1, Ordering::Relaxed);
                    f(Caller::None, &[])
                }
            }),
            Err(()) => {
                c.autograd_ambiguous.fetch_add(1, Ordering::Relaxed);
                f(Caller::Ambiguous, &[])
            }
            Ok(None) => {
                c.autograd_unattributed.fetch_add(1, Ordering::Relaxed);
                f(Caller::None, &[])
            }
        }
    }

    /// The interpreter's first thread state and the calling thread's (0: none); `None` before
    /// the interpreter is initialised or without its thread list.
    fn heads(&self) -> Option<(u64, u64)> {
        let list = self.threads?;
        // SAFETY: C API functions without preconditions once the interpreter is initialised
        // (checked first); they read the interpreter's list heads, which live as long as it.
        unsafe {
            if (self.is_initialized)() == 0 {
                return None;
            }
            let interp = (list.head)();
            if interp.is_null() {
                return None;
            }
            Some(((list.threads)(interp) as u64, (self.this_thread_state)() as u64))
        }
    }

    /// The GIL, found at the first call (the interpreter is initialised: `heads` said so).
    fn gil(&self) -> Option<Gil> {
        *self.gil.get_or_init(|| {
            let list = self.threads?;
            // SAFETY: as in `heads`, which the caller called first.
            let interp = unsafe { (list.head)() } as u64;
            Gil::find(self.layout, self.runtime.map(|r| r.0), interp, self.free_threaded)
        })
    }

    /// True when the code object at `code` is a backward entry (classified once per address).
    pub(crate) fn is_backward_code(&self, mem: &ProcessMemory, code: u64) -> bool {
        let Ok(mut cache) = CLASSIFIED.lock() else { return false };
        let cache = cache.get_or_insert_with(HashMap::new);
        if let Some(&yes) = cache.get(&code) {
            return yes;
        }
        let Ok(c) = Code::read(mem, self.layout, code) else { return false };
        let yes = is_backward_entry(&c.function, &c.file);
        if cache.len() > 1 << 12 {
            cache.clear();
        }
        cache.insert(code, yes);
        yes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backward_entries_and_engine_threads() {
        assert!(is_backward_entry("_engine_run_backward", "/x/torch/autograd/graph.py"));
        assert!(is_backward_entry("backward", "/x/site-packages/torch/autograd/__init__.py"));
        assert!(is_backward_entry("grad", "/x/site-packages/torch/autograd/__init__.py"));
        assert!(!is_backward_entry("backward", "/x/site-packages/torch/_tensor.py"));
        assert!(!is_backward_entry("train", "workload.py"));
        assert!(is_engine_thread(b"pt_autograd_0"));
        assert!(is_engine_thread(b"pt_autograd_12"));
        assert!(!is_engine_thread(b"python3"));
    }
}
