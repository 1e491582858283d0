//! Where the tracing libraries are. The SDK path never searches: `librocprofiler-sdk` is already
//! mapped when it calls the tool, and the agent binds to that very file. roctracer is searched
//! with the kit's [`discovery`](xpuprof_agent_kit::discovery) when the process has not mapped it
//! yet: `XPUPROF_ROCTRACER_LIB`; beside the `libamdhip64` / `libhsa-runtime64` this process maps
//! (a ROCm install's `lib`); `ROCM_PATH` / `ROCM_HOME`.

use xpuprof_agent_kit::discovery::Search;
use xpuprof_agent_kit::modules;

/// The roctracer search.
pub const ROCTRACER: Search<'static> = Search {
    what: "libroctracer64",
    file_prefix: "libroctracer64.so",
    override_var: "XPUPROF_ROCTRACER_LIB",
    anchor_names: &["libamdhip64.so", "libhsa-runtime64.so"],
    anchor_dirs: &[],
    relative: &["."],
    root_vars: &["ROCM_PATH", "ROCM_HOME"],
    local_prefix: "rocm",
    root_subdirs: &["lib", "lib64"],
    hint:
        "install roctracer for this ROCm (the roctracer package of ROCm 5.x/6.x) or set XPUPROF_ROCTRACER_LIB",
};

/// The path of a mapped library whose file name starts with `prefix`.
pub fn mapped(prefix: &str) -> Option<String> {
    modules::own().into_iter().map(|m| m.path).find(|p| {
        std::path::Path::new(p).file_name().and_then(|f| f.to_str()).is_some_and(|f| f.starts_with(prefix))
    })
}
