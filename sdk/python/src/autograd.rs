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
//! returns.

use std::collections::HashMap;
use std::ffi::{c_void, CStr};
use std::sync::Mutex;

use crate::chain::{self, RawFrame};
use crate::code::Code;
use crate::memory::{Memory, OwnMemory, ProcessMemory};
use crate::own::{Interpreter, MAX_FRAMES};

type InterpreterHead = unsafe extern "C" fn() -> *mut c_void;
type ThreadHead = unsafe extern "C" fn(*mut c_void) -> *mut c_void;

/// `PyThreadState.next`: the second pointer of the struct in CPython 3.9 to 3.13 (after `prev`).
const TSTATE_NEXT: u64 = 8;
/// Most thread states looked at (a corrupt list that loops ends here).
const MAX_THREADS: usize = 1024;

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
    /// Counts the outcome in [`Interpreter::counts`].
    pub fn capture_backward_caller(&self, out: &mut [(u64, bool)]) -> Caller {
        let found = self.find_backward_caller();
        let c = &self.counts;
        let counter = match found {
            Ok(Some(tstate)) => {
                let mut raw = [RawFrame::default(); MAX_FRAMES];
                let read = chain::walk(&OwnMemory, self.layout, tstate, Some(self.code_type), &mut raw);
                if let Ok((n, _)) = read {
                    let (written, ok) = self.resolve(&raw[..n], out);
                    if ok && written > 0 {
                        c.autograd_attributed.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        return Caller::Found(written);
                    }
                }
                &c.autograd_unattributed
            }
            Err(()) => {
                c.autograd_ambiguous.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                return Caller::Ambiguous;
            }
            Ok(None) => &c.autograd_unattributed,
        };
        counter.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Caller::None
    }

    /// The thread state of the one thread in a backward call; `Err` when several are.
    fn find_backward_caller(&self) -> Result<Option<u64>, ()> {
        let Some(list) = self.threads else { return Ok(None) };
        // SAFETY: C API functions without preconditions once the interpreter is initialised
        // (checked first); they read the interpreter's list heads, which live as long as it.
        let (own, mut tstate) = unsafe {
            if (self.is_initialized)() == 0 {
                return Ok(None);
            }
            let interp = (list.head)();
            if interp.is_null() {
                return Ok(None);
            }
            ((self.this_thread_state)() as u64, (list.threads)(interp) as u64)
        };
        let mem = ProcessMemory { pid: std::process::id() };
        let mut found = None;
        for _ in 0..MAX_THREADS {
            if tstate == 0 {
                break;
            }
            if tstate != own && self.in_backward(&mem, tstate) {
                if found.is_some() {
                    return Err(());
                }
                found = Some(tstate);
            }
            let Ok(next) = mem.u64(tstate + TSTATE_NEXT) else { break };
            tstate = next;
        }
        Ok(found)
    }

    /// True when the innermost Python frame of thread state `tstate` is a backward entry.
    fn in_backward(&self, mem: &ProcessMemory, tstate: u64) -> bool {
        let mut first = [RawFrame::default(); 1];
        let Ok((1, _)) = chain::walk(mem, self.layout, tstate, Some(self.code_type), &mut first) else {
            return false;
        };
        let code = first[0].code;
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
