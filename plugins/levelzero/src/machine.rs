//! What a machine needs to trace Level Zero programs, for `prepare`'s warnings and
//! `xpuprof doctor`: the loader, its tracing layer, and a GPU driver the loader can load.

use xpuprof_toolbox::agent_host::loadable;

/// Intel's GPU drivers for the loader (Level Zero GPU runtime, legacy and current names).
pub const GPU_DRIVERS: [&str; 2] = ["libze_intel_gpu.so.1", "libze_intel_gpu_legacy1.so.1"];

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
    let alt = std::env::var_os("ZE_ENABLE_ALT_DRIVERS").is_some();
    if !alt && !GPU_DRIVERS.iter().any(|d| loadable(d)) {
        m.push((
            "no Level Zero GPU driver (libze_intel_gpu.so.1)",
            "install Intel's compute runtime (intel-level-zero-gpu); programs will find no device",
        ));
    }
    m
}
