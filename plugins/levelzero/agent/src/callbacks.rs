//! The tracing layer's prologue and epilogue callbacks, and their registration.
//!
//! Each callback receives the call's `*_params_t` (pointers to the arguments, which a
//! prologue may change: the signal event is replaced that way) and hands over to [`Agent`].
//! Calls the agent itself makes from its reader thread are traced too and skipped here.

use std::os::raw::c_void;

use level_zero_sys::*;
use xpuprof_levelzero_wire::{api_kind, copy_kind, op_kind, Op};

use crate::agent::{active, kernel_op, Agent};
use crate::state::{Kernel, List};

/// Declares a callback `$f(params: *mut $p)` whose body runs with `a: &Agent`, `p: &$p`,
/// `r: ze_result_t` when the agent is active.
macro_rules! callback {
    ($f:ident, $p:ty, |$a:ident, $params:ident, $r:ident| $body:block) => {
        unsafe extern "C" fn $f(params: *mut $p, result: ze_result_t, _u: *mut c_void, _i: *mut *mut c_void) {
            let Some($a) = active() else { return };
            // SAFETY: the tracing layer passes the call's parameter block, valid for the callback.
            let $params: &$p = unsafe { &*params };
            let $r = result;
            let _ = &$r;
            $body
        }
    };
}

fn groups(g: *const ze_group_count_t) -> Option<[u32; 3]> {
    // SAFETY: the application's launch arguments (host memory for direct launches).
    (!g.is_null()).then(|| unsafe { [(*g).groupCountX, (*g).groupCountY, (*g).groupCountZ] })
}

callback!(launch_pro, ze_command_list_append_launch_kernel_params_t, |a, p, r| {
    // SAFETY: argument pointers of the call.
    let (l, k, g) = unsafe { (*p.phCommandList as usize, *p.phKernel as usize, *p.ppLaunchFuncArgs) };
    let op = kernel_op(&a.lock(), k, groups(g));
    // SAFETY: the signal-event pointer of this call\'s parameter block.
    unsafe { a.append_prologue("zeCommandListAppendLaunchKernel", l, p.phSignalEvent, op) };
});
callback!(coop_pro, ze_command_list_append_launch_cooperative_kernel_params_t, |a, p, r| {
    // SAFETY: argument pointers of the call.
    let (l, k, g) = unsafe { (*p.phCommandList as usize, *p.phKernel as usize, *p.ppLaunchFuncArgs) };
    let op = kernel_op(&a.lock(), k, groups(g));
    // SAFETY: the signal-event pointer of this call\'s parameter block.
    unsafe { a.append_prologue("zeCommandListAppendLaunchCooperativeKernel", l, p.phSignalEvent, op) };
});
callback!(indirect_pro, ze_command_list_append_launch_kernel_indirect_params_t, |a, p, r| {
    // SAFETY: argument pointers of the call. The group counts live in device memory: not read.
    let (l, k) = unsafe { (*p.phCommandList as usize, *p.phKernel as usize) };
    let op = kernel_op(&a.lock(), k, None);
    // SAFETY: the signal-event pointer of this call\'s parameter block.
    unsafe { a.append_prologue("zeCommandListAppendLaunchKernelIndirect", l, p.phSignalEvent, op) };
});

/// Host or device memory, for a copy's direction.
fn is_device(a: &Agent, context: usize, ptr: *const c_void) -> bool {
    let mut props = ze_memory_allocation_properties_t {
        stype: _ze_structure_type_t::ZE_STRUCTURE_TYPE_MEMORY_ALLOCATION_PROPERTIES,
        ..Default::default()
    };
    // SAFETY: inside a callback the call goes to the driver; `props` is a local.
    let rc = unsafe { a.ze.zeMemGetAllocProperties(context as _, ptr, &mut props, std::ptr::null_mut()) };
    rc == 0 && props.type_ == _ze_memory_type_t::ZE_MEMORY_TYPE_DEVICE
}

