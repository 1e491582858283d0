//! The driver's objects. Every handle the driver gives out is a leaked `Box` of one of these
//! types; the loader hands them back unchanged.

use std::sync::{Mutex, OnceLock};

use crate::script::Script;

/// Driver-wide state.
#[derive(Debug)]
pub struct Driver {
    /// The script.
    pub script: Script,
    /// Root devices.
    pub devices: Vec<*mut Device>,
    /// CLOCK_MONOTONIC_RAW at start, ns.
    pub start_raw: u64,
    /// Events waiting for a host synchronisation (`complete=sync`).
    pub pending: Mutex<Vec<usize>>,
}

// SAFETY: the raw device pointers are created once, never freed and only read afterwards.
unsafe impl Send for Driver {}
// SAFETY: as above; mutable parts are behind mutexes.
unsafe impl Sync for Driver {}

/// A root device or a sub-device.
#[derive(Debug)]
pub struct Device {
    /// Root device index.
    pub index: u32,
    /// Sub-device id for a sub-device.
    pub sub: Option<u32>,
    /// Sub-devices of a root device.
    pub subs: Vec<*mut Device>,
    /// The device's engine is busy until this tick (full width).
    pub busy_until: Mutex<u64>,
}

/// An event pool.
#[derive(Debug)]
pub struct Pool {
    /// Created with `ZE_EVENT_POOL_FLAG_KERNEL_TIMESTAMP`.
    pub timestamps: bool,
}

/// What an event knows.
#[derive(Debug, Default, Clone, Copy)]
pub struct EventState {
    /// Signalled by the device.
    pub signaled: bool,
    /// The host may see the signal (always, or after a host sync with `complete=sync`).
    pub visible: bool,
    /// Start and end ticks, masked to the kernel timestamp bits.
    pub ts: Option<(u64, u64)>,
}

/// An event.
#[derive(Debug)]
pub struct Event {
    /// Its pool.
    pub timestamps: bool,
    /// Its state.
    pub state: Mutex<EventState>,
}

/// A module (its binary is ignored).
#[derive(Debug)]
pub struct Module;

/// A kernel.
#[derive(Debug)]
pub struct Kernel {
    /// Its name, as given to `zeKernelCreate`.
    pub name: std::ffi::CString,
    /// Its scripted duration, ns.
    pub ns: u64,
    /// Group size set with `zeKernelSetGroupSize`.
    pub group: Mutex<[u32; 3]>,
}

/// A command queue.
#[derive(Debug)]
pub struct Queue {
    /// Its device.
    pub device: *mut Device,
}

/// What a command does besides taking time.
#[derive(Debug, Clone)]
pub enum Action {
    /// Nothing (kernel, barrier, signal).
    None,
    /// Copy `len` bytes.
    Copy { dst: usize, src: usize, len: usize },
    /// Fill `len` bytes with `pattern`.
    Fill { dst: usize, pattern: Vec<u8>, len: usize },
    /// Host-visible reset of an event.
    Reset(usize),
}

/// One recorded command.
#[derive(Debug, Clone)]
pub struct Command {
    /// Duration on the device, ns.
    pub ns: u64,
    /// What it does.
    pub action: Action,
    /// Event to signal at its end (0: none).
    pub signal: usize,
}

/// A command list.
#[derive(Debug)]
pub struct List {
    /// Immediate: runs at append.
    pub immediate: bool,
    /// Its device.
    pub device: *mut Device,
    /// Recorded commands (regular lists).
    pub commands: Mutex<Vec<Command>>,
}

static DRIVER: OnceLock<Driver> = OnceLock::new();

/// CLOCK_MONOTONIC_RAW in ns.
pub fn monotonic_raw() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes into a valid timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC_RAW, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// A device whose engine is busy until tick `busy` (work queued before the driver started).
fn new_device(index: u32, sub: Option<u32>, subs: u32, busy: u64) -> *mut Device {
    let subs = (0..subs).map(|s| new_device(index, Some(s), 0, busy)).collect();
    Box::into_raw(Box::new(Device { index, sub, subs, busy_until: Mutex::new(busy) }))
}

/// The driver, created at the first call.
pub fn driver() -> &'static Driver {
    DRIVER.get_or_init(|| {
        let script = Script::from_env();
        let busy = script.offset.wrapping_add(script.ticks_of(script.queued_ns));
        let devices = (0..script.devices).map(|i| new_device(i, None, script.subdevices, busy)).collect();
        Driver { script, devices, start_raw: monotonic_raw(), pending: Mutex::new(Vec::new()) }
    })
}

impl Driver {
    /// Device ticks (full width) at CLOCK_MONOTONIC_RAW `raw`.
    pub fn ticks_at(&self, raw: u64) -> u64 {
        self.script.offset.wrapping_add(self.ticks_of(raw.saturating_sub(self.start_raw)))
    }

    /// Ticks of `ns` nanoseconds.
    pub fn ticks_of(&self, ns: u64) -> u64 {
        self.script.ticks_of(ns)
    }
}

/// Borrows the object behind a handle.
///
/// # Safety
/// `h` must be a handle this driver created for a `T` and not yet destroyed.
pub unsafe fn obj<'a, T>(h: *mut impl Sized) -> &'a T {
    // SAFETY: the caller guarantees `h` points to a live `T`.
    unsafe { &*(h as *const T) }
}

/// Turns a new object into a handle.
pub fn handle<T, H>(v: T) -> *mut H {
    Box::into_raw(Box::new(v)) as *mut H
}

/// Frees the object behind a handle.
///
/// # Safety
/// `h` must be a handle this driver created for a `T`, destroyed only once.
pub unsafe fn destroy<T>(h: *mut impl Sized) {
    if !h.is_null() {
        // SAFETY: the caller guarantees `h` came from `handle::<T>` and is freed once.
        drop(unsafe { Box::from_raw(h as *mut T) });
    }
}
