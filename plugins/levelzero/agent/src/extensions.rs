//! Launch variants newer than loader 1.8.12's tracing layer (`zeCommandListAppendLaunchKernel
//! WithArguments`, `...WithParameters`): a program reaches them through
//! `zeDriverGetExtensionFunctionAddress`, whose answer the tracing layer cannot see into. The
//! epilogue of that call hands the program the agent's wrapper instead of the driver's
//! function; the wrapper records the launch exactly like a traced append (correlation id,
//! stack, timestamp event put in place of the program's) around the driver's function.
//!
//! A loader whose tracing layer knows these functions also exports
//! `zelTracer<Name>RegisterCallback`; nothing here assumes it: the wrappers serve every loader.

use std::ffi::CStr;
use std::os::raw::c_void;
use std::sync::atomic::{AtomicUsize, Ordering};

use level_zero_sys::newer::{
    ze_group_size_t, PfnAppendLaunchKernelWithArguments, PfnAppendLaunchKernelWithParameters,
    APPEND_LAUNCH_KERNEL_WITH_ARGUMENTS, APPEND_LAUNCH_KERNEL_WITH_PARAMETERS,
};
use level_zero_sys::*;

use crate::agent::{kernel_op, INSIDE};

/// The driver's functions behind the wrappers (0 until the program asked for them).
static WITH_ARGUMENTS: AtomicUsize = AtomicUsize::new(0);
static WITH_PARAMETERS: AtomicUsize = AtomicUsize::new(0);

/// Epilogue of `zeDriverGetExtensionFunctionAddress`: a launch variant's address becomes its
/// wrapper's. A second driver answering another address keeps its own (not traced) rather than
/// being sent to the first driver's function.
///
/// # Safety
/// Called by the tracing layer with the call's parameter block.
pub unsafe extern "C" fn extension_address_epi(
    p: *mut ze_driver_get_extension_function_address_params_t,
    result: ze_result_t,
    _u: *mut c_void,
    _i: *mut *mut c_void,
) {
    if result != _ze_result_t::ZE_RESULT_SUCCESS || INSIDE.with(|c| c.get()) {
        return;
    }
    // SAFETY: the tracing layer's parameter block: pointers to the call's arguments, the name a
    // NUL-terminated string and the out-parameter written by the driver.
    let (name, out) = unsafe { (*(*p).pname, *(*p).pppFunctionAddress) };
    if name.is_null() || out.is_null() {
        return;
    }
    // SAFETY: as above.
    let (name, real) = (unsafe { CStr::from_ptr(name) }.to_bytes(), unsafe { *out } as usize);
    let (slot, wrapper) = if name == APPEND_LAUNCH_KERNEL_WITH_ARGUMENTS.as_bytes() {
        (&WITH_ARGUMENTS, with_arguments as PfnAppendLaunchKernelWithArguments as usize)
    } else if name == APPEND_LAUNCH_KERNEL_WITH_PARAMETERS.as_bytes() {
        (&WITH_PARAMETERS, with_parameters as PfnAppendLaunchKernelWithParameters as usize)
    } else {
        return;
    };
    if real == 0 || real == wrapper {
        return;
    }
    let current = match slot.compare_exchange(0, real, Ordering::AcqRel, Ordering::Acquire) {
        Ok(_) => real,
        Err(current) => current,
    };
    if current == real {
        // SAFETY: the out-parameter the driver just wrote.
        unsafe { *out = wrapper as *mut c_void };
    }
}

/// Runs `call` (the driver's function) as a traced append of a kernel with `groups`.
///
/// # Safety
/// `list` and `kernel` are the program's handles for this call.
unsafe fn traced(
    name: &str,
    list: ze_command_list_handle_t,
    kernel: ze_kernel_handle_t,
    groups: Option<[u32; 3]>,
    size: Option<[u32; 3]>,
    signal: ze_event_handle_t,
    call: impl FnOnce(ze_event_handle_t) -> ze_result_t,
) -> ze_result_t {
    let Some(a) = crate::agent::active() else { return call(signal) };
    let mut signal = signal;
    let mut op = kernel_op(&a.lock(), kernel as usize, groups);
    if let Some(size) = size {
        op.group_size = size;
    }
    // The agent's own Level Zero calls below are not the program's.
    INSIDE.with(|c| c.set(true));
    // SAFETY: `signal` is a local the prologue may replace with the agent's timestamp event.
    unsafe { a.append_prologue(name, list as usize, &mut signal, op) };
    INSIDE.with(|c| c.set(false));
    let r = call(signal);
    INSIDE.with(|c| c.set(true));
    a.append_epilogue(r);
    INSIDE.with(|c| c.set(false));
    r
}

/// The wrapper of `zeCommandListAppendLaunchKernelWithArguments`.
///
/// # Safety
/// Called by the program with the arguments of the driver's function.
#[allow(clippy::too_many_arguments)]
unsafe extern "C" fn with_arguments(
    list: ze_command_list_handle_t,
    kernel: ze_kernel_handle_t,
    counts: ze_group_count_t,
    sizes: ze_group_size_t,
    args: *mut *mut c_void,
    next: *const c_void,
    signal: ze_event_handle_t,
    waits: u32,
    wait_list: *mut ze_event_handle_t,
) -> ze_result_t {
    // SAFETY: set before this wrapper was handed out, to the driver's function of this type.
    let real: PfnAppendLaunchKernelWithArguments = unsafe {
        std::mem::transmute::<usize, PfnAppendLaunchKernelWithArguments>(
            WITH_ARGUMENTS.load(Ordering::Acquire),
        )
    };
    let groups = [counts.groupCountX, counts.groupCountY, counts.groupCountZ];
    let size = [sizes.groupSizeX, sizes.groupSizeY, sizes.groupSizeZ];
    // SAFETY: the program's handles; the driver's function gets the program's arguments, with
    // the signal event the prologue chose.
    unsafe {
        traced(
            APPEND_LAUNCH_KERNEL_WITH_ARGUMENTS,
            list,
            kernel,
            Some(groups),
            Some(size),
            signal,
            |signal| real(list, kernel, counts, sizes, args, next, signal, waits, wait_list),
        )
    }
}

/// The wrapper of `zeCommandListAppendLaunchKernelWithParameters`.
///
/// # Safety
/// Called by the program with the arguments of the driver's function.
unsafe extern "C" fn with_parameters(
    list: ze_command_list_handle_t,
    kernel: ze_kernel_handle_t,
    counts: *const ze_group_count_t,
    next: *const c_void,
    signal: ze_event_handle_t,
    waits: u32,
    wait_list: *mut ze_event_handle_t,
) -> ze_result_t {
    // SAFETY: set before this wrapper was handed out, to the driver's function of this type.
    let real: PfnAppendLaunchKernelWithParameters = unsafe {
        std::mem::transmute::<usize, PfnAppendLaunchKernelWithParameters>(
            WITH_PARAMETERS.load(Ordering::Acquire),
        )
    };
    // SAFETY: the program's group counts (host memory), when given.
    let groups = (!counts.is_null())
        .then(|| unsafe { [(*counts).groupCountX, (*counts).groupCountY, (*counts).groupCountZ] });
    // SAFETY: as in `with_arguments`.
    unsafe {
        traced(APPEND_LAUNCH_KERNEL_WITH_PARAMETERS, list, kernel, groups, None, signal, |signal| {
            real(list, kernel, counts, next, signal, waits, wait_list)
        })
    }
}
