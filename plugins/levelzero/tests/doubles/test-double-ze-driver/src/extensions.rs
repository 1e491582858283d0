//! `zeDriverGetExtensionFunctionAddress`: the launch variants newer than loader 1.8.12's
//! tables (`zeCommandListAppendLaunchKernelWithArguments`, `...WithParameters`), which a program
//! on that loader can reach only through this call. They launch like
//! `zeCommandListAppendLaunchKernel` (the scripted kernel duration, the signal event).

use level_zero_sys::newer::{
    ze_group_size_t, PfnAppendLaunchKernelWithArguments, PfnAppendLaunchKernelWithParameters,
    APPEND_LAUNCH_KERNEL_WITH_ARGUMENTS, APPEND_LAUNCH_KERNEL_WITH_PARAMETERS,
};
use level_zero_sys::*;
use std::ffi::{c_char, c_void, CStr};

use crate::lists;

pub unsafe extern "C" fn extension_address(
    _d: ze_driver_handle_t,
    name: *const c_char,
    out: *mut *mut c_void,
) -> ze_result_t {
    if name.is_null() || out.is_null() {
        return _ze_result_t::ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    }
    // SAFETY: a NUL-terminated name from the application through the loader.
    let name = unsafe { CStr::from_ptr(name) }.to_bytes();
    let f = if name == APPEND_LAUNCH_KERNEL_WITH_ARGUMENTS.as_bytes() {
        with_arguments as PfnAppendLaunchKernelWithArguments as *mut c_void
    } else if name == APPEND_LAUNCH_KERNEL_WITH_PARAMETERS.as_bytes() {
        with_parameters as PfnAppendLaunchKernelWithParameters as *mut c_void
    } else {
        return _ze_result_t::ZE_RESULT_ERROR_UNSUPPORTED_FEATURE;
    };
    // SAFETY: the caller's out-parameter.
    unsafe { *out = f };
    _ze_result_t::ZE_RESULT_SUCCESS
}

#[allow(clippy::too_many_arguments)]
unsafe extern "C" fn with_arguments(
    h: ze_command_list_handle_t,
    k: ze_kernel_handle_t,
    _counts: ze_group_count_t,
    _sizes: ze_group_size_t,
    _args: *mut *mut c_void,
    _next: *const c_void,
    signal: ze_event_handle_t,
    _nw: u32,
    _w: *mut ze_event_handle_t,
) -> ze_result_t {
    // SAFETY: handles from the application.
    unsafe { lists::launch(h, k, signal) }
}

unsafe extern "C" fn with_parameters(
    h: ze_command_list_handle_t,
    k: ze_kernel_handle_t,
    _counts: *const ze_group_count_t,
    _next: *const c_void,
    signal: ze_event_handle_t,
    _nw: u32,
    _w: *mut ze_event_handle_t,
) -> ze_result_t {
    // SAFETY: handles from the application.
    unsafe { lists::launch(h, k, signal) }
}
