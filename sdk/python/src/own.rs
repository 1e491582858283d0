//! The interpreter of this process, read from inside it (the agents, at API entry): found by
//! its exported symbols, read directly, each frame resolved once to a numbered
//! `function (file.py:line)` definition that is sent to the host like other definitions.

use std::cell::RefCell;
use std::collections::HashMap;
use std::ffi::{c_char, c_int, c_void, CStr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use crate::chain::{self, RawFrame};
use crate::code::Code;
use crate::layout::{Layout, Version};
use crate::memory::{Memory, OwnMemory};
use crate::{Error, PY_FRAME_TAG};

type GetState = unsafe extern "C" fn() -> *mut c_void;
type IsInitialized = unsafe extern "C" fn() -> c_int;
type GetVersion = unsafe extern "C" fn() -> *const c_char;

/// Most Python frames read per capture.
pub const MAX_FRAMES: usize = 128;

/// Counters of the captures, for the session's report.
#[derive(Debug, Default)]
pub struct Counts {
    /// Captures that found Python frames on the calling thread.
    pub with_frames: AtomicU64,
    /// Captures on a thread with no Python thread state (a thread Python never ran on, such as a
    /// C++ worker thread) or no Python frame running: native frames only.
    pub without_frames: AtomicU64,
    /// Captures whose frame chain could not be read to its end (the frames read before the
    /// failure are kept; not counted in the two others).
    pub errors: AtomicU64,
    /// Launches of autograd engine threads given the Python stack of the one thread blocked in
    /// a `backward()` / `autograd.grad()` call ([`Interpreter::capture_backward_caller`]).
    pub autograd_attributed: AtomicU64,
    /// Launches of autograd engine threads while several threads were in such calls (not
    /// attributed: the engine's threads serve them all).
    pub autograd_ambiguous: AtomicU64,
    /// Launches of autograd engine threads while no thread was in such a call (the engine driven
    /// from C++), or whose caller's frames could not be read.
    pub autograd_unattributed: AtomicU64,
}

/// The CPython interpreter loaded in this process.
#[derive(Debug)]
pub struct Interpreter {
    pub(crate) layout: &'static Layout,
    pub(crate) this_thread_state: GetState,
    pub(crate) is_initialized: IsInitialized,
    pub(crate) code_type: u64,
    eval: (u64, u64),
    table: Mutex<Table>,
    /// The thread list's entry points, for [`Interpreter::capture_backward_caller`].
    pub(crate) threads: Option<crate::autograd::ThreadList>,
    /// What the captures found.
    pub counts: Counts,
}

/// Definitions made so far and those not yet sent.
#[derive(Debug, Default)]
struct Table {
    ids: HashMap<(u64, u64, u32), u64>,
    pending: Vec<(u64, String)>,
}

thread_local! {
    /// (code object, instruction offset) -> (name pointer when resolved, frame id).
    static RESOLVED: RefCell<HashMap<(u64, u64), (u64, u64)>> = RefCell::new(HashMap::new());
}

impl Interpreter {
    /// The interpreter this process runs, found through the symbols its executable or
    /// `libpython3.X.so` exports; `Ok(None)` when no CPython is loaded.
    pub fn find() -> Result<Option<Interpreter>, Error> {
        let Some(handle) = symbols_handle() else { return Ok(None) };
        let sym = |name: &CStr| {
            // SAFETY: `handle` is RTLD_DEFAULT or a handle from dlopen; `name` is NUL-terminated.
            let p = unsafe { libc::dlsym(handle, name.as_ptr()) };
            (!p.is_null()).then_some(p)
        };
        let Some(state) = sym(c"PyGILState_GetThisThreadState") else { return Ok(None) };
        let missing = |what: &'static str| Error::Symbol { name: what };
        let version = sym(c"Py_GetVersion").ok_or(missing("Py_GetVersion"))?;
        let init = sym(c"Py_IsInitialized").ok_or(missing("Py_IsInitialized"))?;
        let code_type = sym(c"PyCode_Type").ok_or(missing("PyCode_Type"))? as u64;
        let eval = sym(c"_PyEval_EvalFrameDefault").ok_or(missing("_PyEval_EvalFrameDefault"))?;
        // SAFETY: the symbols are CPython's functions of these signatures (C API); Py_GetVersion
        // formats a static buffer and may be called at any time.
        let text = unsafe {
            let get: GetVersion = std::mem::transmute(version);
            CStr::from_ptr(get()).to_string_lossy().into_owned()
        };
        let v = Version::parse(&text).ok_or(Error::Version { text: text.clone() })?;
        let layout = Layout::of(v).ok_or(Error::Version { text })?;
        Ok(Some(Interpreter {
            layout,
            // SAFETY: C API functions with these exact signatures.
            this_thread_state: unsafe { std::mem::transmute::<*mut c_void, GetState>(state) },
            // SAFETY: as above.
            is_initialized: unsafe { std::mem::transmute::<*mut c_void, IsInitialized>(init) },
            code_type,
            eval: symbol_range(eval),
            table: Mutex::new(Table::default()),
            threads: crate::autograd::ThreadList::find(&sym),
            counts: Counts::default(),
        }))
    }

    /// The interpreter's version.
    pub fn version(&self) -> Version {
        self.layout.version
    }

    /// The eval loop's code: `[start, end)`.
    pub fn eval_range(&self) -> (u64, u64) {
        self.eval
    }

    /// True when `ra` (a return address) lies in the eval loop's code.
    #[inline]
    pub fn is_eval(&self, ra: u64) -> bool {
        let a = ra.wrapping_sub(1);
        a >= self.eval.0 && a < self.eval.1
    }

    /// The calling thread's Python frames, innermost first, as (tagged frame id, entry) pairs
    /// ready for [`crate::merge::merge`]; returns how many were written.
    ///
    /// The thread's own frame chain is read whether or not it holds the GIL: only this thread
    /// pushes and pops its frames, and while it is inside this call (a C function called from
    /// Python, which may have released the GIL) they stay where they are.
    pub fn capture(&self, out: &mut [(u64, bool)]) -> usize {
        let mut raw = [RawFrame::default(); MAX_FRAMES];
        let (n, mut failed) = match self.read_chain(&mut raw) {
            Ok(n) => (n, false),
            Err(_) => (0, true),
        };
        let (written, resolved) = self.resolve(&raw[..n], out);
        failed |= !resolved;
        let c = &self.counts;
        let counter = match (failed, n) {
            (true, _) => &c.errors,
            (false, 0) => &c.without_frames,
            _ => &c.with_frames,
        };
        counter.fetch_add(1, Ordering::Relaxed);
        written
    }

    /// Resolves `raw` into frame ids in `out`; returns how many were written and whether all
    /// of them could be resolved.
    pub(crate) fn resolve(&self, raw: &[RawFrame], out: &mut [(u64, bool)]) -> (usize, bool) {
        let mut written = 0;
        let mut ok = true;
        RESOLVED.with(|cache| {
            let mut cache = cache.borrow_mut();
            for f in raw.iter().take(out.len()) {
                match self.frame_id(&mut cache, f) {
                    Ok(id) => {
                        out[written] = (id, f.entry);
                        written += 1;
                    }
                    Err(_) => {
                        ok = false;
                        break;
                    }
                }
            }
        });
        (written, ok)
    }

    /// A frame id standing for `label` (a marker the stack shows as a frame of that name),
    /// defined like a Python frame.
    pub fn marker(&self, label: &'static str) -> u64 {
        let Ok(mut t) = self.table.lock() else { return PY_FRAME_TAG };
        let next = PY_FRAME_TAG | (t.ids.len() as u64 + 1);
        let id = *t.ids.entry((0, label.as_ptr() as u64, 0)).or_insert(next);
        if id == next {
            t.pending.push((id, label.to_string()));
        }
        id
    }

    fn read_chain(&self, raw: &mut [RawFrame]) -> Result<usize, Error> {
        // SAFETY: C API functions without preconditions once the interpreter is initialised
        // (checked first: before that the thread-state key may not exist).
        let tstate = unsafe {
            if (self.is_initialized)() == 0 {
                return Ok(0);
            }
            (self.this_thread_state)()
        };
        if tstate.is_null() {
            return Ok(0);
        }
        chain::walk(&OwnMemory, self.layout, tstate as u64, Some(self.code_type), raw).map(|(n, _)| n)
    }

    pub(crate) fn frame_id(
        &self,
        cache: &mut HashMap<(u64, u64), (u64, u64)>,
        f: &RawFrame,
    ) -> Result<u64, Error> {
        let name = OwnMemory.u64(f.code + self.layout.code_qualname.unwrap_or(self.layout.code_name))?;
        if let Some(&(n, id)) = cache.get(&(f.code, f.offset)) {
            if n == name {
                return Ok(id);
            }
        }
        let code = Code::read(&OwnMemory, self.layout, f.code)?;
        let line = code.line(self.layout, f.offset());
        let mut t = self.table.lock().map_err(|_| Error::Poisoned)?;
        let next = PY_FRAME_TAG | (t.ids.len() as u64 + 1);
        let id = *t.ids.entry((f.code, name, line)).or_insert(next);
        if id == next {
            t.pending.push((id, code.label(line)));
        }
        drop(t);
        if cache.len() > 1 << 16 {
            cache.clear();
        }
        cache.insert((f.code, f.offset), (name, id));
        Ok(id)
    }

    /// The frame definitions made since the last call: (tagged id, `function (file:line)`).
    pub fn take_definitions(&self) -> Vec<(u64, String)> {
        self.table.lock().map(|mut t| std::mem::take(&mut t.pending)).unwrap_or_default()
    }
}

/// Where CPython's symbols can be looked up: the global scope when the executable or a
/// globally loaded library exports them, else a `libpython3.X.so` this process mapped locally.
fn symbols_handle() -> Option<*mut c_void> {
    // SAFETY: dlsym on RTLD_DEFAULT with a NUL-terminated name.
    if !unsafe { libc::dlsym(libc::RTLD_DEFAULT, c"Py_IsInitialized".as_ptr()) }.is_null() {
        return Some(libc::RTLD_DEFAULT);
    }
    let maps = std::fs::read_to_string("/proc/self/maps").ok()?;
    let path = xpuprof_wire::maps::parse(&maps)
        .into_iter()
        .map(|m| m.path)
        .find(|p| p.rsplit('/').next().is_some_and(|f| f.starts_with("libpython3.") && f.contains(".so")))?;
    let c = std::ffi::CString::new(path).ok()?;
    // SAFETY: RTLD_NOLOAD only returns a handle to a library already loaded; nothing runs.
    let h = unsafe { libc::dlopen(c.as_ptr(), libc::RTLD_NOLOAD | libc::RTLD_LAZY) };
    (!h.is_null()).then_some(h)
}

/// `dladdr1`'s request for the symbol table entry (glibc's `<dlfcn.h>`).
const RTLD_DL_SYMENT: libc::c_int = 1;

/// The address range of the function at `addr`, from its symbol's size.
fn symbol_range(addr: *mut c_void) -> (u64, u64) {
    let mut info: libc::Dl_info = libc::Dl_info {
        dli_fname: std::ptr::null(),
        dli_fbase: std::ptr::null_mut(),
        dli_sname: std::ptr::null(),
        dli_saddr: std::ptr::null_mut(),
    };
    let mut sym: *const libc::Elf64_Sym = std::ptr::null();
    // SAFETY: `info` and `sym` are valid out-pointers; RTLD_DL_SYMENT makes the last one an
    // `Elf64_Sym` pointer into the loaded object's symbol table.
    let ok = unsafe {
        libc::dladdr1(addr, &mut info, (&mut sym as *mut *const libc::Elf64_Sym).cast(), RTLD_DL_SYMENT)
    };
    // SAFETY: on success `sym` points to the symbol's table entry, alive while the object is.
    let size = if ok != 0 && !sym.is_null() { unsafe { (*sym).st_size } } else { 0 };
    let start = addr as u64;
    (start, start + size.max(1))
}
