//! What a CUDA runtime or driver API call does, from its name: the CUDA knowledge stays in this
//! plugin, and sinks read [`ApiKind`] instead of matching names.

use xpuprof_sdk::model::ApiKind;

/// Name fragments of CUDA calls, checked in order: adding a graph node (even a memcpy node) runs
/// nothing (the work runs at graph launch); a synchronising call is a sync.
const KINDS: [(&str, ApiKind); 14] = [
    ("GraphAdd", ApiKind::Other),
    ("Synchronize", ApiKind::Sync),
    ("StreamWaitEvent", ApiKind::Sync),
    ("StreamQuery", ApiKind::Sync),
    ("EventQuery", ApiKind::Sync),
    ("Launch", ApiKind::Launch),
    ("Memcpy", ApiKind::Copy),
    ("MemPrefetch", ApiKind::Copy),
    ("Memset", ApiKind::Memset),
    ("Free", ApiKind::Free),
    ("Malloc", ApiKind::Alloc),
    ("MemAlloc", ApiKind::Alloc),
    ("HostAlloc", ApiKind::Alloc),
    ("MemCreate", ApiKind::Alloc),
];

/// The kind of CUDA runtime (`cuda*`) or driver (`cu*`) API `name`.
pub fn classify(name: &str) -> ApiKind {
    xpuprof_toolbox::api_kind::classify(name, &KINDS)
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
