//! `[sink.summary]` configuration.

use xpuprof_sdk::{ConfigKey, ConfigType, PluginConfig, PluginError, PluginResult};

/// Every key `[sink.summary]` accepts.
pub fn keys() -> Vec<ConfigKey> {
    vec![
        ConfigKey::new(
            "by_launch_site",
            ConfigType::Bool,
            "false",
            "split the kernel table by launch site (the CPU stack that launched each kernel)",
        ),
        ConfigKey::new(
            "idle_gap_threshold_us",
            ConfigType::Float,
            "100.0",
            "device idle gaps at least this long (microseconds) are counted and listed",
        ),
        ConfigKey::new(
            "exact_percentile_samples",
            ConfigType::Integer,
            "10000",
            "durations kept per series for exact percentiles; beyond, a histogram (<= 0.4% error)",
        ),
        ConfigKey::new(
            "text_rows",
            ConfigType::Integer,
            "25",
            "rows per table in summary.txt (JSON has all)",
        ),
        ConfigKey::new("digest", ConfigType::Bool, "true", "print the five-line digest to stderr at the end"),
    ]
}

/// The validated settings.
#[derive(Debug, Clone, PartialEq)]
pub struct SummaryConfig {
    /// Split kernels by launch site.
    pub by_launch_site: bool,
    /// Idle gap threshold, ns.
    pub idle_gap_threshold_ns: u64,
    /// Durations kept exactly per series.
    pub exact_samples: usize,
    /// Rows per table in the text report.
    pub text_rows: usize,
    /// Print the digest.
    pub digest: bool,
}

impl Default for SummaryConfig {
    fn default() -> Self {
        Self {
            by_launch_site: false,
            idle_gap_threshold_ns: 100_000,
            exact_samples: 10_000,
            text_rows: 25,
            digest: true,
        }
    }
}

impl SummaryConfig {
    /// Reads the settings, with defaults for absent keys.
    pub fn from_plugin(cfg: &PluginConfig) -> PluginResult<Self> {
        let d = Self::default();
        let gap_us = cfg.float("idle_gap_threshold_us", d.idle_gap_threshold_ns as f64 / 1000.0)?;
        if !(gap_us.is_finite() && gap_us >= 0.0) {
            return Err(PluginError::new(format!(
                "config key `idle_gap_threshold_us` is {gap_us}; expected a number >= 0"
            )));
        }
        Ok(Self {
            by_launch_site: cfg.bool("by_launch_site", d.by_launch_site)?,
            idle_gap_threshold_ns: (gap_us * 1000.0).round() as u64,
            exact_samples: positive(cfg, "exact_percentile_samples", d.exact_samples)?,
            text_rows: positive(cfg, "text_rows", d.text_rows)?,
            digest: cfg.bool("digest", d.digest)?,
        })
    }
}

fn positive(cfg: &PluginConfig, key: &str, default: usize) -> PluginResult<usize> {
    let v = cfg.integer(key, default as i64)?;
    usize::try_from(v)
        .ok()
        .filter(|v| *v > 0)
        .ok_or_else(|| PluginError::new(format!("config key `{key}` is {v}; expected an integer >= 1")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_overrides() {
        let c = SummaryConfig::from_plugin(&PluginConfig::default()).unwrap();
        assert_eq!(c, SummaryConfig::default());
        let c = SummaryConfig::from_plugin(
            &PluginConfig::parse("by_launch_site = true\nidle_gap_threshold_us = 2.5").unwrap(),
        )
        .unwrap();
        assert!(c.by_launch_site);
        assert_eq!(c.idle_gap_threshold_ns, 2500);
    }

    #[test]
    fn bad_values_say_which_key() {
        let e = SummaryConfig::from_plugin(&PluginConfig::parse("text_rows = 0").unwrap()).unwrap_err();
        assert!(e.0.contains("text_rows"), "{e}");
        let e = SummaryConfig::from_plugin(&PluginConfig::parse("idle_gap_threshold_us = -1").unwrap())
            .unwrap_err();
        assert!(e.0.contains("idle_gap_threshold_us"), "{e}");
    }
}
