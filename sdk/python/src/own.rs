//! The interpreter of this process, read from inside it (the agents, at API entry): found by
//! its exported symbols, read directly, each frame resolved once to a numbered
//! `function (file.py:line)` definition that is sent to the host like other definitions.

use std::cell::RefCell;
use std::collections::HashMap;
use std::ffi::{c_char, c_int, c_void, CStr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

use crate::chain::{self, RawFrame};
use crate::code::Code;
use crate::cpython_offsets::{Layout, Version};
use crate::memory::{Memory, OwnMemory};
use crate::reuse::ChainMemo;
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
    /// Scans of the interpreter's thread list for those launches (the others read only the
    /// thread that may have changed since the last scan: `callers.rs`).
    pub autograd_scans: AtomicU64,
    /// Of the looks at one thread between scans, those made without a system call (its
    /// frames lie in memory that stays mapped: the main thread's, from 3.11 on).
    pub autograd_direct: AtomicU64,
    /// Runs of Python frames (one per eval-loop call) put by the eval loop's symbol because no
    /// native frame held their call's marker on the C stack (3.9, 3.10 have none; a walk that
    /// ended early); the others are placed exactly ([`crate::merge::merge_placed`]).
    pub runs_by_symbol: AtomicU64,
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
    /// `_PyRuntime`: `[start, end)`.
    pub(crate) runtime: Option<(u64, u64)>,
    /// A build without GIL (3.13's free-threading build).
    pub(crate) free_threaded: bool,
    /// The GIL, found at the first launch of an autograd engine thread.
    pub(crate) gil: OnceLock<Option<crate::gil::Gil>>,
    /// Memory that stays mapped while the interpreter runs, found at the first classification
    /// of a thread for an autograd engine thread.
    pub(crate) fixed: OnceLock<Option<crate::signature::Fixed>>,
    /// What the captures found.
    pub counts: Counts,
}

/// Definitions made so far and those not yet sent.
#[derive(Debug, Default)]
struct Table {
    /// (code object, name object, line-table object, line) -> frame id.
    ids: HashMap<(u64, u64, u64, u32), u64>,
    pending: Vec<(u64, String)>,
    /// First lines (`co_firstlineno`) of the frames in `pending` that run a code object.
    first_lines: Vec<(u64, u32)>,
}

/// Sets of a thread's resolved-frame cache (a power of two), two entries each.
const SETS: usize = 512;

/// A resolved frame: the code object and instruction offset it was resolved for, what the code
/// object held then (its name and line-table objects: a code object freed and another made at
/// the same address holds other ones), and its frame id. 0 in `code`: empty.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Resolved {
    code: u64,
    offset: u64,
    name: u64,
    table: u64,
    id: u64,
}

/// A thread's capture state, reused from launch to launch (nothing is zeroed or allocated per
/// capture): the frames read, their ids, and the resolved-frame cache, two-way
/// set-associative by (code object, offset).
pub(crate) struct ThreadCache {
    pub(crate) raw: [RawFrame; MAX_FRAMES],
    pub(crate) ids: [(u64, bool); MAX_FRAMES],
    sets: Box<[[Resolved; 2]; SETS]>,
    /// The previous capture of the thread's own chain, and of another thread's (the backward
    /// caller of an autograd engine thread), for reuse.
    own: ChainMemo,
    other: ChainMemo,
}

/// Which of a thread's [`ChainMemo`]s a capture uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Chain {
    Own,
    Other,
}

impl ThreadCache {
    fn memo(&mut self, c: Chain) -> &mut ChainMemo {
        match c {
            Chain::Own => &mut self.own,
            Chain::Other => &mut self.other,
        }
    }
}

impl ThreadCache {
    fn new() -> Box<ThreadCache> {
        Box::new(ThreadCache {
            raw: [RawFrame::default(); MAX_FRAMES],
            ids: [(0, false); MAX_FRAMES],
            sets: Box::new([[Resolved::default(); 2]; SETS]),
            own: ChainMemo::default(),
            other: ChainMemo::default(),
        })
    }

    #[inline(always)]
    fn set(code: u64, offset: u64) -> usize {
        let k = code ^ offset.rotate_left(29);
        (k.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 55) as usize & (SETS - 1)
    }

    /// The cached id of `(code, offset)` when the code object still holds `name` and `table`.
    #[inline(always)]
    fn get(&self, code: u64, offset: u64, name: u64, table: u64) -> Option<u64> {
        let [a, b] = &self.sets[Self::set(code, offset)];
        let hit = |e: &Resolved| e.code == code && e.offset == offset && e.name == name && e.table == table;
        if hit(a) {
            Some(a.id)
        } else if hit(b) {
            Some(b.id)
        } else {
            None
        }
    }

    fn put(&mut self, r: Resolved) {
        let set = &mut self.sets[Self::set(r.code, r.offset)];
        set[1] = set[0];
        set[0] = r;
    }
}

