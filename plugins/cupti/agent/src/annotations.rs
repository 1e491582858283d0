//! The program's NVTX ranges as annotation frames ([`xpuprof_agent_kit::annotations`]): the
//! ranges a framework pushes around its operations become frames between each launch's call
//! site and its kernel, and its compiler phases mark what they launch as compile-time work.
//! The texts understood are XLA's ([`crate::xla`]); other ranges stay records only.
//!
//! The NVTX callbacks (push, pop, string registration) reach the agent through
//! CUPTI, which NVTX calls because the host set `NVTX_INJECTION64_PATH`. Each thread keeps its
//! own stack of open ranges (per domain: a pop closes the innermost range of its domain); the
//! names of domains and registered strings are shared. A range's reading is kept per
//! registered string, so a framework's per-operation ranges cost a lookup each after the first.
//!
//! Only XLA's domain ([`xla::DOMAIN`]) is read: a range of the default domain, or of a domain
//! seen created under another name (a program's own ranges, NCCL's), is kept open as nothing
//! without reading its arguments (each read is a system call: about 1 µs a range on the CUDA
//! test double, `scripts/bench-annotations.sh`). A domain created before the agent was there
//! (never seen created) is read, as it may be XLA's.

use std::cell::RefCell;
use std::collections::HashMap;
use std::os::raw::c_void;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use xpuprof_agent_kit::annotations::{pop_frame, push_frame};

use crate::capture::Capture;
use crate::sys::ffi::{self, CUpti_nvtx_api_trace_cbid as N};
use crate::sys::{CuptiError, Lib};
use crate::xla::{self, Kind};
use crate::Agent;

pub(crate) mod nvtx;

use nvtx::{Message, Skip};

/// The NVTX calls read.
const CALLS: [u32; 7] = [
    N::CUPTI_CBID_NVTX_nvtxDomainCreateA,
    N::CUPTI_CBID_NVTX_nvtxRangePushA,
    N::CUPTI_CBID_NVTX_nvtxRangePushEx,
    N::CUPTI_CBID_NVTX_nvtxRangePop,
    N::CUPTI_CBID_NVTX_nvtxDomainRangePushEx,
    N::CUPTI_CBID_NVTX_nvtxDomainRangePop,
    N::CUPTI_CBID_NVTX_nvtxDomainRegisterStringA,
];

/// Turns on the NVTX callbacks this module reads.
pub fn enable(c: &mut Capture, lib: &Lib) -> Result<(), CuptiError> {
    for cbid in CALLS {
        c.enable_marker(lib, crate::markers::DOMAIN_NVTX, cbid)?;
    }
    Ok(())
}

/// NVTX calls not read, per [`Skip`] reason (reported at exit by [`report`]).
static SKIPPED: [AtomicU64; Skip::ALL.len()] = [const { AtomicU64::new(0) }; Skip::ALL.len()];

fn skip(why: Skip) {
    SKIPPED[why as usize].fetch_add(1, Ordering::Relaxed);
}

/// The line said at exit when NVTX calls were not read: how many, and why.
pub fn report() -> Option<String> {
    let counts: Vec<(Skip, u64)> = Skip::ALL
        .iter()
        .map(|&s| (s, SKIPPED[s as usize].load(Ordering::Relaxed)))
        .filter(|&(_, n)| n > 0)
        .collect();
    if counts.is_empty() {
        return None;
    }
    let total: u64 = counts.iter().map(|&(_, n)| n).sum();
    let parts: Vec<String> = counts.iter().map(|&(s, n)| format!("{}: {n}", s.describe())).collect();
    // A range whose payload alone was unreadable still gives its operation, without its line.
    let what = if counts.iter().all(|&(s, _)| s == Skip::Payload) {
        "their operations' frames have no source line from those calls"
    } else {
        "their ranges give no annotation frame (an unreadable payload: no source line)"
    };
    Some(format!("annotations: {total} NVTX calls not read ({}); {what}", parts.join(", ")))
}

/// What a registered string reads as (cached per handle).
#[derive(Debug, Clone)]
enum Reading {
    Module(Option<Arc<str>>),
    Op(Arc<str>),
    Compile,
    Other,
}

impl From<Kind> for Reading {
    fn from(k: Kind) -> Self {
        match k {
            Kind::Module(p) => Reading::Module(p.map(Into::into)),
            Kind::Op { name } => Reading::Op(name.into()),
            Kind::Compile => Reading::Compile,
            Kind::Other => Reading::Other,
        }
    }
}

