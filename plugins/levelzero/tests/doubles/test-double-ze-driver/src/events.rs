//! Event pools and events. Only events of pools created with
//! `ZE_EVENT_POOL_FLAG_KERNEL_TIMESTAMP` answer `zeEventQueryKernelTimestamp`.

use level_zero_sys::*;

use crate::exec;
use crate::state::{destroy, handle, obj, Event, Pool};

const SUCCESS: ze_result_t = _ze_result_t::ZE_RESULT_SUCCESS;

pub unsafe extern "C" fn pool_create(
    _c: ze_context_handle_t,
    desc: *const ze_event_pool_desc_t,
    _n: u32,
    _d: *mut ze_device_handle_t,
    out: *mut ze_event_pool_handle_t,
) -> ze_result_t {
    // SAFETY: the loader validated `desc` and `out`.
    unsafe {
        let timestamps = (*desc).flags & _ze_event_pool_flag_t::ZE_EVENT_POOL_FLAG_KERNEL_TIMESTAMP != 0;
        *out = handle(Pool { timestamps });
    }
    SUCCESS
}

pub unsafe extern "C" fn pool_destroy(h: ze_event_pool_handle_t) -> ze_result_t {
    // SAFETY: `h` came from pool_create.
    unsafe { destroy::<Pool>(h) };
    SUCCESS
}

pub unsafe extern "C" fn event_create(
    pool: ze_event_pool_handle_t,
    _desc: *const ze_event_desc_t,
    out: *mut ze_event_handle_t,
) -> ze_result_t {
    // SAFETY: `pool` came from pool_create; `out` is the caller's out-parameter.
    unsafe {
        let p: &Pool = obj(pool);
        *out = handle(Event { timestamps: p.timestamps, state: Default::default() });
    }
    SUCCESS
}

pub unsafe extern "C" fn event_destroy(h: ze_event_handle_t) -> ze_result_t {
    exec::forget(h as usize);
    // SAFETY: `h` came from event_create.
    unsafe { destroy::<Event>(h) };
    SUCCESS
}

pub unsafe extern "C" fn host_signal(h: ze_event_handle_t) -> ze_result_t {
    // SAFETY: `h` came from event_create.
    let e: &Event = unsafe { obj(h) };
    let mut s = e.state.lock().expect("event lock");
    s.signaled = true;
    s.visible = true;
    SUCCESS
}

pub unsafe extern "C" fn host_synchronize(h: ze_event_handle_t, _timeout: u64) -> ze_result_t {
    exec::host_sync();
    // SAFETY: `h` came from event_create.
    unsafe { query_status(h) }
}

pub unsafe extern "C" fn query_status(h: ze_event_handle_t) -> ze_result_t {
    // SAFETY: `h` came from event_create.
    let e: &Event = unsafe { obj(h) };
    let s = e.state.lock().expect("event lock");
    if s.signaled && s.visible {
        SUCCESS
    } else {
        _ze_result_t::ZE_RESULT_NOT_READY
    }
}

pub unsafe extern "C" fn host_reset(h: ze_event_handle_t) -> ze_result_t {
    exec::forget(h as usize);
    // SAFETY: `h` came from event_create.
    let e: &Event = unsafe { obj(h) };
    *e.state.lock().expect("event lock") = Default::default();
    SUCCESS
}

pub unsafe extern "C" fn query_kernel_timestamp(
    h: ze_event_handle_t,
    out: *mut ze_kernel_timestamp_result_t,
) -> ze_result_t {
    // SAFETY: `h` came from event_create.
    let e: &Event = unsafe { obj(h) };
    if !e.timestamps {
        return _ze_result_t::ZE_RESULT_ERROR_INVALID_ARGUMENT;
    }
    let s = *e.state.lock().expect("event lock");
    let (Some((start, end)), true) = (s.ts, s.visible) else { return _ze_result_t::ZE_RESULT_NOT_READY };
    let data = ze_kernel_timestamp_data_t { kernelStart: start, kernelEnd: end };
    // SAFETY: the caller's out-parameter.
    unsafe { *out = ze_kernel_timestamp_result_t { global: data, context: data } };
    SUCCESS
}
