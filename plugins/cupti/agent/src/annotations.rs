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

use std::cell::RefCell;
use std::collections::HashMap;
use std::ffi::CStr;
use std::os::raw::{c_char, c_void};
use std::sync::{Arc, Mutex};

use xpuprof_agent_kit::annotations::{pop_frame, push_frame};

use crate::capture::Capture;
use crate::sys::ffi::{self, CUpti_nvtx_api_trace_cbid as N};
use crate::sys::{CuptiError, Lib};
use crate::xla::{self, Kind};
use crate::Agent;

/// The NVTX calls read.
const CALLS: [u32; 6] = [
    N::CUPTI_CBID_NVTX_nvtxRangePushA,
    N::CUPTI_CBID_NVTX_nvtxRangePushEx,
    N::CUPTI_CBID_NVTX_nvtxRangePop,
    N::CUPTI_CBID_NVTX_nvtxDomainRangePushEx,
    N::CUPTI_CBID_NVTX_nvtxDomainRangePop,
    N::CUPTI_CBID_NVTX_nvtxDomainRegisterStringA,
];

/// `nvtxEventAttributes_t` (v2): `payloadType` at 16, `reserved0` (payload count) at 20,
/// `payload` at 24, `messageType` at 32, `message` at 40.
const ATTR_SIZE: usize = 2;
const ATTR_PAYLOAD_TYPE: usize = 16;
const ATTR_PAYLOAD_COUNT: usize = 20;
const ATTR_PAYLOAD: usize = 24;
const ATTR_MESSAGE_TYPE: usize = 32;
const ATTR_MESSAGE: usize = 40;
const MESSAGE_ASCII: i32 = 1;
const MESSAGE_REGISTERED: i32 = 3;
/// `NVTX_PAYLOAD_TYPE_EXT`: `payload` points to `nvtxPayloadData_t { schemaId, size, payload }`.
const PAYLOAD_EXT: i32 = 0xDFBD_0009_u32 as i32;

/// Turns on the NVTX callbacks this module reads.
pub fn enable(c: &mut Capture, lib: &Lib) -> Result<(), CuptiError> {
    for cbid in CALLS {
        c.enable_marker(lib, crate::markers::DOMAIN_NVTX, cbid)?;
    }
    Ok(())
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
    strings: HashMap<u64, Arc<str>>,
    readings: HashMap<u64, Reading>,
    /// Operation label ids by (title handle or text hash, source handle, module prefix).
    labels: HashMap<(u64, u64, usize), u64>,
}

static NAMES: Mutex<Option<Names>> = Mutex::new(None);

/// With `verbose`, the first this many registrations and pushes are said on stderr (what the
/// program's annotations look like, for whoever reads a new framework's).
const SAID: u32 = 3000;
static SAID_SO_FAR: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
/// Compiler-phase pushes said (a compilation pushes hundreds).
static COMPILE_SAID: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

