//! `[source.rocm]` settings, declared once in [`Config`]; what the agent gets of them travels in
//! `XPUPROF_ROCM_OPTS`.

use xpuprof_rocm_wire::AgentOpts;
pub use xpuprof_rocm_wire::ApiChoice;
use xpuprof_sdk::config::TypedConfig;
use xpuprof_sdk::prelude::*;
pub use xpuprof_toolbox::launch_stacks::LaunchStacks;
use xpuprof_wire::opts::{CommonOpts, StackMode};

xpuprof_sdk::plugin_config! {
    /// The `[source.rocm]` table.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct Config {
        /// path of libxpuprof_rocm_agent.so (unset: XPUPROF_ROCM_AGENT, else next to this plugin);
        /// as root it must be owned by root or the invoking user and not writable by others
        pub agent: Option<String> = None;
        /// tracing library: "auto", "rocprofiler-sdk" or "roctracer"
        pub api: ApiChoice = ApiChoice::Auto;
        /// where launch stacks come from
        pub launch_stacks: LaunchStacks = LaunchStacks::Agent;
        /// most frames per launch stack
        pub max_depth: u8 = 64, min(1);
        /// size of the tracing library's record buffer, KiB (records beyond it are dropped and counted)
        pub buffer_kib: u32 = 8192, min(64), max(1 << 20);
        /// kernel dispatches
        pub kernels: bool = true;
        /// memory copies
        pub copies: bool = true;
        /// memory allocations and frees (rocprofiler-sdk only)
        pub memory: bool = true;
        /// scratch memory allocations (rocprofiler-sdk only)
        pub scratch: bool = true;
        /// roctx markers and ranges
        pub markers: bool = true;
    }
}

/// The keys `[source.rocm]` accepts.
pub fn keys() -> Vec<ConfigKey> {
    Config::schema().into_keys()
}

impl Config {
    /// Reads the settings.
    pub fn from_plugin(c: &PluginConfig) -> PluginResult<Self> {
        c.typed()
    }

    /// The agent's options (`XPUPROF_ROCM_OPTS`): those every agent takes, then this backend's
    /// ([`AgentOpts`], declared once in `xpuprof-rocm-wire` for both ends).
    pub fn agent_opts(&self) -> String {
        let common = CommonOpts {
            stacks: StackMode::from_word(self.launch_stacks.as_str()).unwrap_or_default(),
            depth: usize::from(self.max_depth),
            buffer_kib: self.buffer_kib as usize,
            verbose: false,
        };
        let own = AgentOpts {
            api: self.api,
            kernels: self.kernels,
            copies: self.copies,
            memory: self.memory,
            scratch: self.scratch,
            markers: self.markers,
        };
        format!("{},{}", common.to_opts(), own.to_opts())
    }
}
