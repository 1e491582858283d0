//! `[sink.perfetto]` configuration.

use xpuprof_sdk::{ConfigKey, ConfigType, PluginConfig, PluginError, PluginResult};

use crate::output::OutputOptions;
use crate::writer::TraceOptions;

/// Every key `[sink.perfetto]` accepts.
pub fn keys() -> Vec<ConfigKey> {
    use ConfigType::*;
    vec![
        ConfigKey::new("demangle", Bool, "true", "demangle names that arrive mangled (_Z...)"),
        ConfigKey::new("cpu_samples", Bool, "true", "write CPU samples (flame graph) and off-CPU time"),
        ConfigKey::new("args", Bool, "true", "attach correlation ids, bytes and results to slices"),
        ConfigKey::new("compress", Bool, "true", "deflate packets in bundles (compressed_packets)"),
        ConfigKey::new("bundle_kib", Integer, "256", "uncompressed KiB per compressed bundle (4..480)"),
        ConfigKey::new(
            "intern_reset_mib",
            Integer,
            "64",
            "uncompressed MiB after which interned data is cleared and re-emitted",
        ),
    ]
}

/// Reads the validated options from `config`.
pub fn options(config: &PluginConfig) -> PluginResult<TraceOptions> {
    let bundle_kib = config.integer("bundle_kib", 256)?;
    if !(4..=480).contains(&bundle_kib) {
        return Err(PluginError::new(format!(
            "sink.perfetto.bundle_kib = {bundle_kib} is out of range: use 4 to 480 (Perfetto reads \
             compressed bundles of at most 512 KiB)"
        )));
    }
    let reset_mib = config.integer("intern_reset_mib", 64)?;
    if reset_mib < 1 {
        return Err(PluginError::new(format!(
            "sink.perfetto.intern_reset_mib = {reset_mib} must be at least 1"
        )));
    }
    Ok(TraceOptions {
        demangle: config.bool("demangle", true)?,
        cpu_samples: config.bool("cpu_samples", true)?,
        args: config.bool("args", true)?,
        output: OutputOptions {
            compress: config.bool("compress", true)?,
            bundle_bytes: bundle_kib as usize * 1024,
        },
        reset_bytes: reset_mib as u64 * 1024 * 1024,
    })
}

/// The defaults, as [`options`] returns them for an empty config.
pub fn defaults() -> TraceOptions {
    TraceOptions {
        demangle: true,
        cpu_samples: true,
        args: true,
        output: OutputOptions { compress: true, bundle_bytes: 256 * 1024 },
        reset_bytes: 64 * 1024 * 1024,
    }
}
