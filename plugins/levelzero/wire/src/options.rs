//! The Level Zero agent's own options, declared once: the `levelzero` host plugin writes them
//! into `XPUPROF_LEVELZERO_OPTS` from its `[source.levelzero]` table, the agent reads them back.

use xpuprof_wire::opts::PythonMode;

xpuprof_wire::agent_options! {
    /// The Level Zero agent's options beside those every agent takes.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub struct AgentOpts {
        /// Python frames in launch stacks.
        pub python: PythonMode = PythonMode::Auto;
    }
}