fn tell(a: &Agent, what: impl FnOnce() -> String) {
    if a.config.common.verbose && SAID_SO_FAR.fetch_add(1, std::sync::atomic::Ordering::Relaxed) < SAID {
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

thread_local! {
    /// This thread's open ranges: (domain handle, what it did), outermost first.
    static OPEN: RefCell<Vec<(u64, Open)>> = const { RefCell::new(Vec::new()) };
}

/// Most ranges a thread keeps open (deeper pushes are not read; their pops match nothing).
const MAX_OPEN: usize = 256;

/// # Safety
/// `p` points to `n + 1` readable pointer-sized values.
unsafe fn word(p: *const c_void, n: usize) -> u64 {
    // SAFETY: the caller's contract.
    unsafe { std::ptr::read_unaligned((p as *const u64).add(n)) }
}

/// # Safety
/// `p` is null or a NUL-terminated string alive for the call.
unsafe fn text<'a>(p: *const c_char) -> Option<&'a str> {
    // SAFETY: the caller's contract.
    (!p.is_null()).then(|| unsafe { CStr::from_ptr(p) }.to_str().ok()).flatten()
}

/// The message and the extended payload of an event-attributes struct: `(registered handle or
/// 0, ASCII text, address of the `nvtxPayloadData_t` array or 0)`.
///
/// # Safety
/// `attr` is null or points to an `nvtxEventAttributes_t` of at least its `size` bytes, whose
/// ASCII message and extended payload are alive for the call.
unsafe fn attributes<'a>(attr: *const u8) -> (u64, Option<&'a str>, u64) {
    if attr.is_null() {
        return (0, None, 0);
    }
    let at = |o: usize| attr.wrapping_add(o);
    // SAFETY: the header exists in every version; `size` bounds the rest.
    let size = unsafe { std::ptr::read_unaligned(at(ATTR_SIZE) as *const u16) } as usize;
    if size < ATTR_MESSAGE + 8 {
        return (0, None, 0);
    }
    // SAFETY: within `size`.
    let (kind, msg, ptype, pcount, payload) = unsafe {
        (
            std::ptr::read_unaligned(at(ATTR_MESSAGE_TYPE) as *const i32),
            std::ptr::read_unaligned(at(ATTR_MESSAGE) as *const u64),
            std::ptr::read_unaligned(at(ATTR_PAYLOAD_TYPE) as *const i32),
            std::ptr::read_unaligned(at(ATTR_PAYLOAD_COUNT) as *const i32),
            std::ptr::read_unaligned(at(ATTR_PAYLOAD) as *const u64),
        )
    };
    let first = if ptype == PAYLOAD_EXT && pcount >= 1 { payload } else { 0 };
    match kind {
        MESSAGE_REGISTERED => (msg, None, first),
        // SAFETY: an ASCII message is a NUL-terminated string alive for the call.
        MESSAGE_ASCII => (0, unsafe { text(msg as *const c_char) }, first),
        _ => (0, None, first),
    }
}

/// The first word of the first payload of an extended payload `data` (the registered string of
/// an XLA operation's source locations), or 0.
///
/// # Safety
/// `data` is 0 or points to an `nvtxPayloadData_t { u64 schemaId; size_t size; const void
/// *payload }` alive for the call, whose `payload` has `size` readable bytes.
unsafe fn first_payload_word(data: u64) -> u64 {
    if data == 0 {
        return 0;
    }
    let d = data as *const u64;
    // SAFETY: the caller's contract.
    unsafe {
        let (len, payload) = (std::ptr::read_unaligned(d.add(1)), std::ptr::read_unaligned(d.add(2)));
        if len >= 8 && payload != 0 {
            std::ptr::read_unaligned(payload as *const u64)
        } else {
            0
        }
    }
}

/// An NVTX callback: names, pushes and pops.
///
/// # Safety
/// `data` is the `CUpti_NvtxData` CUPTI passes for NVTX callback `cbid`.
pub unsafe fn on_nvtx(a: &Agent, cbid: u32, data: *const c_void) {
    // SAFETY: the caller's contract.
    let d = unsafe { &*(data as *const ffi::CUpti_NvtxData) };
    let (params, ret) = (d.functionParams, d.functionReturnValue as *const u64);
    match cbid {
        N::CUPTI_CBID_NVTX_nvtxDomainRegisterStringA => {
            // SAFETY: `domain, string`; the return value is the new handle.
            let (s, handle) = unsafe {
                if params.is_null() || ret.is_null() {
                    return;
                }
                (text(word(params, 1) as *const c_char), *ret)
            };
            tell(a, || format!("nvtx string {handle:#x} = {:?}", s.map(|s| &s[..s.len().min(200)])));
            if let (Some(s), Ok(mut g)) = (s, NAMES.lock()) {
                let n = g.get_or_insert_with(Names::default);
                n.strings.insert(handle, s.into());
                n.readings.remove(&handle);
            }
        }
        N::CUPTI_CBID_NVTX_nvtxRangePop => pop(a, 0),
        // SAFETY: `domain` is the first parameter.
        N::CUPTI_CBID_NVTX_nvtxDomainRangePop if !params.is_null() => pop(a, unsafe { word(params, 0) }),
        N::CUPTI_CBID_NVTX_nvtxRangePushA if !params.is_null() => {
            // SAFETY: `message` is the first parameter.
            let t = unsafe { text(word(params, 0) as *const c_char) };
            push(a, 0, (0, t, 0));
        }
        N::CUPTI_CBID_NVTX_nvtxRangePushEx if !params.is_null() => {
            // SAFETY: `eventAttrib` is the first parameter.
            let m = unsafe { attributes(word(params, 0) as *const u8) };
            push(a, 0, m);
        }
        N::CUPTI_CBID_NVTX_nvtxDomainRangePushEx if !params.is_null() => {
            // SAFETY: `domain, core.eventAttrib`.
            let (dom, m) = unsafe { (word(params, 0), attributes(word(params, 1) as *const u8)) };
            push(a, dom, m);
        }
        _ => {}
    }
}

/// What the range `(handle, ascii)` reads as.
fn reading(n: &mut Names, handle: u64, ascii: Option<&str>) -> Reading {
    if handle != 0 {
        if let Some(r) = n.readings.get(&handle) {
            return r.clone();
        }
        let r: Reading = n.strings.get(&handle).map_or(Kind::Other, |s| xla::classify(s)).into();
        n.readings.insert(handle, r.clone());
        return r;
    }
    ascii.map_or(Kind::Other, xla::classify).into()
}

fn push(a: &Agent, dom: u64, (handle, ascii, source): (u64, Option<&str>, u64)) {
    let depth = OPEN.with(|o| o.borrow().len());
    if depth >= MAX_OPEN {
        return;
    }
    let r = match NAMES.lock() {
        Ok(mut g) => reading(g.get_or_insert_with(Names::default), handle, ascii),
        Err(_) => return,
    };
    let quiet = matches!(r, Reading::Compile)
        && COMPILE_SAID.fetch_add(1, std::sync::atomic::Ordering::Relaxed) >= 20;
    if !quiet {
        tell(a, || {
            format!("nvtx push domain {dom:#x} handle {handle:#x} text {ascii:?} payload {source:#x}: {r:?}")
        });
    }
    let open = match r {
        Reading::Module(p) => Open::Module(p),
        Reading::Op(name) => {
            // SAFETY: `source` is the extended payload of the push being called (its caller's
            // `nvtxPayloadData_t` array, alive for the call), or 0.
            let first = unsafe { first_payload_word(source) };
            push_frame(op_label(a, handle, ascii, first, &name));
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
    OPEN.with(|o| o.borrow_mut().push((dom, open)));
}

/// The label id of operation `name` under this thread's innermost module.
fn op_label(a: &Agent, handle: u64, ascii: Option<&str>, source: u64, name: &str) -> u64 {
    let prefix = OPEN
        .with(|o| {
            o.borrow().iter().rev().find_map(|(_, e)| match e {
                Open::Module(p) => Some(p.clone()),
                _ => None,
            })
        })
        .flatten();
    let pkey = prefix.as_ref().map_or(0, |p| Arc::as_ptr(p) as *const u8 as usize);
    let key = match ascii {
        Some(t) if handle == 0 => (xpuprof_agent_kit::stack::hash(&[t.len() as u64, fnv(t)]), source, pkey),
        _ => (handle, source, pkey),
    };
    let Ok(mut g) = NAMES.lock() else { return 0 };
    let n = g.get_or_insert_with(Names::default);
    if let Some(&id) = n.labels.get(&key) {
        return id;
    }
    let place = n.strings.get(&source).and_then(|s| xla::first_location(s).map(|(f, l)| (f.to_owned(), l)));
    let text = xla::op_label(prefix.as_deref(), name, place.as_ref().map(|(f, l)| (f.as_str(), *l)));
    let id = a.core.launches.annotations.label(&text);
    if n.labels.len() < 1 << 20 {
        n.labels.insert(key, id);
    }
    id
}

fn fnv(t: &str) -> u64 {
    t.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3))
}

fn pop(a: &Agent, dom: u64) {
    let open = OPEN.with(|o| {
        let mut o = o.borrow_mut();
        let at = o.iter().rposition(|(d, _)| *d == dom)?;
        Some(o.remove(at).1)
    });
    if !matches!(open, Some(Open::Compile)) {
        tell(a, || format!("nvtx pop domain {dom:#x}: {open:?}"));
    }
    match open {
        Some(Open::Frame) => pop_frame(),
        Some(Open::Compile) => a.core.launches.annotations.exit_compile(),
        _ => {}
    }
}
