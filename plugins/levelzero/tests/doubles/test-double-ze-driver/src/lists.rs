//! Command queues and command lists: immediate lists run each command at append, regular lists
//! record them and run them at every `zeCommandQueueExecuteCommandLists`.

use level_zero_sys::*;

use crate::exec;
use crate::state::{destroy, driver, handle, obj, Action, Command, Device, Kernel, List, Queue};

const SUCCESS: ze_result_t = _ze_result_t::ZE_RESULT_SUCCESS;

pub unsafe extern "C" fn queue_create(
    _c: ze_context_handle_t,
    dev: ze_device_handle_t,
    _desc: *const ze_command_queue_desc_t,
    out: *mut ze_command_queue_handle_t,
) -> ze_result_t {
    // SAFETY: out-parameter from the loader.
    unsafe { *out = handle(Queue { device: dev as *mut Device }) };
    SUCCESS
}

pub unsafe extern "C" fn queue_destroy(h: ze_command_queue_handle_t) -> ze_result_t {
    // SAFETY: `h` came from queue_create.
    unsafe { destroy::<Queue>(h) };
    SUCCESS
}

pub unsafe extern "C" fn queue_execute(
    q: ze_command_queue_handle_t,
    n: u32,
    lists: *mut ze_command_list_handle_t,
    _fence: ze_fence_handle_t,
) -> ze_result_t {
    // SAFETY: `q` came from queue_create; `lists` holds `n` list handles of this driver.
    unsafe {
        let q: &Queue = obj(q);
        for i in 0..n as usize {
            let l: &List = obj(*lists.add(i));
            let cmds = l.commands.lock().expect("list lock").clone();
            for c in &cmds {
                exec::run(&*q.device, c);
            }
        }
    }
    SUCCESS
}

pub unsafe extern "C" fn queue_synchronize(_q: ze_command_queue_handle_t, _timeout: u64) -> ze_result_t {
    exec::host_sync();
    SUCCESS
}

fn new_list(dev: ze_device_handle_t, immediate: bool) -> *mut _ze_command_list_handle_t {
    handle(List { immediate, device: dev as *mut Device, commands: Default::default() })
}

pub unsafe extern "C" fn list_create(
    _c: ze_context_handle_t,
    dev: ze_device_handle_t,
    _desc: *const ze_command_list_desc_t,
    out: *mut ze_command_list_handle_t,
) -> ze_result_t {
    // SAFETY: out-parameter from the loader.
    unsafe { *out = new_list(dev, false) };
    SUCCESS
}

pub unsafe extern "C" fn list_create_immediate(
    _c: ze_context_handle_t,
    dev: ze_device_handle_t,
    _desc: *const ze_command_queue_desc_t,
    out: *mut ze_command_list_handle_t,
) -> ze_result_t {
    // SAFETY: out-parameter from the loader.
    unsafe { *out = new_list(dev, true) };
    SUCCESS
}

pub unsafe extern "C" fn list_destroy(h: ze_command_list_handle_t) -> ze_result_t {
    // SAFETY: `h` came from list_create(_immediate).
    unsafe { destroy::<List>(h) };
    SUCCESS
}

pub unsafe extern "C" fn list_close(_h: ze_command_list_handle_t) -> ze_result_t {
    SUCCESS
}

pub unsafe extern "C" fn list_reset(h: ze_command_list_handle_t) -> ze_result_t {
    // SAFETY: `h` came from list_create(_immediate).
    unsafe { obj::<List>(h) }.commands.lock().expect("list lock").clear();
    SUCCESS
}

/// Appends (or, on an immediate list, runs) a command.
unsafe fn append(
    h: ze_command_list_handle_t,
    ns: u64,
    action: Action,
    signal: ze_event_handle_t,
) -> ze_result_t {
    // SAFETY: `h` came from list_create(_immediate).
    let l: &List = unsafe { obj(h) };
    let cmd = Command { ns, action, signal: signal as usize };
    if l.immediate {
        // SAFETY: the list's device outlives the driver.
        exec::run(unsafe { &*l.device }, &cmd);
    } else {
        l.commands.lock().expect("list lock").push(cmd);
    }
    SUCCESS
}

pub(crate) unsafe fn launch(
    h: ze_command_list_handle_t,
    k: ze_kernel_handle_t,
    signal: ze_event_handle_t,
) -> ze_result_t {
    // SAFETY: `k` came from zeKernelCreate of this driver.
    let kernel: &Kernel = unsafe { obj(k) };
    // SAFETY: as append's.
    unsafe { append(h, kernel.ns, Action::None, signal) }
}

pub unsafe extern "C" fn append_launch(
    h: ze_command_list_handle_t,
    k: ze_kernel_handle_t,
    _g: *const ze_group_count_t,
    signal: ze_event_handle_t,
    _nw: u32,
    _w: *mut ze_event_handle_t,
) -> ze_result_t {
    // SAFETY: handles from the application through the loader.
    unsafe { launch(h, k, signal) }
}

pub unsafe extern "C" fn append_copy(
    h: ze_command_list_handle_t,
    dst: *mut std::ffi::c_void,
    src: *const std::ffi::c_void,
    size: usize,
    signal: ze_event_handle_t,
    _nw: u32,
    _w: *mut ze_event_handle_t,
) -> ze_result_t {
    let action = Action::Copy { dst: dst as usize, src: src as usize, len: size };
    // SAFETY: handles from the application through the loader.
    unsafe { append(h, driver().script.copy_ns, action, signal) }
}

pub unsafe extern "C" fn append_fill(
    h: ze_command_list_handle_t,
    dst: *mut std::ffi::c_void,
    pattern: *const std::ffi::c_void,
    pattern_size: usize,
    size: usize,
    signal: ze_event_handle_t,
    _nw: u32,
    _w: *mut ze_event_handle_t,
) -> ze_result_t {
    // SAFETY: the application's pattern holds `pattern_size` bytes.
    let pattern = unsafe { std::slice::from_raw_parts(pattern as *const u8, pattern_size) }.to_vec();
    let action = Action::Fill { dst: dst as usize, pattern, len: size };
    // SAFETY: handles from the application through the loader.
    unsafe { append(h, driver().script.fill_ns, action, signal) }
}

pub unsafe extern "C" fn append_barrier(
    h: ze_command_list_handle_t,
    signal: ze_event_handle_t,
    _nw: u32,
    _w: *mut ze_event_handle_t,
) -> ze_result_t {
    // SAFETY: handles from the application through the loader.
    unsafe { append(h, 0, Action::None, signal) }
}

pub unsafe extern "C" fn append_signal(h: ze_command_list_handle_t, e: ze_event_handle_t) -> ze_result_t {
    // SAFETY: handles from the application through the loader.
    unsafe { append(h, 0, Action::None, e) }
}

pub unsafe extern "C" fn append_wait(
    _h: ze_command_list_handle_t,
    _n: u32,
    _e: *mut ze_event_handle_t,
) -> ze_result_t {
    SUCCESS
}

pub unsafe extern "C" fn append_reset(h: ze_command_list_handle_t, e: ze_event_handle_t) -> ze_result_t {
    // SAFETY: handles from the application through the loader.
    unsafe { append(h, 0, Action::Reset(e as usize), std::ptr::null_mut()) }
}
