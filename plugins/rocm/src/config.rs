//! `[source.rocm]` settings: every key is declared once, with the agent's options, in
//! [`AgentOpts`] (`xpuprof-rocm-wire`, for both ends); [`Config`] is what the host reads of them
//! and writes into `XPUPROF_ROCM_OPTS`.

use xpuprof_rocm_wire::AgentOpts;
use xpuprof_sdk::config::TypedConfig;
use xpuprof_sdk::prelude::*;
use xpuprof_wire::opts::CommonOpts;

/// The keys `[source.rocm]` accepts.
pub fn keys() -> Vec<ConfigKey> {
    AgentOpts::schema().into_keys()
}

/// The `[source.rocm]` table, read and checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// The settings, as the user wrote them (defaults for the keys left out).
    pub opts: AgentOpts,
}

impl Config {
    /// Reads the settings.
    pub fn from_plugin(c: &PluginConfig) -> PluginResult<Self> {
        Ok(Self { opts: c.typed()? })
    }

    /// The agent's options (`XPUPROF_ROCM_OPTS`): those every agent takes, then this backend's
    /// ([`AgentOpts`]).
    pub fn agent_opts(&self) -> String {
        let o = &self.opts;
        let common = CommonOpts {
            stacks: o.launch_stacks,
            depth: usize::from(o.max_depth),
            buffer_kib: o.buffer_kib as usize,
            verbose: false,
        };
        format!("{},{}", common.to_opts(), o.to_opts())
    }
}
