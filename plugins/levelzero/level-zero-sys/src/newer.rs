//! Declarations newer than the installed headers (loader 1.8.12 ships spec 1.4), written by
//! hand from the Level Zero specification and pinned by the tests below. Their functions are
//! never linked nor assumed: a program reaches them through `zeDriverGetExtensionFunctionAddress`
//! (or a newer loader's export), and the agent looks each one up by name.

use std::os::raw::c_void;

use crate::{ze_command_list_handle_t, ze_event_handle_t, ze_group_count_t, ze_kernel_handle_t, ze_result_t};

/// Work-group size of a launch (spec 1.14 `ze_group_size_t`): work-items per dimension.
#[repr(C)]
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct ze_group_size_t {
    /// Work-items in x.
    pub groupSizeX: u32,
    /// Work-items in y.
    pub groupSizeY: u32,
    /// Work-items in z.
    pub groupSizeZ: u32,
}

/// `zeCommandListAppendLaunchKernelWithArguments` (spec 1.14): group counts and sizes by value,
/// the kernel's arguments as an array of pointers, a `pNext` chain of launch properties.
pub type PfnAppendLaunchKernelWithArguments = unsafe extern "C" fn(
    hCommandList: ze_command_list_handle_t,
    hKernel: ze_kernel_handle_t,
    groupCounts: ze_group_count_t,
    groupSizes: ze_group_size_t,
    pArguments: *mut *mut c_void,
    pNext: *const c_void,
    hSignalEvent: ze_event_handle_t,
    numWaitEvents: u32,
    phWaitEvents: *mut ze_event_handle_t,
) -> ze_result_t;

/// `zeCommandListAppendLaunchKernelWithParameters` (spec 1.13): group counts by pointer, a
/// `pNext` chain of launch parameters (cooperative launch among them).
pub type PfnAppendLaunchKernelWithParameters = unsafe extern "C" fn(
    hCommandList: ze_command_list_handle_t,
    hKernel: ze_kernel_handle_t,
    pGroupCounts: *const ze_group_count_t,
    pNext: *const c_void,
    hSignalEvent: ze_event_handle_t,
    numWaitEvents: u32,
    phWaitEvents: *mut ze_event_handle_t,
) -> ze_result_t;

/// The name of [`PfnAppendLaunchKernelWithArguments`].
pub const APPEND_LAUNCH_KERNEL_WITH_ARGUMENTS: &str = "zeCommandListAppendLaunchKernelWithArguments";
/// The name of [`PfnAppendLaunchKernelWithParameters`].
pub const APPEND_LAUNCH_KERNEL_WITH_PARAMETERS: &str = "zeCommandListAppendLaunchKernelWithParameters";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn group_size_is_three_packed_u32s() {
        assert_eq!(std::mem::size_of::<ze_group_size_t>(), 12);
        assert_eq!(std::mem::align_of::<ze_group_size_t>(), 4);
        assert_eq!(std::mem::offset_of!(ze_group_size_t, groupSizeY), 4);
        assert_eq!(std::mem::offset_of!(ze_group_size_t, groupSizeZ), 8);
        // Passed by value like ze_group_count_t, which has the same shape.
        assert_eq!(std::mem::size_of::<ze_group_count_t>(), 12);
    }
}
