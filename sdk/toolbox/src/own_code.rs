//! xpuprof's own code inside the profiled process: the in-target agents and the agent kit they
//! are built on. CPU samples that land in it are the profiler's cost, not the program's, and the
//! outputs show them under one [`OWN_FRAME`] frame.
//!
//! The agents keep their own code off launch stacks by address (the agent kit's `own_code`
//! ranges, taken from the process's maps where its libraries are loaded), but those ranges
//! never leave the process; a sampled stack is recognised here by what the same code is called
//! outside it: a module whose file is one of xpuprof's libraries (`libxpuprof_<backend>_agent.so`,
//! the C agent kit's `libxpuprof_agent.so`: every library xpuprof builds is `libxpuprof_*`), or
//! a function of one of xpuprof's crates (`xpuprof_python::…`, `<xpuprof_agent_kit::… as …>::…`,
//! the C kit's `xpuprof_agent_enter`), which also finds the kit linked statically into another
//! library. A vendor agent written in C on the kit has code of its own in its own library: only
//! its calls into the kit are recognised.

use xpuprof_sdk::model::{FrameDef, FrameKind};

use crate::Definitions;

/// The frame that stands for xpuprof's own code in stacks and tables.
pub const OWN_FRAME: &str = "[xpuprof]";

/// File name prefix of every library xpuprof builds.
const LIBRARY_PREFIX: &str = "libxpuprof";

/// True when frame `f` is xpuprof's own code.
pub fn is_own_frame(defs: &Definitions, f: &FrameDef) -> bool {
    if f.kind == FrameKind::Synthetic {
        return false;
    }
    defs.module_path(f.module).is_some_and(is_own_module) || defs.str(f.name).is_some_and(is_own_function)
}

/// True for the path of one of xpuprof's libraries.
pub fn is_own_module(path: &str) -> bool {
    path.rsplit('/').next().is_some_and(|file| file.starts_with(LIBRARY_PREFIX))
}

/// True for a function of one of xpuprof's crates (demangled), or of the C agent kit's API.
pub fn is_own_function(name: &str) -> bool {
    let name = name.strip_prefix('<').unwrap_or(name);
    name.starts_with("xpuprof_")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recognises_xpuprofs_libraries_and_crates() {
        assert!(is_own_module("/opt/xpuprof/lib/libxpuprof_acme_agent.so"));
        assert!(is_own_module("/usr/local/lib/libxpuprof_agent.so"));
        assert!(!is_own_module("/usr/lib/x86_64-linux-gnu/libacmeprof.so.12"));
        assert!(!is_own_module("/home/me/xpuprof_demo/app"));
        assert!(is_own_function(
            "xpuprof_python::autograd::<impl xpuprof_python::own::Interpreter>::capture_backward_caller"
        ));
        assert!(is_own_function("<xpuprof_agent_kit::channel::Channel as core::ops::drop::Drop>::drop"));
        assert!(is_own_function("xpuprof_agent_enter"));
        assert!(!is_own_function("process_vm_readv"));
        assert!(!is_own_function("at::native::xpuprof_like"));
    }
}
