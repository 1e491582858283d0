//! The `[source.levelzero]` settings and the Level Zero agent's own options, declared once in
//! [`AgentOpts`]: the `levelzero` host plugin reads the struct from its table and writes it into
//! `XPUPROF_LEVELZERO_OPTS`, the agent reads it back.

use xpuprof_wire::opts::PythonMode;

xpuprof_sdk::backend_options! {
    /// The `[source.levelzero]` table (the `#[host]` and `#[both]` fields) and the Level Zero
    /// agent's options beside those every agent takes (the `#[both]` fields).
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct AgentOpts {
        #[host]
        /// path of libxpuprof_levelzero_agent.so (unset: XPUPROF_LEVELZERO_AGENT, else next to this plugin);
        /// as root it must be owned by root or the invoking user and not writable by others
        pub agent: Option<String> = None;
        #[both]
        /// Python frames in launch stacks: "auto" (where the process runs CPython 3.9-3.13, each eval-loop
        /// frame replaced by the Python functions it runs, shown as function (file.py:line)), "off"
        pub python: PythonMode = PythonMode::Auto;
    }
}