thread_local! {
    static THREAD: RefCell<Option<Box<ThreadCache>>> = const { RefCell::new(None) };
}

/// Runs `f` with the calling thread's capture state (`None` when it is in use further up this
/// thread's stack, or being torn down).
#[inline]
pub(crate) fn with_thread<R>(f: impl FnOnce(Option<&mut ThreadCache>) -> R) -> R {
    let mut f = Some(f);
    let r = THREAD.try_with(|t| match t.try_borrow_mut() {
        Ok(mut t) => (f.take().expect("called once"))(Some(t.get_or_insert_with(ThreadCache::new))),
        Err(_) => (f.take().expect("called once"))(None),
    });
    match r {
        Ok(r) => r,
        Err(_) => (f.take().expect("called once"))(None),
    }
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
        let free_threaded = text.contains("free-threading");
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
            runtime: sym(c"_PyRuntime").map(symbol_range),
            free_threaded,
            gil: OnceLock::new(),
            fixed: OnceLock::new(),
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
        self.with_capture(|frames| {
            let n = frames.len().min(out.len());
            out[..n].copy_from_slice(&frames[..n]);
            n
        })
    }

    /// Like [`Interpreter::capture`], but hands the frames to `f` where they were written (the
    /// calling thread's reused buffer: nothing is copied). `f` must not capture again.
    #[inline]
    pub fn with_capture<R>(&self, f: impl FnOnce(&[(u64, bool)]) -> R) -> R {
        self.with_capture_raw(|frames, _| f(frames))
    }

    /// [`Interpreter::with_capture`] that also hands `f` the frames as read, one per frame
    /// given (same order): their entry frames' [`RawFrame::marker`]s place them in the native
    /// stack ([`crate::merge::merge_placed`]).
    #[inline]
    pub fn with_capture_raw<R>(&self, f: impl FnOnce(&[(u64, bool)], &[RawFrame]) -> R) -> R {
        self.with_capture_reusing(false, f).0
    }

    /// [`Interpreter::with_capture_raw`] that, with `reuse`, takes the frames of the thread's
    /// previous capture from the first frame on which every field it read still holds (exact:
    /// `reuse.rs`); also returns whether it took any.
    #[inline]
    pub fn with_capture_reusing<R>(
        &self,
        reuse: bool,
        f: impl FnOnce(&[(u64, bool)], &[RawFrame]) -> R,
    ) -> (R, bool) {
        with_thread(|t| {
            let Some(t) = t else {
                self.counts.errors.fetch_add(1, Ordering::Relaxed);
                return (f(&[], &[]), false);
            };
            let memo = reuse.then_some(Chain::Own);
            let (n, mut failed) = match self.this_thread_state() {
                None => (0, false),
                Some(tstate) => match self.read_chain(t, tstate, memo) {
                    Ok(n) => (n, false),
                    Err(_) => (0, true),
                },
            };
            let (written, resolved) = match memo {
                Some(m) => self.resolve_in::<true>(t, n, m),
                None => self.resolve_in::<false>(t, n, Chain::Own),
            };
            failed |= !resolved;
            let c = &self.counts;
            let counter = match (failed, n) {
                (true, _) => &c.errors,
                (false, 0) => &c.without_frames,
                _ => &c.with_frames,
            };
            counter.fetch_add(1, Ordering::Relaxed);
            let reused = reuse && t.own.reused();
            (f(&t.ids[..written], &t.raw[..written]), reused)
        })
    }

    /// Resolves `t.raw[..n]` into `t.ids`; returns how many were written and whether all of
    /// them could be resolved. With `MEMO`, frames taken from `chain`'s previous capture keep
    /// their ids where their code objects hold the same name and line table (a constant: the
    /// capture without reuse does no more than before it).
    #[inline]
    fn resolve_in<const MEMO: bool>(&self, t: &mut ThreadCache, n: usize, chain: Chain) -> (usize, bool) {
        let name_at = self.layout.code_qualname.unwrap_or(self.layout.code_name);
        let table_at = self.layout.code_linetable;
        for i in 0..n {
            let f = t.raw[i];
            let id = match (OwnMemory.u64(f.code + name_at), OwnMemory.u64(f.code + table_at)) {
                (Ok(name), Ok(table)) => {
                    let kept = if MEMO { t.memo(chain).kept_id(i, name, table) } else { None };
                    match kept.or_else(|| t.get(f.code, f.offset, name, table)) {
                        Some(id) => Ok((id, name, table)),
                        None => self.frame_id(t, &f, name, table).map(|id| (id, name, table)),
                    }
                }
                (Err(e), _) | (_, Err(e)) => Err(e),
            };
            match id {
                Ok((id, name, table)) => {
                    t.ids[i] = (id, f.entry);
                    if MEMO {
                        t.memo(chain).resolved(i, name, table, id);
                    }
                }
                Err(_) => {
                    if MEMO {
                        t.memo(chain).unresolved();
                    }
                    return (i, false);
                }
            }
        }
        (n, true)
    }

    /// A frame id standing for `label` (a marker the stack shows as a frame of that name),
    /// defined like a Python frame.
    pub fn marker(&self, label: &'static str) -> u64 {
        let Ok(mut t) = self.table.lock() else { return PY_FRAME_TAG };
        let next = PY_FRAME_TAG | (t.ids.len() as u64 + 1);
        let id = *t.ids.entry((0, label.as_ptr() as u64, 0, 0)).or_insert(next);
        if id == next {
            t.pending.push((id, label.to_string()));
        }
        id
    }

    /// The frames of thread state `tstate`, read directly (the caller knows they stand still
    /// until it returns) into the calling thread's buffers and resolved there; `f` gets their
    /// ids, or `None` when the chain could not be read or resolved to its end, or is empty.
    /// With `reuse`, takes the frames of the calling thread's previous capture of another
    /// thread's chain where they still hold (`reuse.rs`).
    pub(crate) fn with_frames_of_reusing<R>(
        &self,
        tstate: u64,
        reuse: bool,
        f: impl FnOnce(Option<&[(u64, bool)]>) -> R,
    ) -> R {
        with_thread(|t| {
            let Some(t) = t else { return f(None) };
            let memo = reuse.then_some(Chain::Other);
            let Ok(n) = self.read_chain(t, tstate, memo) else {
                return f(None);
            };
            let (written, ok) = match memo {
                Some(m) => self.resolve_in::<true>(t, n, m),
                None => self.resolve_in::<false>(t, n, Chain::Other),
            };
            f((ok && written > 0).then_some(&t.ids[..written]))
        })
    }

    /// The calling thread's thread state; `None` before the interpreter is initialised or on a
    /// thread Python never ran on.
    fn this_thread_state(&self) -> Option<u64> {
        // SAFETY: C API functions without preconditions once the interpreter is initialised
        // (checked first: before that the thread-state key may not exist).
        let tstate = unsafe {
            if (self.is_initialized)() == 0 {
                return None;
            }
            (self.this_thread_state)()
        };
        (!tstate.is_null()).then_some(tstate as u64)
    }

    /// Reads the frames of `tstate` into `t.raw`; with `memo`, through that chain's previous
    /// capture (`reuse.rs`), which this one replaces.
    fn read_chain(&self, t: &mut ThreadCache, tstate: u64, memo: Option<Chain>) -> Result<usize, Error> {
        let Some(m) = memo else {
            return chain::walk(&OwnMemory, self.layout, tstate, Some(self.code_type), &mut t.raw)
                .map(|(n, _)| n);
        };
        let cm = match m {
            Chain::Own => &mut t.own,
            Chain::Other => &mut t.other,
        };
        let mut tracer = cm.begin(tstate, &OwnMemory, self.layout, Some(self.code_type));
        let r =
            chain::walk_with(&OwnMemory, self.layout, tstate, Some(self.code_type), &mut t.raw, &mut tracer);
        let complete = match r {
            Ok((n, false)) => Some(&t.raw[..n]),
            _ => None,
        };
        cm.end(complete);
        r.map(|(n, _)| n)
    }

    /// Resolves a frame the thread's cache does not hold (the first time a code object runs
    /// at this offset): its line, its id (a new one, whose definition goes to the host, when
    /// no thread made it before), cached.
    #[cold]
    fn frame_id(&self, t: &mut ThreadCache, f: &RawFrame, name: u64, table: u64) -> Result<u64, Error> {
        let code = Code::read(&OwnMemory, self.layout, f.code)?;
        let line = code.line(self.layout, f.offset());
        let mut tb = self.table.lock().map_err(|_| Error::Poisoned)?;
        let next = PY_FRAME_TAG | (tb.ids.len() as u64 + 1);
        let id = *tb.ids.entry((f.code, name, table, line)).or_insert(next);
        if id == next {
            tb.pending.push((id, code.label(line)));
            tb.first_lines.push((id, code.first_line));
        }
        drop(tb);
        t.put(Resolved { code: f.code, offset: f.offset, name, table, id });
        Ok(id)
    }

    /// The frame definitions made since the last call: (tagged id, `function (file:line)`).
    pub fn take_definitions(&self) -> Vec<(u64, String)> {
        self.table.lock().map(|mut t| std::mem::take(&mut t.pending)).unwrap_or_default()
    }

    /// The first lines of the functions of the frames defined since the last call: (tagged id,
    /// `co_firstlineno`).
    pub fn take_first_lines(&self) -> Vec<(u64, u32)> {
        self.table.lock().map(|mut t| std::mem::take(&mut t.first_lines)).unwrap_or_default()
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