#[derive(Debug, Default)]
struct Names {
    /// Domains seen created, and whether each is XLA's.
    domains: HashMap<u64, bool>,
    strings: HashMap<u64, Arc<str>>,
    readings: HashMap<u64, Reading>,
    /// Operation label ids by (title handle or text hash, source handle, module prefix).
    labels: HashMap<(u64, u64, usize), u64>,
    /// Label ids with a source line by (registered title, module prefix): a later push of the
    /// same operation reuses it without reading its payload (XLA's later executions pass
    /// payloads that cannot be read, and each read is a system call).
    sourced: HashMap<(u64, usize), u64>,
}

static NAMES: Mutex<Option<Names>> = Mutex::new(None);

/// With `verbose`, the first this many registrations and pushes are said on stderr (what the
/// program's annotations look like, for whoever reads a new framework's).
const SAID: u32 = 3000;
static SAID_SO_FAR: AtomicU32 = AtomicU32::new(0);
/// Compiler-phase pushes said (a compilation pushes hundreds).
static COMPILE_SAID: AtomicU32 = AtomicU32::new(0);
/// Pushes with an unreadable payload said.
static LOST_SAID: AtomicU32 = AtomicU32::new(0);

fn tell(a: &Agent, what: impl FnOnce() -> String) {
    if a.config.common.verbose && SAID_SO_FAR.fetch_add(1, Ordering::Relaxed) < SAID {
        crate::say(&what());
    }
}

/// An open range on a thread.
#[derive(Debug)]
enum Open {
    Module(Option<Arc<str>>),
    Frame,
    Compile,
    Other,
}

/// This thread's open ranges.
#[derive(Debug, Default)]
struct Thread {
    /// (domain handle, what it did), outermost first.
    open: Vec<(u64, Open)>,
    /// Pushes past [`MAX_OPEN`] not kept: the next pops close them first.
    overflow: u32,
}

thread_local! {
    static OPEN: RefCell<Thread> = RefCell::new(Thread::default());
}

/// Most ranges a thread keeps open (deeper pushes are counted, and their pops match them).
const MAX_OPEN: usize = 256;

/// `f` on this thread's open ranges; `None` while the thread's storage is being torn down (an
/// NVTX call from another thread-local's destructor) or already in use further up the stack.
fn with_open<R>(f: impl FnOnce(&mut Thread) -> R) -> Option<R> {
    OPEN.try_with(|o| o.try_borrow_mut().ok().map(|mut t| f(&mut t))).ok().flatten()
}

/// An NVTX callback: names, pushes and pops. Only the parameter struct and the return value,
/// which CUPTI makes for the call, are read directly; what they point to in the program goes
/// through [`nvtx`]'s checked reads.
///
/// # Safety
/// `data` is the `CUpti_NvtxData` CUPTI passes for NVTX callback `cbid`.
pub unsafe fn on_nvtx(a: &Agent, cbid: u32, data: *const c_void) {
    // With `verbose`, the time the agent spends here is added up (said at exit, [`cost`]).
    let start = a.config.common.verbose.then(std::time::Instant::now);
    // SAFETY: the caller's contract.
    unsafe { take(a, cbid, data) };
    if let Some(t) = start {
        TAKEN.fetch_add(1, Ordering::Relaxed);
        SPENT_NS.fetch_add(t.elapsed().as_nanos() as u64, Ordering::Relaxed);
    }
}

/// NVTX calls taken and the nanoseconds spent on them, counted with `verbose`.
static TAKEN: AtomicU64 = AtomicU64::new(0);
static SPENT_NS: AtomicU64 = AtomicU64::new(0);

/// With `verbose`, the line said at exit: how many NVTX calls the annotations took and the
/// time spent on them (what they cost the program's threads).
pub fn cost() -> Option<String> {
    let (n, ns) = (TAKEN.load(Ordering::Relaxed), SPENT_NS.load(Ordering::Relaxed));
    (n > 0).then(|| {
        format!(
            "annotations: {n} NVTX calls taken, {:.3} ms in the agent ({:.0} ns each)",
            ns as f64 / 1e6,
            ns as f64 / n as f64
        )
    })
}

