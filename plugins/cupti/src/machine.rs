//! What the `cupti` source needs from the machine, for `xpuprof doctor` and the default
//! sources: the NVIDIA driver (`libcuda.so.1`) and its device nodes.

use std::path::Path;

use xpuprof_sdk::{Capability, MachineCheck};
use xpuprof_toolbox::agent_host::loadable;

/// The check of [`Capability::CudaRuntime`].
pub fn checks() -> Vec<MachineCheck> {
    let cap = Capability::CudaRuntime;
    let driver = loadable("libcuda.so.1");
    let nodes = Path::new("/dev/nvidia0").exists() || Path::new("/dev/nvidiactl").exists();
    vec![match (driver, nodes) {
        (true, true) => MachineCheck::ok(cap, "NVIDIA driver (libcuda.so.1) and device nodes found"),
        (true, false) => MachineCheck::warn(
            cap,
            "libcuda.so.1 found but no /dev/nvidia* device nodes",
            "load the NVIDIA kernel driver (CUDA programs fail to initialise without it)",
        ),
        (false, _) => MachineCheck::fail(
            cap,
            "no NVIDIA driver (libcuda.so.1 not loadable)",
            "install the NVIDIA driver",
        ),
    }]
}