callback!(copy_pro, ze_command_list_append_memory_copy_params_t, |a, p, r| {
    // SAFETY: argument pointers of the call.
    let (l, dst, src, size) = unsafe { (*p.phCommandList as usize, *p.pdstptr, *p.psrcptr, *p.psize) };
    let ctx = a.lock().lists.get(&l).map_or(0, |l| l.context);
    let copy = match (is_device(a, ctx, src), is_device(a, ctx, dst)) {
        (false, true) => copy_kind::HTOD,
        (true, false) => copy_kind::DTOH,
        (true, true) => copy_kind::DTOD,
        (false, false) => copy_kind::HTOH,
    };
    let op = Op { kind: op_kind::COPY, copy, bytes: size as u64, ..Default::default() };
    // SAFETY: the signal-event pointer of this call\'s parameter block.
    unsafe { a.append_prologue("zeCommandListAppendMemoryCopy", l, p.phSignalEvent, op) };
});
callback!(fill_pro, ze_command_list_append_memory_fill_params_t, |a, p, r| {
    // SAFETY: argument pointers of the call.
    let (l, size) = unsafe { (*p.phCommandList as usize, *p.psize) };
    let op = Op { kind: op_kind::FILL, bytes: size as u64, ..Default::default() };
    // SAFETY: the signal-event pointer of this call\'s parameter block.
    unsafe { a.append_prologue("zeCommandListAppendMemoryFill", l, p.phSignalEvent, op) };
});
callback!(barrier_pro, ze_command_list_append_barrier_params_t, |a, p, r| {
    // SAFETY: argument pointers of the call.
    let l = unsafe { *p.phCommandList as usize };
    let op = Op { kind: op_kind::BARRIER, ..Default::default() };
    // SAFETY: the signal-event pointer of this call\'s parameter block.
    unsafe { a.append_prologue("zeCommandListAppendBarrier", l, p.phSignalEvent, op) };
});
unsafe extern "C" fn append_epi<P>(_p: *mut P, r: ze_result_t, _u: *mut c_void, _i: *mut *mut c_void) {
    if let Some(a) = active() {
        a.append_epilogue(r);
    }
}

callback!(execute_pro, ze_command_queue_execute_command_lists_params_t, |a, p, r| {
    // SAFETY: argument pointers of the call; the list array holds `numCommandLists` handles.
    let (q, lists) = unsafe {
        let n = *p.pnumCommandLists as usize;
        let l = *p.pphCommandLists;
        let lists = if l.is_null() { Vec::new() } else { (0..n).map(|i| *l.add(i) as usize).collect() };
        (*p.phCommandQueue as usize, lists)
    };
    a.execute_prologue(q, &lists);
});
unsafe extern "C" fn execute_epi<P>(_p: *mut P, r: ze_result_t, _u: *mut c_void, _i: *mut *mut c_void) {
    if let Some(a) = active() {
        a.execute_epilogue(r);
    }
}

callback!(queue_sync_pro, ze_command_queue_synchronize_params_t, |a, p, r| {
    let _ = p;
    a.call_prologue("zeCommandQueueSynchronize", api_kind::SYNC);
});
callback!(event_sync_pro, ze_event_host_synchronize_params_t, |a, p, r| {
    let _ = p;
    a.call_prologue("zeEventHostSynchronize", api_kind::SYNC);
});
callback!(fence_sync_pro, ze_fence_host_synchronize_params_t, |a, p, r| {
    let _ = p;
    a.call_prologue("zeFenceHostSynchronize", api_kind::SYNC);
});
unsafe extern "C" fn sync_epi<P>(_p: *mut P, r: ze_result_t, _u: *mut c_void, _i: *mut *mut c_void) {
    if let Some(a) = active() {
        a.sync_epilogue(r);
    }
}

