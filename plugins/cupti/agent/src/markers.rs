//! Capture windows opened and closed by the program's own markers (`range=`):
//!
//! - `cuda-profiler-api`: `cuProfilerStart` opens a window when it returns, `cuProfilerStop`
//!   closes it when it is called (`cudaProfilerStart`/`Stop` and `torch.cuda.profiler.start`/
//!   `stop` run through them; the runtime calls are watched too, in case a runtime does not).
//! - `nvtx:MESSAGE[@DOMAIN]`: an NVTX range with that message (in that domain; without one, the
//!   default domain) opens a window, on push (`nvtxRangePush*`, closed by the pop of the same
//!   thread at the same depth) or on start (`nvtxRangeStart*`, closed by the end of that range).
//!   NVTX reaches CUPTI only through the NVTX injection the host sets at process start
//!   (`NVTX_INJECTION64_PATH`), so NVTX windows need a program started under xpuprof.
//!
//! The switch happens on the calling thread inside the marker call (so exactly the launches
//! between the markers are recorded); the flush and the window message are left to the window
//! thread ([`crate::window`]). With `range_end=stop` only the first range opens a window.

use std::cell::RefCell;
use std::collections::HashMap;
use std::os::raw::c_void;
use std::sync::Mutex;

use xpuprof_agent_kit::wire::control::{CAUSE_NVTX, CAUSE_PROFILER_API};

use crate::annotations::nvtx;
use crate::capture::Capture;
use crate::config::Range;
use crate::sys::ffi::{self, CUpti_nvtx_api_trace_cbid as N};
use crate::sys::{CuptiError, Lib};
use crate::{window, Agent};

const PROFILER_START: [(u32, u32); 2] = [
    (
        ffi::DOMAIN_DRIVER as u32,
        ffi::CUpti_driver_api_trace_cbid_enum::CUPTI_DRIVER_TRACE_CBID_cuProfilerStart,
    ),
    (
        ffi::DOMAIN_RUNTIME as u32,
        ffi::CUpti_runtime_api_trace_cbid_enum::CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStart_v4000,
    ),
];
const PROFILER_STOP: [(u32, u32); 2] = [
    (
        ffi::DOMAIN_DRIVER as u32,
        ffi::CUpti_driver_api_trace_cbid_enum::CUPTI_DRIVER_TRACE_CBID_cuProfilerStop,
    ),
    (
        ffi::DOMAIN_RUNTIME as u32,
        ffi::CUpti_runtime_api_trace_cbid_enum::CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStop_v4000,
    ),
];
/// The NVTX callback domain.
pub const DOMAIN_NVTX: u32 = ffi::CUpti_CallbackDomain::CUPTI_CB_DOMAIN_NVTX;
const NVTX_CALLS: [u32; 12] = [
    N::CUPTI_CBID_NVTX_nvtxRangePushA,
    N::CUPTI_CBID_NVTX_nvtxRangePushEx,
    N::CUPTI_CBID_NVTX_nvtxRangePop,
    N::CUPTI_CBID_NVTX_nvtxRangeStartA,
    N::CUPTI_CBID_NVTX_nvtxRangeStartEx,
    N::CUPTI_CBID_NVTX_nvtxRangeEnd,
    N::CUPTI_CBID_NVTX_nvtxDomainRangePushEx,
    N::CUPTI_CBID_NVTX_nvtxDomainRangePop,
    N::CUPTI_CBID_NVTX_nvtxDomainRangeStartEx,
    N::CUPTI_CBID_NVTX_nvtxDomainRangeEnd,
    N::CUPTI_CBID_NVTX_nvtxDomainCreateA,
    N::CUPTI_CBID_NVTX_nvtxDomainRegisterStringA,
];

