//! # TEST DOUBLE: a scripted Level Zero driver
//!
//! There is no Intel GPU on the machines that build xpuprof, so the `levelzero` source is
//! tested through the **real** Level Zero loader and its **real** tracing layer (Debian's
//! `libze1` 1.8.12) with this driver underneath, loaded with
//! `ZE_ENABLE_ALT_DRIVERS=/abs/path/libxpuprof_test_double_ze_driver.so`. It never claims to
//! behave like Intel's driver beyond what the Level Zero specification says.
//!
//! What it does (shaped by the script in `XPUPROF_TEST_ZE_DRIVER`, see [`script`]):
//! - devices and sub-devices with a scripted tick rate, tick offset and kernel timestamp wrap
//!   width (`kernelTimestampValidBits`); `zeDeviceGetGlobalTimestamps` pairs device ticks with
//!   CLOCK_MONOTONIC_RAW, as Intel's driver does;
//! - kernels with scripted durations by name; copies and fills that really copy; optionally
//!   work already queued on each engine at start, so commands run back to back at known ticks;
//! - immediate lists run a command at append, regular lists at every execute (`exec`);
//! - timestamps only on events of pools created with `ZE_EVENT_POOL_FLAG_KERNEL_TIMESTAMP`;
//! - host, device and shared allocations answered by `zeMemGetAllocProperties`;
//! - the launch variants newer than the loader (`...WithArguments`, `...WithParameters`) through
//!   `zeDriverGetExtensionFunctionAddress`.
//!
//! Every `extern "C"` function here is called by the loader with arguments the application
//! passed through it; handles are the driver's own leaked boxes ([`state`]).

#![allow(clippy::missing_safety_doc)]

pub mod devices;
pub mod events;
pub mod exec;
pub mod extensions;
pub mod kernels;
pub mod lists;
pub mod memory;
pub mod script;
pub mod state;
pub mod tables;