callback!(list_create_epi, ze_command_list_create_params_t, |a, p, r| {
    if r == 0 {
        // SAFETY: argument pointers of a successful call; the new handle is written.
        let (ctx, dev, l) =
            unsafe { (*p.phContext as usize, *p.phDevice as usize, **p.pphCommandList as usize) };
        a.lock().lists.insert(l, List { context: ctx, device: dev, immediate: false, recorded: Vec::new() });
    }
});
callback!(immediate_create_epi, ze_command_list_create_immediate_params_t, |a, p, r| {
    if r == 0 {
        // SAFETY: argument pointers of a successful call; the new handle is written.
        let (ctx, dev, l) =
            unsafe { (*p.phContext as usize, *p.phDevice as usize, **p.pphCommandList as usize) };
        a.lock().lists.insert(l, List { context: ctx, device: dev, immediate: true, recorded: Vec::new() });
        a.send(&[xpuprof_levelzero_wire::Msg::Queue {
            handle: l as u64,
            device: dev as u64,
            kind: xpuprof_levelzero_wire::queue_kind::IMMEDIATE_LIST,
        }]);
    }
});
callback!(queue_create_epi, ze_command_queue_create_params_t, |a, p, r| {
    if r == 0 {
        // SAFETY: argument pointers of a successful call; the new handle is written.
        let (dev, q) = unsafe { (*p.phDevice as usize, **p.pphCommandQueue as usize) };
        a.lock().queues.insert(q, dev);
        a.send(&[xpuprof_levelzero_wire::Msg::Queue {
            handle: q as u64,
            device: dev as u64,
            kind: xpuprof_levelzero_wire::queue_kind::COMMAND_QUEUE,
        }]);
    }
});
callback!(list_destroy_pro, ze_command_list_destroy_params_t, |a, p, r| {
    // SAFETY: argument pointer of the call.
    a.close_list(unsafe { *p.phCommandList } as usize, true);
});
callback!(list_reset_pro, ze_command_list_reset_params_t, |a, p, r| {
    // SAFETY: argument pointer of the call.
    a.close_list(unsafe { *p.phCommandList } as usize, false);
});
callback!(context_destroy_pro, ze_context_destroy_params_t, |a, p, r| {
    // SAFETY: argument pointer of the call.
    a.close_context(unsafe { *p.phContext } as usize);
});

callback!(pool_create_epi, ze_event_pool_create_params_t, |a, p, r| {
    // SAFETY: argument pointers of the call; the handle is written on success.
    let (flags, pool) = unsafe { ((**p.pdesc).flags, if r == 0 { **p.pphEventPool as usize } else { 0 }) };
    if pool != 0 && flags & _ze_event_pool_flag_t::ZE_EVENT_POOL_FLAG_KERNEL_TIMESTAMP != 0 {
        a.lock().ts_pools.insert(pool);
    }
});
callback!(event_create_epi, ze_event_create_params_t, |a, p, r| {
    if r == 0 {
        // SAFETY: argument pointers of a successful call.
        let (pool, ev) = unsafe { (*p.phEventPool as usize, **p.pphEvent as usize) };
        let mut st = a.lock();
        if st.ts_pools.contains(&pool) {
            st.ts_events.insert(ev);
        }
    }
});
callback!(event_reset_pro, ze_event_host_reset_params_t, |a, p, r| {
    // SAFETY: argument pointer of the call.
    a.read_event(unsafe { *p.phEvent } as usize);
});
callback!(event_destroy_pro, ze_event_destroy_params_t, |a, p, r| {
    // SAFETY: argument pointer of the call.
    let ev = unsafe { *p.phEvent } as usize;
    a.read_event(ev);
    a.lock().ts_events.remove(&ev);
});

callback!(kernel_create_epi, ze_kernel_create_params_t, |a, p, r| {
    if r == 0 {
        // SAFETY: argument pointers of a successful call; the name is the application's C string.
        let (k, name) = unsafe {
            let d = *p.pdesc;
            let name = if (*d).pKernelName.is_null() {
                String::new()
            } else {
                std::ffi::CStr::from_ptr((*d).pKernelName).to_string_lossy().into_owned()
            };
            (**p.pphKernel as usize, name)
        };
        let mut out = Vec::new();
        let mut st = a.lock();
        let name = st.intern(&name, &mut out);
        st.kernels.insert(k, Kernel { name, group_size: [1, 1, 1] });
        // Under the lock: the name reaches the channel before another thread can use its id.
        a.send(&out);
        drop(st);
    }
});
callback!(group_size_epi, ze_kernel_set_group_size_params_t, |a, p, r| {
    if r == 0 {
        // SAFETY: argument pointers of a successful call.
        let (k, g) = unsafe { (*p.phKernel as usize, [*p.pgroupSizeX, *p.pgroupSizeY, *p.pgroupSizeZ]) };
        if let Some(k) = a.lock().kernels.get_mut(&k) {
            k.group_size = g;
        }
    }
});