/// [`on_nvtx`]'s work.
///
/// # Safety
/// As [`on_nvtx`].
unsafe fn take(a: &Agent, cbid: u32, data: *const c_void) {
    // SAFETY: the caller's contract.
    let d = unsafe { &*(data as *const ffi::CUpti_NvtxData) };
    let (params, ret) = (d.functionParams, d.functionReturnValue as *const u64);
    let pop_call = matches!(cbid, N::CUPTI_CBID_NVTX_nvtxRangePop);
    if params.is_null() && !pop_call {
        skip(Skip::Parameters);
        return;
    }
    match cbid {
        N::CUPTI_CBID_NVTX_nvtxDomainCreateA => {
            if ret.is_null() {
                return;
            }
            // SAFETY: `name` (nvtxDomainCreateA_params); the return value is the new handle.
            let (name, handle) =
                unsafe { (nvtx::text(nvtx::param(params, 0)), std::ptr::read_unaligned(ret)) };
            tell(a, || format!("nvtx domain {handle:#x} = {name:?}"));
            if let Ok(mut g) = NAMES.lock() {
                let xla = name.as_deref() == Some(xla::DOMAIN);
                g.get_or_insert_with(Names::default).domains.insert(handle, xla);
            }
        }
        N::CUPTI_CBID_NVTX_nvtxDomainRegisterStringA => {
            if ret.is_null() {
                skip(Skip::Parameters);
                return;
            }
            // SAFETY: `domain, string` (nvtxDomainRegisterStringA_params); the return value,
            // CUPTI's, is the new handle.
            let (s, handle) = unsafe { (nvtx::text(nvtx::param(params, 1)), std::ptr::read_unaligned(ret)) };
            tell(a, || {
                format!("nvtx string {handle:#x} = {:?}", s.as_deref().map(|s| &s[..s.len().min(200)]))
            });
            let Some(s) = s else {
                skip(Skip::Message);
                return;
            };
            if let Ok(mut g) = NAMES.lock() {
                let n = g.get_or_insert_with(Names::default);
                n.strings.insert(handle, s.into());
                n.readings.remove(&handle);
            }
        }
        N::CUPTI_CBID_NVTX_nvtxRangePop => pop(a, 0),
        // SAFETY: `domain` is the first parameter.
        N::CUPTI_CBID_NVTX_nvtxDomainRangePop => pop(a, unsafe { nvtx::param(params, 0) }),
        // The default domain's ranges are never XLA's.
        N::CUPTI_CBID_NVTX_nvtxRangePushA | N::CUPTI_CBID_NVTX_nvtxRangePushEx => push_other(0),
        N::CUPTI_CBID_NVTX_nvtxDomainRangePushEx => {
            // SAFETY: `domain, core.eventAttrib` (nvtxDomainRangePushEx_params).
            let (dom, attr) = unsafe { (nvtx::param(params, 0), nvtx::param(params, 1)) };
            if foreign(dom) {
                push_other(dom);
            } else {
                push(a, dom, nvtx::event(attr));
            }
        }
        _ => {}
    }
}

/// What the range `(handle, ascii)` reads as.
fn reading(n: &mut Names, message: &Message) -> Reading {
    match message {
        Message::Registered(handle) => {
            if let Some(r) = n.readings.get(handle) {
                return r.clone();
            }
            let Some(s) = n.strings.get(handle) else {
                // Registered before the agent was told of it, or not a handle at all.
                skip(Skip::UnknownHandle);
                return Reading::Other;
            };
            let r: Reading = xla::classify(s).into();
            n.readings.insert(*handle, r.clone());
            r
        }
        Message::Ascii(t) => xla::classify(t).into(),
    }
}

/// True when `dom` was seen created under another name than XLA's domain.
fn foreign(dom: u64) -> bool {
    NAMES.lock().is_ok_and(|g| g.as_ref().and_then(|n| n.domains.get(&dom)) == Some(&false))
}

/// A push of a range that is not XLA's: kept open as nothing, its arguments not read.
fn push_other(dom: u64) {
    with_open(|o| {
        if o.open.len() >= MAX_OPEN {
            o.overflow += 1;
        } else {
            o.open.push((dom, Open::Other));
        }
    });
}

/// A push: what its range reads as becomes what the thread has open in `dom` (a push whose
/// arguments could not be read is kept open as nothing, so its pop closes it and no other).
fn push(a: &Agent, dom: u64, event: Result<nvtx::Event, Skip>) {
    let full = with_open(|o| {
        let full = o.open.len() >= MAX_OPEN;
        if full {
            o.overflow += 1;
        }
        full
    });
    match full {
        Some(false) => {}
        Some(true) => return skip(Skip::TooDeep),
        None => return,
    }
    let event = match event {
        Ok(e) => e,
        Err(why) => {
            skip(why);
            with_open(|o| o.open.push((dom, Open::Other)));
            return;
        }
    };
    let r = match NAMES.lock() {
        Ok(mut g) => reading(g.get_or_insert_with(Names::default), &event.message),
        Err(_) => Reading::Other,
    };
    let quiet = matches!(r, Reading::Compile) && COMPILE_SAID.fetch_add(1, Ordering::Relaxed) >= 20;
    if !quiet {
        tell(a, || {
            format!("nvtx push domain {dom:#x} {:?} payload at {:x?}: {r:?}", event.message, event.payload_at)
        });
    }
    let open = match r {
        Reading::Module(p) => Open::Module(p),
        Reading::Op(name) => {
            push_frame(op_label(a, dom, &event, &name));
            Open::Frame
        }
        Reading::Compile => {
            let ann = &a.core.launches.annotations;
            let context = (!ann.in_compile()).then(|| a.core.launches.python_stack());
            ann.enter_compile(context);
            Open::Compile
        }
        Reading::Other => Open::Other,
    };
    with_open(|o| o.open.push((dom, open)));
}

