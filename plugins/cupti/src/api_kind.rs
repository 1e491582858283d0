//! What a CUDA runtime or driver API call does, from its name: the CUDA knowledge stays in this
//! plugin, and sinks read [`ApiKind`] instead of matching names.

use xpuprof_sdk::model::ApiKind;
use xpuprof_toolbox::api_kind::Fragments;

/// Name fragments of CUDA calls, checked in order: adding a graph node (even a memcpy node) runs
/// nothing (the work runs at graph launch); a synchronising call is a sync.
const KINDS: &Fragments = &[
    (ApiKind::Other, &["GraphAdd"]),
    (ApiKind::Sync, &["Synchronize", "StreamWaitEvent", "StreamQuery", "EventQuery"]),
    (ApiKind::Launch, &["Launch"]),
    (ApiKind::Copy, &["Memcpy", "MemPrefetch"]),
    (ApiKind::Memset, &["Memset"]),
    (ApiKind::Free, &["Free"]),
    (ApiKind::Alloc, &["Malloc", "MemAlloc", "HostAlloc", "MemCreate"]),
];

/// The kind of CUDA runtime (`cuda*`) or driver (`cu*`) API `name`.
pub fn classify(name: &str) -> ApiKind {
    xpuprof_toolbox::api_kind::classify(name, KINDS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runtime_and_driver_names_are_classified() {
        xpuprof_toolbox::api_kind::check(
            KINDS,
            &[
                (
                    ApiKind::Launch,
                    &["cudaLaunchKernel", "cudaLaunchKernel_ptsz", "cuLaunchKernelEx", "cudaGraphLaunch"],
                ),
                (ApiKind::Sync, &["cudaDeviceSynchronize", "cuStreamSynchronize", "cudaStreamWaitEvent"]),
                (ApiKind::Copy, &["cudaMemcpyAsync", "cuMemcpyHtoD_v2"]),
                (ApiKind::Memset, &["cudaMemsetAsync"]),
                (ApiKind::Alloc, &["cudaMalloc", "cuMemAlloc_v2"]),
                (ApiKind::Free, &["cudaFreeAsync"]),
                (ApiKind::Other, &["cudaGetDevice", "cudaGraphAddMemcpyNode"]),
            ],
        );
    }
}
