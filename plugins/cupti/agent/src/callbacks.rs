//! The functions CUPTI calls: the timestamp source, the activity buffer request/completion
//! pair, and the API entry/exit callback on launch-class calls.

use std::os::raw::c_void;
use std::sync::atomic::{AtomicUsize, Ordering};

use xpuprof_agent_kit::buffers::{Buffer, Pool};
use xpuprof_agent_kit::{stack, trampoline};

use crate::sys::ffi::{self, DOMAIN_DRIVER, DOMAIN_RUNTIME};
use crate::{activity, agent, annotations, graphs, markers, nccl, pc_sampling, window};

pub(crate) unsafe extern "C" fn monotonic_ns() -> u64 {
    xpuprof_sdk::clock::now_ns()
}

/// The record buffers' size of the agent being started (0 before): what [`buffer_requested`]
/// allocates before the agent is stored.
pub(crate) static START_BUFFER_BYTES: AtomicUsize = AtomicUsize::new(0);

/// # Safety
/// Called by CUPTI with valid out-pointers.
pub(crate) unsafe extern "C" fn buffer_requested(
    buffer: *mut *mut u8,
    size: *mut usize,
    max_records: *mut usize,
) {
    // While the agent is still starting (its record kinds are enabled before it is stored),
    // CUPTI may already ask: a buffer of the agent's size is allocated as its pool would, so
    // those records are not dropped (CUPTI did not ask again for them after a null buffer).
    let (p, n) = match agent() {
        Some(a) => a.core.channel.pool().get(),
        None => match START_BUFFER_BYTES.load(Ordering::Relaxed) {
            0 => (std::ptr::null_mut(), 0),
            bytes => Pool::new(bytes).get(),
        },
    };
    // SAFETY: CUPTI passes valid pointers to write the buffer, its size and the record limit.
    unsafe {
        *buffer = p;
        *size = n;
        *max_records = 0;
    }
}

/// # Safety
/// Called by CUPTI with a buffer from [`buffer_requested`] holding `valid` bytes of records.
pub(crate) unsafe extern "C" fn buffer_completed(
    ctx: ffi::CUcontext,
    stream: u32,
    buf: *mut u8,
    size: usize,
    valid: usize,
) {
    let Some(a) = agent() else { return };
    if buf.is_null() {
        return;
    }
    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        a.core.drain_launches();
        // SAFETY: `buf` came from our pool with capacity `size`; CUPTI filled `valid` bytes.
        let owned = unsafe { Buffer::from_raw(buf, size, valid) };
        if valid > 0 {
            if let Ok(mut f) = activity::FRAMER.lock() {
                f.get_or_insert_with(Default::default).frame(a, owned);
            }
        } else {
            a.core.channel.pool().put(owned);
        }
        if let Ok(n) = a.lib.dropped(ctx, stream) {
            if n > 0 {
                a.core.send_dropped(n as u64);
            }
        }
    }));
}

/// The API-entry/exit callback, enabled only for launch-class calls, and the resource callback
/// for graph nodes ([`graphs`]).
///
/// # Safety
/// Called by CUPTI; for the runtime and driver domains `data` points to a `CUpti_CallbackData`.
pub(crate) unsafe extern "C" fn on_api(_user: *mut c_void, domain: u32, cbid: u32, data: *const c_void) {
    let regs = stack::registers();
    let Some(a) = agent() else { return };
    if a.config.opts.callback_noop {
        return;
    }
    if data.is_null() {
        return;
    }
    let api = domain == DOMAIN_RUNTIME as u32 || domain == DOMAIN_DRIVER as u32;
    // SAFETY: for API domains CUPTI passes a valid CUpti_CallbackData for the call's duration.
    let exit = api
        && unsafe { &*(data as *const ffi::CUpti_CallbackData) }.callbackSite
            == ffi::CUpti_ApiCallbackSite::CUPTI_API_EXIT;
    if window::finalize_hook(a, exit) {
        return;
    }
    if domain == markers::DOMAIN_NVTX {
        if a.config.opts.range.is_some() {
            // SAFETY: for the NVTX domain CUPTI passes a valid CUpti_NvtxData.
            unsafe { markers::on_nvtx(a, cbid, data) };
        }
        if a.annotations {
            // SAFETY: as above.
            unsafe { annotations::on_nvtx(a, cbid, data) };
        }
        // SAFETY: as above.
        unsafe { nccl::on_nvtx(cbid, data) };
        return;
    }
    if a.config.opts.range.is_some() && api && markers::is_profiler_call(domain, cbid) {
        markers::on_profiler_call(a, domain, cbid, exit);
        return;
    }
    if domain == graphs::DOMAIN_RESOURCE {
        // SAFETY: for the resource domain CUPTI passes a valid CUpti_ResourceData.
        unsafe { pc_sampling::on_resource(a, cbid, data) };
        // SAFETY: as above.
        unsafe { graphs::on_resource(a, cbid, data) };
        return;
    }
    if !api {
        return;
    }
    // SAFETY: for API domains CUPTI passes a valid CUpti_CallbackData for the call's duration.
    let d = unsafe { &*(data as *const ffi::CUpti_CallbackData) };
    if d.callbackSite == ffi::CUpti_ApiCallbackSite::CUPTI_API_ENTER {
        pc_sampling::launch_context(a, d.context);
        graphs::enter(d.correlationId, d.symbolName);
        nccl::launch(a, graphs::current());
        let outer = a.core.launches.enter(&a.sites(), domain as u8, cbid, d.correlationId, regs);
        if let Some(start) = outer.filter(|_| a.config.common.stacks.trampoline()) {
            trampoline::call(&start, xpuprof_sdk::model::backend::CUDA, d.correlationId as u64);
        }
    } else {
        graphs::exit();
        let result = if d.functionReturnValue.is_null() {
            0
        } else {
            // SAFETY: at API exit CUPTI points functionReturnValue at the call's result
            // (cudaError_t / CUresult, both 32-bit enums).
            unsafe { *(d.functionReturnValue as *const u32) }
        };
        if !a.core.launches.exit_unentered(&a.sites(), domain as u8, cbid, d.correlationId, regs, result) {
            a.core.launches.exit(result);
        }
    }
}
