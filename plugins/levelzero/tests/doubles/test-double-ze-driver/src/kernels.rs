//! Modules and kernels: a module accepts any binary; a kernel is its name (which picks its
//! scripted duration) and its group size.

use level_zero_sys::*;
use std::ffi::{c_char, CStr};

use crate::state::{destroy, handle, obj, Kernel, Module};

const SUCCESS: ze_result_t = _ze_result_t::ZE_RESULT_SUCCESS;

pub unsafe extern "C" fn module_create(
    _c: ze_context_handle_t,
    _d: ze_device_handle_t,
    _desc: *const ze_module_desc_t,
    out: *mut ze_module_handle_t,
    log: *mut ze_module_build_log_handle_t,
) -> ze_result_t {
    // SAFETY: out-parameters from the loader (`log` is optional).
    unsafe {
        *out = handle(Module);
        if !log.is_null() {
            *log = std::ptr::null_mut();
        }
    }
    SUCCESS
}

pub unsafe extern "C" fn module_destroy(h: ze_module_handle_t) -> ze_result_t {
    // SAFETY: `h` came from module_create.
    unsafe { destroy::<Module>(h) };
    SUCCESS
}

pub unsafe extern "C" fn kernel_create(
    _m: ze_module_handle_t,
    desc: *const ze_kernel_desc_t,
    out: *mut ze_kernel_handle_t,
) -> ze_result_t {
    // SAFETY: the loader validated `desc`; the name is the application's C string.
    unsafe {
        let name = CStr::from_ptr((*desc).pKernelName).to_owned();
        let ns = crate::state::driver().script.kernel_duration(&name.to_string_lossy());
        *out = handle(Kernel { name, ns, group: std::sync::Mutex::new([1, 1, 1]) });
    }
    SUCCESS
}

pub unsafe extern "C" fn kernel_destroy(h: ze_kernel_handle_t) -> ze_result_t {
    // SAFETY: `h` came from kernel_create.
    unsafe { destroy::<Kernel>(h) };
    SUCCESS
}

pub unsafe extern "C" fn kernel_name(
    h: ze_kernel_handle_t,
    size: *mut usize,
    name: *mut c_char,
) -> ze_result_t {
    // SAFETY: `h` came from kernel_create; `size`/`name` are the caller's buffer.
    unsafe {
        let k: &Kernel = obj(h);
        let bytes = k.name.as_bytes_with_nul();
        if name.is_null() || *size == 0 {
            *size = bytes.len();
            return SUCCESS;
        }
        let n = (*size).min(bytes.len());
        std::ptr::copy_nonoverlapping(bytes.as_ptr() as *const c_char, name, n);
        *name.add(n - 1) = 0;
        *size = n;
    }
    SUCCESS
}

pub unsafe extern "C" fn set_group_size(h: ze_kernel_handle_t, x: u32, y: u32, z: u32) -> ze_result_t {
    // SAFETY: `h` came from kernel_create.
    *unsafe { obj::<Kernel>(h) }.group.lock().expect("kernel lock") = [x, y, z];
    SUCCESS
}

pub unsafe extern "C" fn suggest_group_size(
    _h: ze_kernel_handle_t,
    _x: u32,
    _y: u32,
    _z: u32,
    gx: *mut u32,
    gy: *mut u32,
    gz: *mut u32,
) -> ze_result_t {
    // SAFETY: the caller's out-parameters.
    unsafe {
        (*gx, *gy, *gz) = (64, 1, 1);
    }
    SUCCESS
}

pub unsafe extern "C" fn set_argument(
    _h: ze_kernel_handle_t,
    _i: u32,
    _s: usize,
    _v: *const std::ffi::c_void,
) -> ze_result_t {
    SUCCESS
}
