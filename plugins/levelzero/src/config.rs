//! `[source.levelzero]` settings: every key is declared once, with the agent's options, in
//! [`AgentOpts`] (`xpuprof-levelzero-wire`, for both ends); [`Config`] is what the host reads of
//! them and writes into `XPUPROF_LEVELZERO_OPTS`.

use xpuprof_levelzero_wire::AgentOpts;
use xpuprof_sdk::config::TypedConfig;
use xpuprof_sdk::prelude::*;

/// The keys `[source.levelzero]` accepts.
pub fn keys() -> Vec<ConfigKey> {
    AgentOpts::schema().into_keys()
}

/// The `[source.levelzero]` table, read and checked.
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

    /// The agent's options (`XPUPROF_LEVELZERO_OPTS`).
    pub fn agent_opts(&self) -> String {
        self.opts.to_opts()
    }
}