/// Turns on the callbacks of `range`'s markers.
pub fn enable(c: &mut Capture, lib: &Lib, range: &Range) -> Result<(), CuptiError> {
    match range {
        Range::ProfilerApi => {
            for (d, cbid) in PROFILER_START.into_iter().chain(PROFILER_STOP) {
                c.enable_marker(lib, d, cbid)?;
            }
        }
        Range::Nvtx { .. } => {
            for cbid in NVTX_CALLS {
                c.enable_marker(lib, DOMAIN_NVTX, cbid)?;
            }
        }
    }
    Ok(())
}

/// True for a driver or runtime callback that is a profiler-API marker.
pub fn is_profiler_call(domain: u32, cbid: u32) -> bool {
    PROFILER_START.contains(&(domain, cbid)) || PROFILER_STOP.contains(&(domain, cbid))
}

/// `cuProfilerStart` at its exit opens a window, `cuProfilerStop` at its entry closes it.
pub fn on_profiler_call(a: &Agent, domain: u32, cbid: u32, exit: bool) {
    if a.config.opts.range != Some(Range::ProfilerApi) {
        return;
    }
    if PROFILER_START.contains(&(domain, cbid)) && exit {
        window::from_marker(a, true, CAUSE_PROFILER_API, String::new());
    } else if PROFILER_STOP.contains(&(domain, cbid)) && !exit {
        window::from_marker(a, false, CAUSE_PROFILER_API, String::new());
    }
}

// ---- NVTX -------------------------------------------------------------------------------------

/// NVTX names seen so far: domains and registered strings by handle; the range id that opened
/// the window (start/end ranges).
#[derive(Debug, Default)]
struct Names {
    domains: HashMap<u64, String>,
    strings: HashMap<u64, String>,
    opener: Option<u64>,
}

static NAMES: Mutex<Option<Names>> = Mutex::new(None);

thread_local! {
    /// Per domain handle: this thread's push depth, and the depth of the push that opened the
    /// window, if this thread opened it.
    static DEPTHS: RefCell<Vec<(u64, u32, Option<u32>)>> = const { RefCell::new(Vec::new()) };
}

/// The message of the event attributes at `attr` (read as [`nvtx::event`] reads them, never
/// followed blindly), when it is ASCII or a registered string seen.
fn attr_message(attr: u64, names: &Names) -> Option<String> {
    match nvtx::event(attr).ok()?.message {
        nvtx::Message::Ascii(t) => Some(t),
        nvtx::Message::Registered(h) => names.strings.get(&h).cloned(),
    }
}

