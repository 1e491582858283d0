//! `[sink.pprof]` configuration, declared once in [`ProfileOptions`].

use xpuprof_sdk::config::TypedConfig;
use xpuprof_sdk::{ConfigKey, PluginConfig, PluginResult};

xpuprof_sdk::plugin_config! {
    /// The `[sink.pprof]` table.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub struct ProfileOptions {
        /// add CPU samples (cpu_time, off_cpu_time)
        pub cpu_samples: bool = true;
    }
}

/// Every key `[sink.pprof]` accepts.
pub fn keys() -> Vec<ConfigKey> {
    ProfileOptions::schema().into_keys()
}

/// Reads the validated options from `config`.
pub fn options(config: &PluginConfig) -> PluginResult<ProfileOptions> {
    config.typed()
}
