//! `[source.rocm]` settings: every key is declared once, with the agent's options, in
//! `xpuprof-rocm-wire`'s `AgentOpts` (for both ends), which is the host's [`Config`]; what the
//! agent gets of them travels in `XPUPROF_ROCM_OPTS` ([`agent_opts`]).

use xpuprof_sdk::config::TypedConfig;
use xpuprof_sdk::prelude::*;

/// The `[source.rocm]` table.
pub use xpuprof_rocm_wire::AgentOpts as Config;

/// The keys `[source.rocm]` accepts.
pub fn keys() -> Vec<ConfigKey> {
    Config::schema().into_keys()
}

/// The agent's options (`XPUPROF_ROCM_OPTS`): those every agent takes, then this backend's.
pub fn agent_opts(c: &Config) -> String {
    let (depth, buffer_kib) = (usize::from(c.max_depth), c.buffer_kib as usize);
    xpuprof_toolbox::agent_host::agent_opts(c.launch_stacks, depth, buffer_kib, c)
}
