//! The `[source.ebpf]` configuration table.

use xpuprof_sdk::{ConfigKey, ConfigType, PluginConfig, PluginError, PluginResult};

/// Every key `[source.ebpf]` accepts.
pub fn keys() -> Vec<ConfigKey> {
    use ConfigType::*;
    vec![
        ConfigKey::new("sample_hz", Integer, "99", "on-CPU sampling frequency per CPU (software cpu-clock), 0 = off"),
        ConfigKey::new("kernel_stacks", Bool, "false", "also capture kernel stacks for on- and off-CPU samples"),
        ConfigKey::new("offcpu", Bool, "false", "record off-CPU (blocked) time with the stack where the thread blocked"),
        ConfigKey::new("offcpu_min_us", Integer, "1000", "ignore blocked intervals shorter than this (microseconds)"),
        ConfigKey::new(
            "launch_probes",
            StringList,
            "[]",
            "launch-class symbols to uprobe in whatever library or executable the target maps, e.g. [\"cudaLaunchKernel\"]",
        ),
        ConfigKey::new(
            "launch_stacks_from_trampoline",
            Bool,
            "true",
            "uprobe xpuprof_agent_launch, which xpuprof's in-target agents call when another source asks for \
             eBPF launch stacks ([source.cupti] launch_stacks = \"ebpf\" or \"both\"): exactly correlated launch \
             stacks. Unset: on whenever another source is in the session, looking only in xpuprof's agent \
             libraries (libxpuprof_*), at no cost until an agent calls it; true: also in every other library the \
             target maps (third-party agents); false: off",
        ),
        ConfigKey::new("launch_sample_every", Integer, "1", "capture one launch-probe stack every N hits per thread"),
        ConfigKey::new(
            "launch_max_per_sec_per_thread",
            Integer,
            "0",
            "at most this many launch-probe stacks per second per thread, 0 = no limit",
        ),
        ConfigKey::new("maps_scan_ms", Integer, "100", "how often to rescan the target's memory maps for new libraries"),
        ConfigKey::new("ring_buffer_mib", Integer, "16", "size of the kernel-to-host ring buffer (MiB, power of two)"),
    ]
}

/// Where the correlation trampoline `xpuprof_agent_launch` is looked for and uprobed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trampoline {
    /// Not at all.
    Off,
    /// In xpuprof's own agent libraries (`libxpuprof_*`) only: no symbol scan of other files.
    Agents,
    /// In every file the target maps.
    Everywhere,
}

/// The validated configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// Sampling frequency per CPU; 0 disables on-CPU sampling.
    pub sample_hz: u64,
    /// Capture kernel stacks too.
    pub kernel_stacks: bool,
    /// Record off-CPU intervals.
    pub offcpu: bool,
    /// Shortest off-CPU interval reported, ns.
    pub offcpu_min_ns: u64,
    /// Symbols to uprobe.
    pub launch_probes: Vec<String>,
    /// Where to uprobe the correlation trampoline.
    pub trampoline: Trampoline,
    /// Keep one launch stack every N hits per thread.
    pub launch_sample_every: u64,
    /// Launch stacks per second per thread, 0 = unlimited.
    pub launch_max_per_sec: u64,
    /// Interval between rescans of the target's maps, ms.
    pub maps_scan_ms: u64,
    /// Ring buffer size, bytes.
    pub ring_buffer_bytes: u32,
}

impl Default for Config {
    fn default() -> Self {
        Self::from_plugin_config(&PluginConfig::default(), &[]).expect("defaults are valid")
    }
}

