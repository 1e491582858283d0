//! What a HIP API call does, from its name (HIP's names are the ROCm knowledge this plugin
//! keeps; sinks read [`ApiKind`]).

use xpuprof_sdk::model::ApiKind;

/// Name fragments of HIP calls, checked in order (a synchronising copy is a copy).
const KINDS: [(&str, ApiKind); 11] = [
    ("Synchronize", ApiKind::Sync),
    ("StreamWaitEvent", ApiKind::Sync),
    ("Launch", ApiKind::Launch),
    ("Memcpy", ApiKind::Copy),
    ("MemPrefetch", ApiKind::Copy),
    ("Memset", ApiKind::Memset),
    ("Free", ApiKind::Free),
    ("Malloc", ApiKind::Alloc),
    ("MemAlloc", ApiKind::Alloc),
    ("MemCreate", ApiKind::Alloc),
    ("HostRegister", ApiKind::Alloc),
];

/// The kind of HIP runtime API `name`.
pub fn classify(name: &str) -> ApiKind {
    xpuprof_toolbox::api_kind::classify(name, &KINDS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hip_names_are_classified() {
        for (name, kind) in [
            ("hipLaunchKernel", ApiKind::Launch),
            ("hipModuleLaunchKernel", ApiKind::Launch),
            ("hipExtLaunchKernelGGL", ApiKind::Launch),
            ("hipGraphLaunch", ApiKind::Launch),
            ("hipMemcpyAsync", ApiKind::Copy),
            ("hipMemsetD32", ApiKind::Memset),
            ("hipMalloc", ApiKind::Alloc),
            ("hipHostFree", ApiKind::Free),
            ("hipStreamSynchronize", ApiKind::Sync),
            ("hipGetDevice", ApiKind::Other),
        ] {
            assert_eq!(classify(name), kind, "{name}");
        }
    }
}
