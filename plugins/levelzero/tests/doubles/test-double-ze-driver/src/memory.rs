//! Memory: host, device and shared allocations are host memory here (so copies really copy),
//! remembered with their type for `zeMemGetAllocProperties`.

use level_zero_sys::*;
use std::collections::BTreeMap;
use std::ffi::c_void;
use std::sync::Mutex;

const SUCCESS: ze_result_t = _ze_result_t::ZE_RESULT_SUCCESS;

/// Start address → (length, `ze_memory_type_t`).
static ALLOCS: Mutex<BTreeMap<usize, (usize, ze_memory_type_t)>> = Mutex::new(BTreeMap::new());

unsafe fn alloc(size: usize, align: usize, ty: ze_memory_type_t, out: *mut *mut c_void) -> ze_result_t {
    let mut p: *mut c_void = std::ptr::null_mut();
    // SAFETY: posix_memalign writes a pointer into `p`.
    let rc = unsafe { libc::posix_memalign(&mut p, align.max(64).next_power_of_two(), size.max(1)) };
    if rc != 0 {
        return _ze_result_t::ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
    }
    ALLOCS.lock().expect("alloc lock").insert(p as usize, (size, ty));
    // SAFETY: the caller's out-parameter.
    unsafe { *out = p };
    SUCCESS
}

pub unsafe extern "C" fn alloc_host(
    _c: ze_context_handle_t,
    _d: *const ze_host_mem_alloc_desc_t,
    size: usize,
    align: usize,
    out: *mut *mut c_void,
) -> ze_result_t {
    // SAFETY: out-parameter from the loader.
    unsafe { alloc(size, align, _ze_memory_type_t::ZE_MEMORY_TYPE_HOST, out) }
}

pub unsafe extern "C" fn alloc_device(
    _c: ze_context_handle_t,
    _d: *const ze_device_mem_alloc_desc_t,
    size: usize,
    align: usize,
    _dev: ze_device_handle_t,
    out: *mut *mut c_void,
) -> ze_result_t {
    // SAFETY: out-parameter from the loader.
    unsafe { alloc(size, align, _ze_memory_type_t::ZE_MEMORY_TYPE_DEVICE, out) }
}

pub unsafe extern "C" fn alloc_shared(
    _c: ze_context_handle_t,
    _d: *const ze_device_mem_alloc_desc_t,
    _h: *const ze_host_mem_alloc_desc_t,
    size: usize,
    align: usize,
    _dev: ze_device_handle_t,
    out: *mut *mut c_void,
) -> ze_result_t {
    // SAFETY: out-parameter from the loader.
    unsafe { alloc(size, align, _ze_memory_type_t::ZE_MEMORY_TYPE_SHARED, out) }
}

pub unsafe extern "C" fn free(_c: ze_context_handle_t, p: *mut c_void) -> ze_result_t {
    if ALLOCS.lock().expect("alloc lock").remove(&(p as usize)).is_some() {
        // SAFETY: `p` came from posix_memalign in `alloc`.
        unsafe { libc::free(p) };
        SUCCESS
    } else {
        _ze_result_t::ZE_RESULT_ERROR_INVALID_ARGUMENT
    }
}

pub unsafe extern "C" fn alloc_properties(
    _c: ze_context_handle_t,
    p: *const c_void,
    props: *mut ze_memory_allocation_properties_t,
    dev: *mut ze_device_handle_t,
) -> ze_result_t {
    let a = p as usize;
    let found = ALLOCS.lock().expect("alloc lock").range(..=a).next_back().map(|(s, v)| (*s, *v));
    let ty = match found {
        Some((start, (len, ty))) if a < start + len.max(1) => ty,
        _ => _ze_memory_type_t::ZE_MEMORY_TYPE_UNKNOWN,
    };
    // SAFETY: the caller's out-parameters.
    unsafe {
        (*props).type_ = ty;
        (*props).id = found.map_or(0, |f| f.0 as u64);
        (*props).pageSize = 4096;
        if !dev.is_null() {
            *dev = std::ptr::null_mut();
        }
    }
    SUCCESS
}
