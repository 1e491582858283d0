//! The `[source.ebpf]` configuration table.

use xpuprof_sdk::config::TypedConfig;
use xpuprof_sdk::{ConfigKey, PluginConfig, PluginResult};
pub use xpuprof_toolbox::python::Python;

xpuprof_sdk::plugin_config! {
    /// The `[source.ebpf]` table as the user wrote it: every key, its type, default, range and
    /// documentation. [`Config`] is what the source runs with.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct EbpfKeys {
        /// on-CPU sampling frequency per CPU (software cpu-clock), 0 = off
        pub sample_hz: u64 = 99, max(10_000);
        /// also capture kernel stacks for on- and off-CPU samples
        pub kernel_stacks: bool = false;
        /// record off-CPU (blocked) time with the stack where the thread blocked
        pub offcpu: bool = false;
        /// ignore blocked intervals shorter than this (microseconds)
        pub offcpu_min_us: u64 = 1000, max(3_600_000_000);
        /// launch-class symbols to uprobe in whatever library or executable the target maps, e.g. ["cudaLaunchKernel"]
        pub launch_probes: Vec<String> = [], word();
        /// uprobe xpuprof_agent_launch, which xpuprof's in-target agents call when another source asks for
        /// eBPF launch stacks ([source.cupti] launch_stacks = "ebpf" or "both"): exactly correlated launch
        /// stacks. Unset: on whenever another source is in the session, looking only in xpuprof's agent
        /// libraries (libxpuprof_*), at no cost until an agent calls it; true: also in every other library the
        /// target maps (third-party agents); false: off
        pub launch_stacks_from_trampoline: Option<bool> = None;
        /// capture one launch-probe stack every N hits per thread
        pub launch_sample_every: u64 = 1, min(1);
        /// at most this many launch-probe stacks per second per thread, 0 = no limit
        pub launch_max_per_sec_per_thread: u64 = 0;
        /// how often to rescan the target's memory maps for new libraries (milliseconds)
        pub maps_scan_ms: u64 = 100, min(1), max(60_000);
        /// bytes of user stack copied per sample and launch stack, unwound by the host with the binaries'
        /// unwind tables; stacks deeper than this are cut (and counted)
        pub ustack_copy_bytes: u32 = 65536, one_of([4096, 8192, 16384, 32768, 65536]);
        /// Python frames in CPU samples and launch stacks: "auto" (where a process of the tree runs CPython
        /// 3.9-3.13, found by what it maps, each eval-loop frame replaced by the Python functions it runs, shown
        /// as function (file.py:line)), "off"
        pub python: Python = Python::Auto;
        /// size of the kernel-to-host ring buffer (MiB, power of two)
        pub ring_buffer_mib: u32 = 16, one_of([1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024]);
        /// say at the end what the source's BPF programs cost, as the kernel counts it (runs and time of each);
        /// turns the kernel's BPF run-time statistics on for the whole machine while the session runs, which
        /// adds two clock reads to every BPF program of every user, so off unless asked
        pub bpf_run_time: bool = false;
    }
}

/// Every key `[source.ebpf]` accepts.
pub fn keys() -> Vec<ConfigKey> {
    EbpfKeys::schema().into_keys()
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
    /// User stack bytes copied per record.
    pub ustack_copy_bytes: u32,
    /// Python frames.
    pub python: Python,
    /// Count the BPF programs' run time with the kernel's statistics.
    pub bpf_run_time: bool,
}

impl Default for Config {
    fn default() -> Self {
        Self::from_keys(EbpfKeys::default(), &[]).expect("the declared defaults are valid")
    }
}

impl Config {
    /// Reads and checks the configuration; `sources` are the session's sources (an unset
    /// `launch_stacks_from_trampoline` follows them).
    pub fn from_plugin_config(c: &PluginConfig, sources: &[String]) -> PluginResult<Self> {
        Self::from_keys(c.typed()?, sources)
    }

    fn from_keys(k: EbpfKeys, sources: &[String]) -> PluginResult<Self> {
        let trampoline = match k.launch_stacks_from_trampoline {
            Some(true) => Trampoline::Everywhere,
            Some(false) => Trampoline::Off,
            None if sources.iter().any(|s| s != crate::NAME) => Trampoline::Agents,
            None => Trampoline::Off,
        };
        Ok(Self {
            sample_hz: k.sample_hz,
            kernel_stacks: k.kernel_stacks,
            offcpu: k.offcpu,
            offcpu_min_ns: k.offcpu_min_us.saturating_mul(1000),
            launch_probes: k.launch_probes,
            trampoline,
            launch_sample_every: k.launch_sample_every,
            launch_max_per_sec: k.launch_max_per_sec_per_thread,
            maps_scan_ms: k.maps_scan_ms,
            ring_buffer_bytes: k.ring_buffer_mib << 20,
            ustack_copy_bytes: k.ustack_copy_bytes,
            python: k.python,
            bpf_run_time: k.bpf_run_time,
        })
    }
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
        let schema = EbpfKeys::schema();
        assert!(schema.check_defaults().is_ok());
        for k in schema.keys() {
            let unset = k.name == "launch_stacks_from_trampoline";
            assert_eq!(k.default.is_none(), unset, "{}: only the trampoline key is unset by default", k.name);
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
        assert!(err("ring_buffer_mib = 3").contains("one of 1, 2, 4"));
        assert!(err("launch_probes = [\"a b\"]").contains("launch_probes"));
        assert!(err("sample_hz = 50000").contains("10000"));
    }
}
