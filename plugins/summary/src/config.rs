//! `[sink.summary]` configuration, declared once in [`SummaryKeys`].

use xpuprof_sdk::config::TypedConfig;
use xpuprof_sdk::{ConfigKey, PluginConfig, PluginResult};

use crate::python::UserCode;

xpuprof_sdk::plugin_config! {
    /// The `[sink.summary]` table.
    #[derive(Debug, Clone, PartialEq)]
    pub struct SummaryKeys {
        /// split the kernel table by launch site (the CPU stack that launched each kernel)
        pub by_launch_site: bool = false;
        /// device idle gaps at least this long (microseconds) are counted and listed
        pub idle_gap_threshold_us: f64 = 100.0, min(0.0);
        /// durations kept per series for exact percentiles; beyond, a histogram (<= 0.4% error)
        pub exact_percentile_samples: usize = 10_000, min(1);
        /// rows per table in summary.txt (JSON has all)
        pub text_rows: usize = 25, min(1);
        /// print the five-line digest to stderr at the end
        pub digest: bool = true;
        /// Python files whose path contains one of these are the user's code (GPU time by line)
        pub python_user_paths: Vec<String> = [];
        /// Python files whose path contains one of these are library code, not the user's
        pub python_library_paths: Vec<String> = [];
    }
}

/// Every key `[sink.summary]` accepts.
pub fn keys() -> Vec<ConfigKey> {
    SummaryKeys::schema().into_keys()
}

/// The settings in the units the sink works in.
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
    /// Which Python files are the user's.
    pub user_code: UserCode,
    /// Busy intervals kept mergeable per device (see [`crate::union`]).
    pub timeline_intervals: usize,
}

impl From<SummaryKeys> for SummaryConfig {
    fn from(k: SummaryKeys) -> Self {
        Self {
            by_launch_site: k.by_launch_site,
            idle_gap_threshold_ns: (k.idle_gap_threshold_us * 1000.0).round() as u64,
            exact_samples: k.exact_percentile_samples,
            text_rows: k.text_rows,
            digest: k.digest,
            user_code: UserCode { user_paths: k.python_user_paths, library_paths: k.python_library_paths },
            timeline_intervals: crate::union::DEFAULT_CAP,
        }
    }
}

impl Default for SummaryConfig {
    fn default() -> Self {
        SummaryKeys::default().into()
    }
}

impl SummaryConfig {
    /// Reads the settings, with the declared defaults for absent keys.
    pub fn from_plugin(cfg: &PluginConfig) -> PluginResult<Self> {
        Ok(cfg.typed::<SummaryKeys>()?.into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_overrides() {
        let c = SummaryConfig::from_plugin(&PluginConfig::default()).unwrap();
        assert_eq!(c, SummaryConfig::default());
        assert_eq!(c.idle_gap_threshold_ns, 100_000);
        let c = SummaryConfig::from_plugin(
            &PluginConfig::parse("by_launch_site = true\nidle_gap_threshold_us = 2.5").unwrap(),
        )
        .unwrap();
        assert!(c.by_launch_site);
        assert_eq!(c.idle_gap_threshold_ns, 2500);
        let c = SummaryConfig::from_plugin(
            &PluginConfig::parse("python_user_paths = [\"site-packages/mine/\"]").unwrap(),
        )
        .unwrap();
        assert!(c.user_code.is_user("/v/lib/python3.12/site-packages/mine/net.py"));
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
