//! `[source.levelzero]` settings, declared once in [`Config`]; what the agent gets of them
//! travels in `XPUPROF_LEVELZERO_OPTS`.

use xpuprof_levelzero_wire::AgentOpts;
use xpuprof_sdk::config::TypedConfig;
use xpuprof_sdk::prelude::*;
use xpuprof_toolbox::python::Python;
use xpuprof_wire::opts::PythonMode;

xpuprof_sdk::plugin_config! {
    /// The `[source.levelzero]` table.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct Config {
        /// path of libxpuprof_levelzero_agent.so (unset: XPUPROF_LEVELZERO_AGENT, else next to this plugin);
        /// as root it must be owned by root or the invoking user and not writable by others
        pub agent: Option<String> = None;
        /// Python frames in launch stacks: "auto" (where the process runs CPython 3.9-3.13, each eval-loop
        /// frame replaced by the Python functions it runs, shown as function (file.py:line)), "off"
        pub python: Python = Python::Auto;
    }
}

/// The keys `[source.levelzero]` accepts.
pub fn keys() -> Vec<ConfigKey> {
    Config::schema().into_keys()
}

impl Config {
    /// Reads the settings.
    pub fn from_plugin(c: &PluginConfig) -> PluginResult<Self> {
        c.typed()
    }

    /// The agent's options (`XPUPROF_LEVELZERO_OPTS`).
    pub fn agent_opts(&self) -> AgentOpts {
        AgentOpts { python: PythonMode::from_word(self.python.as_str()).unwrap_or_default() }
    }
}