/// The registered string among `payload`'s words that names source locations (XLA's operation
/// payload holds its HLO text, its source locations and its called computations, in an order
/// that changed between versions), or 0.
fn source_handle(n: &Names, payload: &[u64]) -> u64 {
    payload
        .iter()
        .copied()
        .find(|w| n.strings.get(w).is_some_and(|s| xla::first_location(s).is_some()))
        .unwrap_or(0)
}

/// The words of `event`'s payload; none when it cannot be read (counted, and with `verbose` the
/// first few said: what the program passed instead).
fn payload_words(a: &Agent, dom: u64, event: &nvtx::Event) -> Vec<u64> {
    event.payload().unwrap_or_else(|why| {
        skip(Skip::Payload);
        if a.config.common.verbose && LOST_SAID.fetch_add(1, Ordering::Relaxed) < 20 {
            crate::say(&format!("nvtx push domain {dom:#x} {:?}: payload not read: {why}", event.message));
        }
        Vec::new()
    })
}

/// The label id of operation `name` under this thread's innermost module.
fn op_label(a: &Agent, dom: u64, event: &nvtx::Event, name: &str) -> u64 {
    let prefix = OPEN
        .try_with(|o| {
            o.try_borrow().ok().and_then(|o| {
                o.open.iter().rev().find_map(|(_, e)| match e {
                    Open::Module(p) => Some(p.clone()),
                    _ => None,
                })
            })
        })
        .ok()
        .flatten()
        .flatten();
    let pkey = prefix.as_ref().map_or(0, |p| Arc::as_ptr(p) as *const u8 as usize);
    let registered = match event.message {
        Message::Registered(h) => Some((h, pkey)),
        Message::Ascii(_) => None,
    };
    if let Some(id) = registered.and_then(|k| NAMES.lock().ok()?.as_ref()?.sourced.get(&k).copied()) {
        return id;
    }
    // Read outside the lock: a system call.
    let words = payload_words(a, dom, event);
    let Ok(mut g) = NAMES.lock() else { return 0 };
    let n = g.get_or_insert_with(Names::default);
    let source = source_handle(n, &words);
    let title = match &event.message {
        Message::Registered(h) => *h,
        Message::Ascii(t) => xpuprof_agent_kit::stack::hash(&[t.len() as u64, fnv(t)]),
    };
    let key = (title, source, pkey);
    if let Some(&id) = n.labels.get(&key) {
        return id;
    }
    let place = n.strings.get(&source).and_then(|s| xla::first_location(s).map(|(f, l)| (f.to_owned(), l)));
    let text = xla::op_label(prefix.as_deref(), name, place.as_ref().map(|(f, l)| (f.as_str(), *l)));
    let id = a.core.launches.annotations.label(&text);
    if n.labels.len() < 1 << 20 {
        n.labels.insert(key, id);
        if let (Some(k), Some(_)) = (registered, &place) {
            n.sourced.insert(k, id);
        }
    }
    id
}

fn fnv(t: &str) -> u64 {
    t.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3))
}

/// A pop closes this thread's innermost range of domain `dom` (after the pushes too deep to
/// keep); one with none open is counted.
fn pop(a: &Agent, dom: u64) {
    let open = with_open(|o| {
        if o.overflow > 0 {
            o.overflow -= 1;
            return Ok(None);
        }
        match o.open.iter().rposition(|(d, _)| *d == dom) {
            Some(at) => Ok(Some(o.open.remove(at).1)),
            None => Err(()),
        }
    })
    .unwrap_or(Ok(None));
    let Ok(open) = open else {
        skip(Skip::PopWithoutPush);
        tell(a, || format!("nvtx pop domain {dom:#x} without a push on this thread"));
        return;
    };
    if !matches!(open, Some(Open::Compile)) {
        tell(a, || format!("nvtx pop domain {dom:#x}: {open:?}"));
    }
    match open {
        Some(Open::Frame) => pop_frame(),
        Some(Open::Compile) => a.core.launches.annotations.exit_compile(),
        _ => {}
    }
}
