//! `[sink.pprof]` configuration.

use xpuprof_sdk::{ConfigKey, ConfigType, PluginConfig, PluginResult};

/// Every key `[sink.pprof]` accepts.
pub fn keys() -> Vec<ConfigKey> {
    vec![
        ConfigKey::new("demangle", ConfigType::Bool, "true", "demangle names that arrive mangled (_Z...)"),
        ConfigKey::new("cpu_samples", ConfigType::Bool, "true", "add CPU samples (cpu_time, off_cpu_time)"),
    ]
}

/// The validated settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProfileOptions {
    /// Demangle `_Z...` names.
    pub demangle: bool,
    /// Add CPU samples.
    pub cpu_samples: bool,
}

impl Default for ProfileOptions {
    fn default() -> Self {
        Self { demangle: true, cpu_samples: true }
    }
}

/// Reads the validated options from `config`.
pub fn options(config: &PluginConfig) -> PluginResult<ProfileOptions> {
    Ok(ProfileOptions {
        demangle: config.bool("demangle", true)?,
        cpu_samples: config.bool("cpu_samples", true)?,
    })
}