impl Config {
    /// Reads and checks the configuration; `sources` are the session's sources (an unset
    /// `launch_stacks_from_trampoline` follows them).
    pub fn from_plugin_config(c: &PluginConfig, sources: &[String]) -> PluginResult<Self> {
        let trampoline = if c.table().contains_key("launch_stacks_from_trampoline") {
            if c.bool("launch_stacks_from_trampoline", true)? {
                Trampoline::Everywhere
            } else {
                Trampoline::Off
            }
        } else if sources.iter().any(|s| s != crate::NAME) {
            Trampoline::Agents
        } else {
            Trampoline::Off
        };
        let cfg = Self {
            sample_hz: non_negative(c, "sample_hz", 99)?,
            kernel_stacks: c.bool("kernel_stacks", false)?,
            offcpu: c.bool("offcpu", false)?,
            offcpu_min_ns: non_negative(c, "offcpu_min_us", 1000)?.saturating_mul(1000),
            launch_probes: c.string_list("launch_probes", &[])?,
            trampoline,
            launch_sample_every: non_negative(c, "launch_sample_every", 1)?.max(1),
            launch_max_per_sec: non_negative(c, "launch_max_per_sec_per_thread", 0)?,
            maps_scan_ms: non_negative(c, "maps_scan_ms", 100)?.max(1),
            ring_buffer_bytes: ring_buffer_bytes(non_negative(c, "ring_buffer_mib", 16)?)?,
        };
        if cfg.sample_hz > 10_000 {
            return Err(PluginError::new(format!(
                "config key `sample_hz` is {}: at most 10000 is supported (99 is the usual choice)",
                cfg.sample_hz
            )));
        }
        if let Some(bad) = cfg.launch_probes.iter().find(|s| s.is_empty() || s.contains(char::is_whitespace))
        {
            return Err(PluginError::new(format!(
                "config key `launch_probes` has an invalid symbol name {bad:?}"
            )));
        }
        Ok(cfg)
    }

    /// True when any uprobe is wanted.
    pub fn wants_uprobes(&self) -> bool {
        self.trampoline != Trampoline::Off || !self.launch_probes.is_empty()
    }
}

fn non_negative(c: &PluginConfig, key: &str, default: i64) -> PluginResult<u64> {
    let v = c.integer(key, default)?;
    u64::try_from(v)
        .map_err(|_| PluginError::new(format!("config key `{key}` must not be negative (got {v})")))
}

fn ring_buffer_bytes(mib: u64) -> PluginResult<u32> {
    if !(1..=1024).contains(&mib) || !mib.is_power_of_two() {
        return Err(PluginError::new(format!(
            "config key `ring_buffer_mib` is {mib}: it must be a power of two between 1 and 1024"
        )));
    }
    Ok((mib << 20) as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_match_the_declared_keys() {
        let c = Config::default();
        assert_eq!(c.sample_hz, 99);
        assert!(!c.offcpu && !c.kernel_stacks);
        assert_eq!(c.trampoline, Trampoline::Off, "no other source: no trampoline");
        assert_eq!(c.offcpu_min_ns, 1_000_000);
        assert_eq!(c.ring_buffer_bytes, 16 << 20);
        for k in keys() {
            assert!(!k.default.is_empty(), "{} has a default", k.name);
        }
    }

    #[test]
    fn trampoline_follows_the_session_unless_set() {
        let mode = |text: &str, sources: &[&str]| {
            let sources: Vec<String> = sources.iter().map(|s| s.to_string()).collect();
            Config::from_plugin_config(&PluginConfig::parse(text).unwrap(), &sources).unwrap().trampoline
        };
        assert_eq!(mode("", &["ebpf"]), Trampoline::Off);
        assert_eq!(mode("", &["ebpf", "cupti"]), Trampoline::Agents);
        assert_eq!(mode("launch_stacks_from_trampoline = true", &["ebpf"]), Trampoline::Everywhere);
        assert_eq!(mode("launch_stacks_from_trampoline = false", &["ebpf", "cupti"]), Trampoline::Off);
    }

    #[test]
    fn rejects_bad_values_with_the_key_name() {
        let err = |t: &str| Config::from_plugin_config(&PluginConfig::parse(t).unwrap(), &[]).unwrap_err().0;
        assert!(err("sample_hz = -1").contains("sample_hz"));
        assert!(err("ring_buffer_mib = 3").contains("power of two"));
        assert!(err("launch_probes = [\"a b\"]").contains("launch_probes"));
        assert!(err("sample_hz = 50000").contains("10000"));
    }
}
