//! Which HIP API calls get a launch site: the calls that put work on a device (kernel and graph
//! launches, copies, sets, prefetches) and those whose device-side records (allocations, frees,
//! scratch) carry their correlation id, so every device record joins a call site. The names
//! come from the tracing library at run time (`rocprofiler_query_callback_tracing_kind_operation_name`,
//! `roctracer_op_string`): API ids differ between HIP releases, names do not.

/// True for a HIP API name that gets a launch site.
pub fn is_launch_api(name: &str) -> bool {
    const PREFIXES: [&str; 16] = [
        "hipLaunch",
        "hipExtLaunch",
        "hipModuleLaunch",
        "hipExtModuleLaunch",
        "hipHccModuleLaunch",
        "hipGraphLaunch",
        "hipMemcpy",
        "hipMemset",
        "hipMemPrefetch",
        "hipMalloc",
        "hipExtMalloc",
        "hipFree",
        "hipHostMalloc",
        "hipHostFree",
        "hipMallocAsync",
        "hipMemAllocPitch",
    ];
    PREFIXES.iter().any(|p| name.starts_with(p)) && !name.contains("HostFunc") && !name.contains("Attribute")
}

#[cfg(test)]
mod tests {
    use super::is_launch_api;

    #[test]
    fn launch_class_calls() {
        for n in [
            "hipLaunchKernel",
            "hipModuleLaunchKernel",
            "hipGraphLaunch",
            "hipMemcpyAsync",
            "hipMalloc",
            "hipFree",
        ] {
            assert!(is_launch_api(n), "{n}");
        }
        for n in [
            "hipGetDevice",
            "hipLaunchHostFunc",
            "hipFuncGetAttributes",
            "hipStreamCreate",
            "hipMallocManagedAttribute",
        ] {
            assert!(!is_launch_api(n), "{n}");
        }
    }
}
