//! What a HIP API call does, from its name (HIP's names are the ROCm knowledge this plugin
//! keeps; sinks read [`ApiKind`]).

use xpuprof_sdk::model::ApiKind;
use xpuprof_toolbox::api_kind::Fragments;

/// Name fragments of HIP calls, checked in order (a synchronising copy is a copy).
const KINDS: &Fragments = &[
    (ApiKind::Sync, &["Synchronize", "StreamWaitEvent"]),
    (ApiKind::Launch, &["Launch"]),
    (ApiKind::Copy, &["Memcpy", "MemPrefetch"]),
    (ApiKind::Memset, &["Memset"]),
    (ApiKind::Free, &["Free"]),
    (ApiKind::Alloc, &["Malloc", "MemAlloc", "MemCreate", "HostRegister"]),
];

/// The kind of HIP runtime API `name`.
pub fn classify(name: &str) -> ApiKind {
    xpuprof_toolbox::api_kind::classify(name, KINDS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hip_names_are_classified() {
        xpuprof_toolbox::api_kind::check(
            KINDS,
            &[
                (
                    ApiKind::Launch,
                    &["hipLaunchKernel", "hipModuleLaunchKernel", "hipExtLaunchKernelGGL", "hipGraphLaunch"],
                ),
                (ApiKind::Copy, &["hipMemcpyAsync"]),
                (ApiKind::Memset, &["hipMemsetD32"]),
                (ApiKind::Alloc, &["hipMalloc"]),
                (ApiKind::Free, &["hipHostFree"]),
                (ApiKind::Sync, &["hipStreamSynchronize"]),
                (ApiKind::Other, &["hipGetDevice"]),
            ],
        );
    }
}
