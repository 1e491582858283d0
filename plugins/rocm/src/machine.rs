//! What the `rocm` source needs from the machine, for `xpuprof doctor`: the HIP runtime; the
//! library it hands its API tables to (librocprofiler-register, ROCm 6.2 and later) with
//! rocprofiler-sdk 1.x, or roctracer on older ROCm; and the amdgpu driver's /dev/kfd, without
//! which HIP finds no GPU and ROCr loads no tool.

use std::path::Path;

use xpuprof_sdk::{Capability, MachineCheck};
use xpuprof_toolbox::agent_host::loadable;

/// The first of `names` that loads.
fn first_loadable<'a>(names: &[&'a str]) -> Option<&'a str> {
    names.iter().copied().find(|n| loadable(n))
}

/// The check of [`Capability::RocmRuntime`].
pub fn checks() -> Vec<MachineCheck> {
    let hip = first_loadable(&["libamdhip64.so", "libamdhip64.so.7", "libamdhip64.so.6", "libamdhip64.so.5"]);
    let register = first_loadable(&["librocprofiler-register.so.0", "librocprofiler-register.so"]);
    let sdk = first_loadable(&["librocprofiler-sdk.so.1", "librocprofiler-sdk.so"]);
    let roctracer = first_loadable(&["libroctracer64.so.4", "libroctracer64.so"]);
    let kfd = Path::new("/dev/kfd").exists();
    let mut missing = Vec::new();
    let mut fixes = Vec::new();
    if hip.is_none() {
        missing.push("the HIP runtime libamdhip64.so");
        fixes.push("install ROCm's hip-runtime-amd (Debian: libamdhip64-5)");
    }
    match (register, sdk, roctracer) {
        (Some(_), None, _) => {
            missing.push("librocprofiler-sdk.so.1 (the runtime registers with librocprofiler-register, which loads tools through it)");
            fixes.push("install rocprofiler-sdk 1.x");
        }
        (None, _, None) => {
            missing.push("a tracing library: librocprofiler-register + librocprofiler-sdk (ROCm 6.2+) or libroctracer64 (older ROCm)");
            fixes.push(
                "install rocprofiler-register and rocprofiler-sdk (ROCm 6.2+) or roctracer (older ROCm)",
            );
        }
        _ => {}
    }
    if !kfd {
        missing.push("/dev/kfd (without it HIP finds no GPU and ROCr loads no tool)");
        fixes.push("load the amdgpu kernel driver");
    }
    let found: Vec<String> = [
        ("HIP", hip),
        ("rocprofiler-register", register),
        ("rocprofiler-sdk", sdk),
        ("roctracer", roctracer),
    ]
    .into_iter()
    .filter_map(|(what, lib)| lib.map(|l| format!("{what} {l}")))
    .collect();
    let found = if found.is_empty() { "nothing of ROCm".to_owned() } else { found.join(", ") };
    let cap = Capability::RocmRuntime;
    vec![if missing.is_empty() {
        MachineCheck::ok(cap, format!("{found}, /dev/kfd"))
    } else {
        MachineCheck::fail(cap, format!("found {found}; missing: {}", missing.join("; ")), fixes.join("; "))
    }]
}
