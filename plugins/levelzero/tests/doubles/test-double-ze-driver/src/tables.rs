//! The 53 `*GetProcAddrTable` functions loader 1.8 looks up in a driver (it crashes when one is
//! missing). Tables of what this test double implements are filled; the rest stay empty, which
//! the loader accepts (it answers the application `ZE_RESULT_ERROR_UNSUPPORTED_FEATURE`).

#![allow(non_snake_case)]

use level_zero_sys::*;
use std::ffi::c_void;

use crate::{devices, events, extensions, kernels, lists, memory};

const SUCCESS: ze_result_t = _ze_result_t::ZE_RESULT_SUCCESS;

/// Exports getters that leave their table empty.
macro_rules! empty_tables {
    ($($name:ident)*) => {$(
        /// Leaves the table empty: this test double implements none of its functions.
        ///
        /// # Safety
        /// Called by the loader with a valid table pointer.
        #[no_mangle]
        pub unsafe extern "C" fn $name(_version: ze_api_version_t, _table: *mut c_void) -> ze_result_t {
            SUCCESS
        }
    )*};
}

empty_tables! {
    zeGetDeviceExpProcAddrTable zeGetEventExpProcAddrTable zeGetFabricEdgeExpProcAddrTable
    zeGetFabricVertexExpProcAddrTable zeGetFenceProcAddrTable zeGetImageExpProcAddrTable
    zeGetImageProcAddrTable zeGetKernelExpProcAddrTable zeGetModuleBuildLogProcAddrTable
    zeGetPhysicalMemProcAddrTable zeGetSamplerProcAddrTable zeGetVirtualMemProcAddrTable
    zesGetDeviceProcAddrTable zesGetDiagnosticsProcAddrTable zesGetDriverProcAddrTable
    zesGetEngineProcAddrTable zesGetFabricPortProcAddrTable zesGetFanProcAddrTable
    zesGetFirmwareProcAddrTable zesGetFrequencyProcAddrTable zesGetLedProcAddrTable
    zesGetMemoryProcAddrTable zesGetPerformanceFactorProcAddrTable zesGetPowerProcAddrTable
    zesGetPsuProcAddrTable zesGetRasProcAddrTable zesGetSchedulerProcAddrTable
    zesGetStandbyProcAddrTable zesGetTemperatureProcAddrTable zetGetCommandListProcAddrTable
    zetGetContextProcAddrTable zetGetDebugProcAddrTable zetGetDeviceProcAddrTable
    zetGetKernelProcAddrTable zetGetMetricGroupExpProcAddrTable zetGetMetricGroupProcAddrTable
    zetGetMetricProcAddrTable zetGetMetricQueryPoolProcAddrTable zetGetMetricQueryProcAddrTable
    zetGetMetricStreamerProcAddrTable zetGetModuleProcAddrTable zetGetTracerExpProcAddrTable
}

/// Exports a getter that fills `$table` with `field = function` pairs.
macro_rules! table {
    ($name:ident, $ty:ty, { $($field:ident = $f:path),* $(,)? }) => {
        /// Fills the table with this test double's functions.
        ///
        /// # Safety
        /// Called by the loader with a valid table pointer.
        #[no_mangle]
        pub unsafe extern "C" fn $name(_version: ze_api_version_t, table: *mut $ty) -> ze_result_t {
            if table.is_null() {
                return _ze_result_t::ZE_RESULT_ERROR_INVALID_NULL_POINTER;
            }
            // SAFETY: the loader passes its own table to fill.
            let t = unsafe { &mut *table };
            $( t.$field = Some($f); )*
            SUCCESS
        }
    };
}

table!(zeGetGlobalProcAddrTable, ze_global_dditable_t, { pfnInit = devices::init });
table!(zeGetDriverProcAddrTable, ze_driver_dditable_t, {
    pfnGet = devices::driver_get,
    pfnGetApiVersion = devices::driver_api_version,
    pfnGetProperties = devices::driver_properties,
    pfnGetExtensionFunctionAddress = extensions::extension_address,
});
table!(zeGetDeviceProcAddrTable, ze_device_dditable_t, {
    pfnGet = devices::device_get,
    pfnGetSubDevices = devices::sub_devices,
    pfnGetProperties = devices::device_properties,
    pfnGetMemoryProperties = devices::device_memory_properties,
    pfnGetGlobalTimestamps = devices::global_timestamps,
});
table!(zeGetContextProcAddrTable, ze_context_dditable_t, {
    pfnCreate = devices::context_create,
    pfnDestroy = devices::context_destroy,
});
table!(zeGetCommandQueueProcAddrTable, ze_command_queue_dditable_t, {
    pfnCreate = lists::queue_create,
    pfnDestroy = lists::queue_destroy,
    pfnExecuteCommandLists = lists::queue_execute,
    pfnSynchronize = lists::queue_synchronize,
});
table!(zeGetCommandListProcAddrTable, ze_command_list_dditable_t, {
    pfnCreate = lists::list_create,
    pfnCreateImmediate = lists::list_create_immediate,
    pfnDestroy = lists::list_destroy,
    pfnClose = lists::list_close,
    pfnReset = lists::list_reset,
    pfnAppendLaunchKernel = lists::append_launch,
    pfnAppendLaunchCooperativeKernel = lists::append_launch,
    pfnAppendLaunchKernelIndirect = lists::append_launch,
    pfnAppendMemoryCopy = lists::append_copy,
    pfnAppendMemoryFill = lists::append_fill,
    pfnAppendBarrier = lists::append_barrier,
    pfnAppendSignalEvent = lists::append_signal,
    pfnAppendWaitOnEvents = lists::append_wait,
    pfnAppendEventReset = lists::append_reset,
});
table!(zeGetEventPoolProcAddrTable, ze_event_pool_dditable_t, {
    pfnCreate = events::pool_create,
    pfnDestroy = events::pool_destroy,
});
table!(zeGetEventProcAddrTable, ze_event_dditable_t, {
    pfnCreate = events::event_create,
    pfnDestroy = events::event_destroy,
    pfnHostSignal = events::host_signal,
    pfnHostSynchronize = events::host_synchronize,
    pfnQueryStatus = events::query_status,
    pfnHostReset = events::host_reset,
    pfnQueryKernelTimestamp = events::query_kernel_timestamp,
});
table!(zeGetModuleProcAddrTable, ze_module_dditable_t, {
    pfnCreate = kernels::module_create,
    pfnDestroy = kernels::module_destroy,
});
table!(zeGetKernelProcAddrTable, ze_kernel_dditable_t, {
    pfnCreate = kernels::kernel_create,
    pfnDestroy = kernels::kernel_destroy,
    pfnGetName = kernels::kernel_name,
    pfnSetGroupSize = kernels::set_group_size,
    pfnSuggestGroupSize = kernels::suggest_group_size,
    pfnSetArgumentValue = kernels::set_argument,
});
table!(zeGetMemProcAddrTable, ze_mem_dditable_t, {
    pfnAllocHost = memory::alloc_host,
    pfnAllocDevice = memory::alloc_device,
    pfnAllocShared = memory::alloc_shared,
    pfnFree = memory::free,
    pfnGetAllocProperties = memory::alloc_properties,
});
