//! Options of the folded view (`[sink.folded]`, and the same keys in `[sink.flamegraph]`).

use xpuprof_sdk::{ConfigKey, ConfigType, PluginConfig, PluginResult};

/// How kernel names are printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KernelNames {
    /// As reported (demangled when `demangle` is on).
    Full,
    /// Qualified function name only: no template arguments, parameters or return type.
    Short,
}

/// Options of the folded view.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FoldedOptions {
    /// Demangle kernel names that arrive mangled (`_Z...`). CPU frames arrive demangled by the
    /// host's symbolizer and are printed as they are either way.
    pub demangle: bool,
    /// Full or short kernel names.
    pub kernel_names: KernelNames,
    /// Put the device index in GPU frames: `[GPU0_Kernel]`.
    pub gpu_device: bool,
    /// Put the stream's native id in GPU frames: `[GPU0_S7_Kernel]` (or `[GPU_S7_Kernel]`).
    pub gpu_stream: bool,
    /// Drop lines whose weight (µs) is below this.
    pub min_weight: u64,
    /// Start every stack with a `command (pid)` frame.
    pub process_frame: bool,
    /// Include off-CPU samples (under an `[off-cpu]` root frame).
    pub off_cpu: bool,
}

impl Default for FoldedOptions {
    fn default() -> Self {
        Self {
            demangle: true,
            kernel_names: KernelNames::Full,
            gpu_device: false,
            gpu_stream: false,
            min_weight: 1,
            process_frame: false,
            off_cpu: true,
        }
    }
}

impl FoldedOptions {
    /// The configuration keys of the folded view, with their defaults.
    pub fn config_keys() -> Vec<ConfigKey> {
        use ConfigType::*;
        vec![
            ConfigKey::new("demangle", Bool, "true", "demangle kernel names that arrive mangled (_Z...)"),
            ConfigKey::new(
                "kernel_names",
                String,
                "\"full\"",
                "\"full\", or \"short\" to drop template arguments, parameters and return types",
            ),
            ConfigKey::new("gpu_device", Bool, "false", "name the device in GPU frames: [GPU0_Kernel]"),
            ConfigKey::new("gpu_stream", Bool, "false", "name the stream in GPU frames: [GPU0_S7_Kernel]"),
            ConfigKey::new("min_weight", Integer, "1", "drop stacks lighter than this many microseconds"),
            ConfigKey::new("process_frame", Bool, "false", "start every stack with a `command (pid)` frame"),
            ConfigKey::new("off_cpu", Bool, "true", "include off-CPU samples under an [off-cpu] root frame"),
        ]
    }

    /// Reads the options from a plugin's configuration.
    pub fn from_config(c: &PluginConfig) -> PluginResult<Self> {
        let d = Self::default();
        let kernel_names = match c.choice("kernel_names", &["full", "short"], "full")?.as_str() {
            "short" => KernelNames::Short,
            _ => KernelNames::Full,
        };
        let min_weight = c.integer("min_weight", d.min_weight as i64)?;
        Ok(Self {
            demangle: c.bool("demangle", d.demangle)?,
            kernel_names,
            gpu_device: c.bool("gpu_device", d.gpu_device)?,
            gpu_stream: c.bool("gpu_stream", d.gpu_stream)?,
            min_weight: u64::try_from(min_weight).map_err(|_| {
                xpuprof_sdk::PluginError::new(format!(
                    "config key `min_weight` is {min_weight}; it must be 0 or more"
                ))
            })?,
            process_frame: c.bool("process_frame", d.process_frame)?,
            off_cpu: c.bool("off_cpu", d.off_cpu)?,
        })
    }
}
