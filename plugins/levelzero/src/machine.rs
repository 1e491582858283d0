//! What a machine needs to trace Level Zero programs, for `prepare`'s warnings and
//! `xpuprof doctor`: the loader, its tracing layer, and a GPU driver the loader can load.

use xpuprof_sdk::{Capability, MachineCheck};
use xpuprof_toolbox::agent_host::loadable;

/// Intel's GPU drivers for the loader (Level Zero GPU runtime, legacy and current names).
pub const GPU_DRIVERS: [&str; 2] = ["libze_intel_gpu.so.1", "libze_intel_gpu_legacy1.so.1"];

/// A driver named by `ZE_ENABLE_ALT_DRIVERS`, which the loader uses instead of Intel's.
fn alt_drivers() -> Option<String> {
    std::env::var("ZE_ENABLE_ALT_DRIVERS").ok().filter(|v| !v.is_empty())
}

/// What is missing, each with the fix.
pub fn missing() -> Vec<(&'static str, &'static str)> {
    let mut m = Vec::new();
    if !loadable("libze_loader.so.1") {
        m.push((
            "no Level Zero loader (libze_loader.so.1)",
            "install it (Debian/Ubuntu: apt-get install libze1)",
        ));
    }
    if !loadable("libze_tracing_layer.so.1") {
        m.push((
            "no Level Zero tracing layer (libze_tracing_layer.so.1)",
            "install the loader package that ships it (Debian/Ubuntu: libze1)",
        ));
    }
    if alt_drivers().is_none() && !GPU_DRIVERS.iter().any(|d| loadable(d)) {
        m.push((
            "no Level Zero GPU driver (libze_intel_gpu.so.1)",
            "install Intel's compute runtime (intel-level-zero-gpu); programs will find no device",
        ));
    }
    m
}

/// The check of [`Capability::LevelZeroRuntime`] for `xpuprof doctor`.
pub fn checks() -> Vec<MachineCheck> {
    let cap = Capability::LevelZeroRuntime;
    let missing = missing();
    if missing.is_empty() {
        let driver = match alt_drivers() {
            Some(a) if !GPU_DRIVERS.iter().any(|d| loadable(d)) => {
                format!("driver from ZE_ENABLE_ALT_DRIVERS={a}")
            }
            _ => "Intel GPU driver found".to_owned(),
        };
        return vec![MachineCheck::ok(cap, format!("loader libze_loader.so.1, tracing layer, {driver}"))];
    }
    let what: Vec<&str> = missing.iter().map(|(w, _)| *w).collect();
    let fixes: Vec<&str> = missing.iter().map(|(_, f)| *f).collect();
    vec![MachineCheck::fail(cap, what.join("; "), fixes.join("; "))]
}
