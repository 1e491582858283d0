//! What a CUDA runtime or driver API call does, from its name: the CUDA knowledge stays in this
//! plugin, and sinks read [`ApiKind`] instead of matching names.

use xpuprof_sdk::model::ApiKind;

/// The kind of CUDA runtime (`cuda*`) or driver (`cu*`) API `name`.
pub fn classify(name: &str) -> ApiKind {
    let base = name.strip_suffix("_ptsz").or_else(|| name.strip_suffix("_ptds")).unwrap_or(name);
    let has = |s: &str| base.contains(s);
    if has("GraphAdd") {
        // Adding a graph node (even a memcpy node) runs nothing: the work runs at graph launch.
        ApiKind::Other
    } else if has("Synchronize") || has("StreamWaitEvent") || has("StreamQuery") || has("EventQuery") {
        ApiKind::Sync
    } else if has("Launch") {
        ApiKind::Launch
    } else if has("Memcpy") || has("MemPrefetch") {
        ApiKind::Copy
    } else if has("Memset") {
        ApiKind::Memset
    } else if has("Free") {
        ApiKind::Free
    } else if has("Malloc") || has("MemAlloc") || has("HostAlloc") || has("MemCreate") {
        ApiKind::Alloc
    } else {
        ApiKind::Other
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runtime_and_driver_names_are_classified() {
        for (name, kind) in [
            ("cudaLaunchKernel", ApiKind::Launch),
            ("cudaLaunchKernel_ptsz", ApiKind::Launch),
            ("cuLaunchKernelEx", ApiKind::Launch),
            ("cudaGraphLaunch", ApiKind::Launch),
            ("cudaDeviceSynchronize", ApiKind::Sync),
            ("cuStreamSynchronize", ApiKind::Sync),
            ("cudaStreamWaitEvent", ApiKind::Sync),
            ("cudaMemcpyAsync", ApiKind::Copy),
            ("cuMemcpyHtoD_v2", ApiKind::Copy),
            ("cudaMemsetAsync", ApiKind::Memset),
            ("cudaMalloc", ApiKind::Alloc),
            ("cuMemAlloc_v2", ApiKind::Alloc),
            ("cudaFreeAsync", ApiKind::Free),
            ("cudaGetDevice", ApiKind::Other),
            ("cudaGraphAddMemcpyNode", ApiKind::Other),
        ] {
            assert_eq!(classify(name), kind, "{name}");
        }
    }
}