/// An NVTX callback: remembers domain and string names; opens or closes the window.
///
/// # Safety
/// `data` is the `CUpti_NvtxData` CUPTI passes for NVTX callback `cbid`.
pub unsafe fn on_nvtx(a: &Agent, cbid: u32, data: *const c_void) {
    let Some(Range::Nvtx { message, domain }) = &a.config.opts.range else { return };
    // SAFETY: the caller's contract.
    let d = unsafe { &*(data as *const ffi::CUpti_NvtxData) };
    let (params, ret) = (d.functionParams, d.functionReturnValue as *const u64);
    if params.is_null() {
        return;
    }
    let Ok(mut guard) = NAMES.lock() else { return };
    let names = guard.get_or_insert_with(Names::default);
    // (domain handle, message) of a push/start; the domain handle of a pop; the id of an end.
    let (dom, msg) = match cbid {
        N::CUPTI_CBID_NVTX_nvtxDomainCreateA | N::CUPTI_CBID_NVTX_nvtxDomainRegisterStringA => {
            let create = cbid == N::CUPTI_CBID_NVTX_nvtxDomainCreateA;
            // SAFETY: the parameter structs of these calls (generated_nvtx_meta.h): `name`, or
            // `domain, string`.
            let s = nvtx::text(unsafe { nvtx::param(params, usize::from(!create)) });
            if let (false, Some(t)) = (ret.is_null(), s) {
                let map = if create { &mut names.domains } else { &mut names.strings };
                // SAFETY: the return value CUPTI passes is the new handle.
                map.insert(unsafe { std::ptr::read_unaligned(ret) }, t);
            }
            return;
        }
        N::CUPTI_CBID_NVTX_nvtxRangePushA | N::CUPTI_CBID_NVTX_nvtxRangeStartA => {
            // SAFETY: `message` is the first parameter.
            (0, nvtx::text(unsafe { nvtx::param(params, 0) }))
        }
        N::CUPTI_CBID_NVTX_nvtxRangePushEx | N::CUPTI_CBID_NVTX_nvtxRangeStartEx => {
            // SAFETY: `eventAttrib` is the first parameter.
            (0, attr_message(unsafe { nvtx::param(params, 0) }, names))
        }
        N::CUPTI_CBID_NVTX_nvtxDomainRangePushEx | N::CUPTI_CBID_NVTX_nvtxDomainRangeStartEx => {
            // SAFETY: `domain, core.eventAttrib`.
            let (dom, attr) = unsafe { (nvtx::param(params, 0), nvtx::param(params, 1)) };
            (dom, attr_message(attr, names))
        }
        // SAFETY: `domain` first for the domain pop; nothing for the plain pop.
        N::CUPTI_CBID_NVTX_nvtxDomainRangePop => (unsafe { nvtx::param(params, 0) }, None),
        N::CUPTI_CBID_NVTX_nvtxRangePop => (0, None),
        N::CUPTI_CBID_NVTX_nvtxRangeEnd | N::CUPTI_CBID_NVTX_nvtxDomainRangeEnd => {
            let at = usize::from(cbid == N::CUPTI_CBID_NVTX_nvtxDomainRangeEnd);
            // SAFETY: `id` (after `domain` for the domain call).
            let id = unsafe { nvtx::param(params, at) };
            if names.opener.is_some_and(|o| o == id) {
                names.opener = None;
                drop(guard);
                window::from_marker(a, false, CAUSE_NVTX, message.clone());
            }
            return;
        }
        _ => return,
    };
    let domain_ok = match domain {
        None => dom == 0,
        Some(want) => names.domains.get(&dom).is_some_and(|n| n == want),
    };
    let is_start = matches!(
        cbid,
        N::CUPTI_CBID_NVTX_nvtxRangeStartA
            | N::CUPTI_CBID_NVTX_nvtxRangeStartEx
            | N::CUPTI_CBID_NVTX_nvtxDomainRangeStartEx
    );
    let matches = domain_ok && msg.as_deref() == Some(message.as_str());
    if is_start {
        if matches && !ret.is_null() && names.opener.is_none() {
            // SAFETY: the range id the start call returns.
            names.opener = Some(unsafe { std::ptr::read_unaligned(ret) });
            drop(guard);
            window::from_marker(a, true, CAUSE_NVTX, message.clone());
        }
        return;
    }
    drop(guard);
    let push = matches!(
        cbid,
        N::CUPTI_CBID_NVTX_nvtxRangePushA
            | N::CUPTI_CBID_NVTX_nvtxRangePushEx
            | N::CUPTI_CBID_NVTX_nvtxDomainRangePushEx
    );
    let edge = DEPTHS.with(|d| {
        let mut d = d.borrow_mut();
        let i = d.iter().position(|e| e.0 == dom).unwrap_or_else(|| {
            d.push((dom, 0, None));
            d.len() - 1
        });
        let e = &mut d[i];
        if push {
            let opens = matches && e.2.is_none();
            if opens {
                e.2 = Some(e.1);
            }
            e.1 += 1;
            opens.then_some(true)
        } else {
            e.1 = e.1.saturating_sub(1);
            (e.2 == Some(e.1)).then(|| {
                e.2 = None;
                false
            })
        }
    });
    if let Some(open) = edge {
        window::from_marker(a, open, CAUSE_NVTX, message.clone());
    }
}
