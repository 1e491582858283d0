//! `[sink.perfetto]` configuration, declared once in [`PerfettoConfig`].

use xpuprof_sdk::config::TypedConfig;
use xpuprof_sdk::{ConfigKey, PluginConfig, PluginResult};

use crate::output::OutputOptions;
use crate::writer::TraceOptions;

xpuprof_sdk::plugin_config! {
    /// The `[sink.perfetto]` table.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct PerfettoConfig {
        /// write CPU samples (flame graph) and off-CPU time
        pub cpu_samples: bool = true;
        /// attach correlation ids, bytes and results to slices
        pub args: bool = true;
        /// deflate packets in bundles (compressed_packets)
        pub compress: bool = true;
        /// uncompressed KiB per compressed bundle (Perfetto reads compressed bundles of at most 512 KiB)
        pub bundle_kib: usize = 256, min(4), max(480);
        /// uncompressed MiB after which interned data is cleared and re-emitted
        pub intern_reset_mib: u64 = 64, min(1), max(1 << 20);
    }
}

/// Every key `[sink.perfetto]` accepts.
pub fn keys() -> Vec<ConfigKey> {
    PerfettoConfig::schema().into_keys()
}

impl From<PerfettoConfig> for TraceOptions {
    fn from(c: PerfettoConfig) -> Self {
        TraceOptions {
            cpu_samples: c.cpu_samples,
            args: c.args,
            output: OutputOptions { compress: c.compress, bundle_bytes: c.bundle_kib * 1024 },
            reset_bytes: c.intern_reset_mib * 1024 * 1024,
        }
    }
}

/// Reads the validated options from `config`.
pub fn options(config: &PluginConfig) -> PluginResult<TraceOptions> {
    Ok(config.typed::<PerfettoConfig>()?.into())
}

/// The defaults, as [`options`] returns them for an empty config.
pub fn defaults() -> TraceOptions {
    PerfettoConfig::default().into()
}