/// Registers a prologue (`pro`) or epilogue (`epi`) through the loader's
/// `zelTracer*RegisterCallback`.
macro_rules! register {
    ($ze:ident, $t:ident, $reg:ident, pro $f:expr) => {
        // SAFETY: `$t` is a live tracer (the caller's contract); the callback has the signature
        // the layer calls.
        crate::sys::check(stringify!($reg), unsafe {
            $ze.$reg($t, _zel_tracer_reg_t::ZEL_REGISTER_PROLOGUE, Some($f))
        })?
    };
    ($ze:ident, $t:ident, $reg:ident, epi $f:expr) => {
        // SAFETY: as above.
        crate::sys::check(stringify!($reg), unsafe {
            $ze.$reg($t, _zel_tracer_reg_t::ZEL_REGISTER_EPILOGUE, Some($f))
        })?
    };
}

/// Registers every callback on `t`.
///
/// # Safety
/// `t` is a tracer `zelTracerCreate` returned and has not been destroyed.
pub unsafe fn register_all(ze: &ZeLoader, t: zel_tracer_handle_t) -> Result<(), crate::sys::ZeError> {
    register!(ze, t, zelTracerCommandListAppendLaunchKernelRegisterCallback, pro launch_pro);
    register!(ze, t, zelTracerCommandListAppendLaunchKernelRegisterCallback, epi append_epi);
    register!(ze, t, zelTracerCommandListAppendLaunchCooperativeKernelRegisterCallback, pro coop_pro);
    register!(ze, t, zelTracerCommandListAppendLaunchCooperativeKernelRegisterCallback, epi append_epi);
    register!(ze, t, zelTracerCommandListAppendLaunchKernelIndirectRegisterCallback, pro indirect_pro);
    register!(ze, t, zelTracerCommandListAppendLaunchKernelIndirectRegisterCallback, epi append_epi);
    register!(ze, t, zelTracerCommandListAppendMemoryCopyRegisterCallback, pro copy_pro);
    register!(ze, t, zelTracerCommandListAppendMemoryCopyRegisterCallback, epi append_epi);
    register!(ze, t, zelTracerCommandListAppendMemoryFillRegisterCallback, pro fill_pro);
    register!(ze, t, zelTracerCommandListAppendMemoryFillRegisterCallback, epi append_epi);
    register!(ze, t, zelTracerCommandListAppendBarrierRegisterCallback, pro barrier_pro);
    register!(ze, t, zelTracerCommandListAppendBarrierRegisterCallback, epi append_epi);
    register!(ze, t, zelTracerCommandQueueExecuteCommandListsRegisterCallback, pro execute_pro);
    register!(ze, t, zelTracerCommandQueueExecuteCommandListsRegisterCallback, epi execute_epi);
    register!(ze, t, zelTracerCommandQueueSynchronizeRegisterCallback, pro queue_sync_pro);
    register!(ze, t, zelTracerCommandQueueSynchronizeRegisterCallback, epi sync_epi);
    register!(ze, t, zelTracerEventHostSynchronizeRegisterCallback, pro event_sync_pro);
    register!(ze, t, zelTracerEventHostSynchronizeRegisterCallback, epi sync_epi);
    register!(ze, t, zelTracerFenceHostSynchronizeRegisterCallback, pro fence_sync_pro);
    register!(ze, t, zelTracerFenceHostSynchronizeRegisterCallback, epi sync_epi);
    register!(ze, t, zelTracerCommandListCreateRegisterCallback, epi list_create_epi);
    register!(ze, t, zelTracerCommandListCreateImmediateRegisterCallback, epi immediate_create_epi);
    register!(ze, t, zelTracerCommandQueueCreateRegisterCallback, epi queue_create_epi);
    register!(ze, t, zelTracerCommandListDestroyRegisterCallback, pro list_destroy_pro);
    register!(ze, t, zelTracerCommandListResetRegisterCallback, pro list_reset_pro);
    register!(ze, t, zelTracerContextDestroyRegisterCallback, pro context_destroy_pro);
    register!(ze, t, zelTracerEventPoolCreateRegisterCallback, epi pool_create_epi);
    register!(ze, t, zelTracerEventCreateRegisterCallback, epi event_create_epi);
    register!(ze, t, zelTracerDriverGetExtensionFunctionAddressRegisterCallback, epi crate::extensions::extension_address_epi);
    register!(ze, t, zelTracerEventHostResetRegisterCallback, pro event_reset_pro);
    register!(ze, t, zelTracerEventDestroyRegisterCallback, pro event_destroy_pro);
    register!(ze, t, zelTracerKernelCreateRegisterCallback, epi kernel_create_epi);
    register!(ze, t, zelTracerKernelSetGroupSizeRegisterCallback, epi group_size_epi);
    Ok(())
}
