//! Devices and clocks: every device and sub-device is described once (tick rate, wrap width),
//! and the host gets `zeDeviceGetGlobalTimestamps` pairs (device ticks ↔ CLOCK_MONOTONIC_RAW)
//! plus the agent's own CLOCK_MONOTONIC_RAW ↔ CLOCK_MONOTONIC pairs to convert device time.

use level_zero_sys::*;
use xpuprof_levelzero_wire::Msg;

use crate::clock;

/// Describes `dev` (and, for a root device, its sub-devices).
pub fn describe(
    ze: &ZeLoader,
    dev: usize,
    parent: usize,
    index: u32,
    api_1_2: bool,
    out: &mut Vec<Msg>,
) -> Vec<usize> {
    let mut p = ze_device_properties_t {
        stype: _ze_structure_type_t::ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES_1_2,
        ..Default::default()
    };
    // SAFETY: `dev` is a device handle the loader returned; `p` is a local.
    if unsafe { ze.zeDeviceGetProperties(dev as _, &mut p) } != 0 {
        return Vec::new();
    }
    // Spec 1.2 and later answer the _1_2 stype in cycles per second; older drivers in ns per
    // cycle.
    let tick_hz = if api_1_2 { p.timerResolution } else { 1_000_000_000 / p.timerResolution.max(1) };
    let name: Vec<u8> = p.name.iter().take_while(|&&c| c != 0).map(|&c| c as u8).collect();
    let sub = (p.flags & _ze_device_property_flag_t::ZE_DEVICE_PROPERTY_FLAG_SUBDEVICE != 0)
        .then_some(p.subdeviceId);
    out.push(Msg::Device {
        handle: dev as u64,
        parent: parent as u64,
        index,
        sub,
        tick_hz,
        valid_bits: p.kernelTimestampValidBits,
        compute_units: p.numSlices * p.numSubslicesPerSlice * p.numEUsPerSubslice,
        uuid: p.uuid.id,
        name: String::from_utf8_lossy(&name).into_owned(),
    });
    let mut n = 0u32;
    // SAFETY: count query on a valid device.
    if parent != 0 || unsafe { ze.zeDeviceGetSubDevices(dev as _, &mut n, std::ptr::null_mut()) } != 0 {
        return Vec::new();
    }
    let mut subs = vec![std::ptr::null_mut(); n as usize];
    // SAFETY: `subs` holds `n` slots.
    if unsafe { ze.zeDeviceGetSubDevices(dev as _, &mut n, subs.as_mut_ptr()) } != 0 {
        return Vec::new();
    }
    subs.iter().take(n as usize).map(|s| *s as usize).collect()
}

/// Every device of every driver, described; returns their handles.
pub fn discover(ze: &ZeLoader, out: &mut Vec<Msg>) -> Vec<usize> {
    let mut found = Vec::new();
    let mut n = 0u32;
    // SAFETY: count query.
    if unsafe { ze.zeDriverGet(&mut n, std::ptr::null_mut()) } != 0 {
        return found;
    }
    let mut drivers = vec![std::ptr::null_mut(); n as usize];
    // SAFETY: `drivers` holds `n` slots.
    if unsafe { ze.zeDriverGet(&mut n, drivers.as_mut_ptr()) } != 0 {
        return found;
    }
    let mut index = 0;
    for d in drivers.into_iter().take(n as usize) {
        let mut v: ze_api_version_t = 0;
        // SAFETY: `d` is a driver handle the loader returned.
        let _ = unsafe { ze.zeDriverGetApiVersion(d, &mut v) };
        let api_1_2 = v >= _ze_api_version_t::ZE_API_VERSION_1_2;
        let mut m = 0u32;
        // SAFETY: count query on a valid driver.
        if unsafe { ze.zeDeviceGet(d, &mut m, std::ptr::null_mut()) } != 0 {
            continue;
        }
        let mut devs = vec![std::ptr::null_mut(); m as usize];
        // SAFETY: `devs` holds `m` slots.
        if unsafe { ze.zeDeviceGet(d, &mut m, devs.as_mut_ptr()) } != 0 {
            continue;
        }
        for dev in devs.into_iter().take(m as usize) {
            found.push(dev as usize);
            for s in describe(ze, dev as usize, 0, index, api_1_2, out) {
                describe(ze, s, dev as usize, index, api_1_2, out);
                found.push(s);
            }
            index += 1;
        }
    }
    found
}

/// A device/host clock pair for each device, and a host pair.
pub fn clock_pairs(ze: &ZeLoader, devices: &[usize], out: &mut Vec<Msg>) {
    for &d in devices {
        let (mut host, mut ticks) = (0u64, 0u64);
        // SAFETY: `d` is a device handle the loader returned; out-parameters are locals.
        if unsafe { ze.zeDeviceGetGlobalTimestamps(d as _, &mut host, &mut ticks) } == 0 {
            out.push(Msg::Clock { device: d as u64, ticks, raw: host });
        }
    }
    out.push(clock::host_pair());
}
