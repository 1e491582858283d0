//! `[source.levelzero]` settings.

use xpuprof_sdk::prelude::*;

/// The plugin's settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// Agent library path ("" = next to this plugin).
    pub agent: String,
}

/// The keys `[source.levelzero]` accepts.
pub fn keys() -> Vec<ConfigKey> {
    vec![ConfigKey::new(
        "agent",
        ConfigType::String,
        "\"\"",
        "path of libxpuprof_levelzero_agent.so (default: next to this plugin)",
    )]
}

impl Config {
    /// Reads the settings.
    pub fn from_plugin(c: &PluginConfig) -> PluginResult<Self> {
        Ok(Self { agent: c.string("agent", "")? })
    }
}
