//! Driver, devices and contexts.

use level_zero_sys::*;
use std::ffi::c_void;

use crate::state::{driver, monotonic_raw, obj, Device};

const SUCCESS: ze_result_t = _ze_result_t::ZE_RESULT_SUCCESS;
/// The driver handle (there is one driver).
const DRIVER_HANDLE: usize = 0x7e57_d12f;

pub unsafe extern "C" fn init(_flags: ze_init_flags_t) -> ze_result_t {
    driver();
    SUCCESS
}

/// Fills an array out-parameter the Level Zero way: count query when `out` is null.
pub unsafe fn fill<T: Copy>(count: *mut u32, out: *mut T, items: &[T]) -> ze_result_t {
    if count.is_null() {
        return _ze_result_t::ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    }
    // SAFETY: the loader validated `count`; `out` holds at least `*count` entries when non-null.
    unsafe {
        if out.is_null() || *count == 0 {
            *count = items.len() as u32;
            return SUCCESS;
        }
        let n = (*count as usize).min(items.len());
        for (i, it) in items.iter().take(n).enumerate() {
            *out.add(i) = *it;
        }
        *count = n as u32;
    }
    SUCCESS
}

pub unsafe extern "C" fn driver_get(count: *mut u32, out: *mut ze_driver_handle_t) -> ze_result_t {
    // SAFETY: out-parameters from the loader.
    unsafe { fill(count, out, &[DRIVER_HANDLE as ze_driver_handle_t]) }
}

pub unsafe extern "C" fn driver_api_version(_d: ze_driver_handle_t, v: *mut ze_api_version_t) -> ze_result_t {
    // SAFETY: out-parameter from the loader.
    unsafe { *v = _ze_api_version_t::ZE_API_VERSION_CURRENT };
    SUCCESS
}

pub unsafe extern "C" fn driver_properties(
    _d: ze_driver_handle_t,
    p: *mut ze_driver_properties_t,
) -> ze_result_t {
    // SAFETY: out-parameter from the loader.
    unsafe {
        (*p).uuid.id = *b"xpuprof-testdrv\0";
        (*p).driverVersion = 1;
    }
    SUCCESS
}

pub unsafe extern "C" fn device_get(
    _d: ze_driver_handle_t,
    count: *mut u32,
    out: *mut ze_device_handle_t,
) -> ze_result_t {
    let devs: Vec<ze_device_handle_t> = driver().devices.iter().map(|d| *d as ze_device_handle_t).collect();
    // SAFETY: out-parameters from the loader.
    unsafe { fill(count, out, &devs) }
}

pub unsafe extern "C" fn sub_devices(
    h: ze_device_handle_t,
    count: *mut u32,
    out: *mut ze_device_handle_t,
) -> ze_result_t {
    // SAFETY: `h` is one of this driver's devices.
    let d: &Device = unsafe { obj(h) };
    let subs: Vec<ze_device_handle_t> = d.subs.iter().map(|s| *s as ze_device_handle_t).collect();
    // SAFETY: out-parameters from the loader.
    unsafe { fill(count, out, &subs) }
}

pub unsafe extern "C" fn device_properties(
    h: ze_device_handle_t,
    p: *mut ze_device_properties_t,
) -> ze_result_t {
    let s = &driver().script;
    // SAFETY: `h` is one of this driver's devices; `p` is the caller's properties struct.
    let (d, p): (&Device, &mut ze_device_properties_t) = unsafe { (obj(h), &mut *p) };
    p.type_ = _ze_device_type_t::ZE_DEVICE_TYPE_GPU;
    p.vendorId = 0x8086;
    p.deviceId = 0xffff;
    p.flags = if d.sub.is_some() { _ze_device_property_flag_t::ZE_DEVICE_PROPERTY_FLAG_SUBDEVICE } else { 0 };
    p.subdeviceId = d.sub.unwrap_or(0);
    p.coreClockRate = 1600;
    p.maxMemAllocSize = 1 << 32;
    p.numThreadsPerEU = 8;
    p.physicalEUSimdWidth = 8;
    p.numEUsPerSubslice = 8;
    p.numSubslicesPerSlice = 4;
    p.numSlices = if d.sub.is_some() { 1 } else { 1 + d.subs.len() as u32 };
    // Spec 1.2 and later (stype _1_2): cycles per second; before: nanoseconds per cycle.
    let new = p.stype == _ze_structure_type_t::ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES_1_2 && !s.old_props;
    p.timerResolution = if new { s.tick_hz } else { 1_000_000_000 / s.tick_hz };
    p.timestampValidBits = 64;
    p.kernelTimestampValidBits = s.valid_bits;
    p.uuid.id = [0; 16];
    p.uuid.id[..8].copy_from_slice(b"xpuprofT");
    p.uuid.id[8] = d.index as u8;
    p.uuid.id[9] = d.sub.map_or(0xff, |v| v as u8);
    let name = match d.sub {
        Some(t) => format!("{} {} tile {t}", s.name, d.index),
        None => format!("{} {}", s.name, d.index),
    };
    p.name = [0; 256];
    for (i, b) in name.bytes().take(255).enumerate() {
        p.name[i] = b as std::ffi::c_char;
    }
    SUCCESS
}

pub unsafe extern "C" fn device_memory_properties(
    _h: ze_device_handle_t,
    count: *mut u32,
    out: *mut ze_device_memory_properties_t,
) -> ze_result_t {
    // SAFETY: out-parameters from the loader.
    unsafe {
        if out.is_null() || *count == 0 {
            *count = 1;
            return SUCCESS;
        }
        (*out).totalSize = 16 << 30;
        *count = 1;
    }
    SUCCESS
}

pub unsafe extern "C" fn global_timestamps(
    h: ze_device_handle_t,
    host: *mut u64,
    dev: *mut u64,
) -> ze_result_t {
    let _ = h;
    let raw = monotonic_raw();
    // SAFETY: out-parameters from the loader. The host value is CLOCK_MONOTONIC_RAW, like
    // Intel's driver.
    unsafe {
        *host = raw;
        *dev = driver().ticks_at(raw);
    }
    SUCCESS
}

pub unsafe extern "C" fn context_create(
    _d: ze_driver_handle_t,
    _desc: *const ze_context_desc_t,
    out: *mut ze_context_handle_t,
) -> ze_result_t {
    // SAFETY: out-parameter from the loader; contexts carry no state here.
    unsafe { *out = crate::state::handle::<u64, _>(0) };
    SUCCESS
}

pub unsafe extern "C" fn context_destroy(h: ze_context_handle_t) -> ze_result_t {
    // SAFETY: `h` came from context_create.
    unsafe { crate::state::destroy::<u64>(h) };
    SUCCESS
}

/// Unused pointer type for handles without state.
pub type Opaque = c_void;
