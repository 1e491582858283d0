//! `[source.cupti]` settings.

use xpuprof_sdk::prelude::*;

/// The plugin's settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// Switchable record kinds, in the agent's option names.
    pub kinds: Vec<(&'static str, bool)>,
    /// `launches`, `all` or `off`.
    pub api: String,
    /// `agent`, `ebpf`, `both` or `off`.
    pub launch_stacks: String,
    /// Most frames per launch stack.
    pub max_depth: i64,
    /// Size of one CUPTI activity buffer, KiB.
    pub buffer_kib: i64,
    /// Agent library path ("" = next to this plugin).
    pub agent: String,
}

/// Record kinds: name, default, description.
const KINDS: [(&str, bool, &str); 8] = [
    ("kernels", true, "kernel executions (name, grid, block, registers, shared memory, graph ids)"),
    ("memcpy", true, "memory copies, including peer-to-peer"),
    ("memset", true, "memory sets"),
    (
        "sync",
        false,
        "synchronization records (the stream or event of each wait); off by default as CUPTI then adds \
         about 0.4 us to every launch (api = \"launches\" still records the sync calls and their stacks)",
    ),
    ("memory", true, "device memory allocations and frees"),
    ("nvtx", true, "NVTX markers and ranges"),
    ("devices", true, "device and context descriptions"),
    ("overhead", true, "CUPTI's own overhead"),
];

/// The keys `[source.cupti]` accepts.
pub fn keys() -> Vec<ConfigKey> {
    let mut k: Vec<ConfigKey> = KINDS
        .iter()
        .map(|(n, on, d)| ConfigKey::new(n, ConfigType::Bool, if *on { "true" } else { "false" }, d))
        .collect();
    k.push(ConfigKey::new(
        "api",
        ConfigType::String,
        "\"launches\"",
        "runtime/driver API records: \"launches\" (launch-class calls only), \"all\" (about 1 us per call), \"off\"",
    ));
    k.push(ConfigKey::new(
        "launch_stacks",
        ConfigType::String,
        "\"agent\"",
        "who captures launch stacks: \"agent\" (no root needed), \"ebpf\" (uprobe on the trampoline), \"both\", \"off\"",
    ));
    k.push(ConfigKey::new("max_depth", ConfigType::Integer, "64", "most frames per launch stack (1-255)"));
    k.push(ConfigKey::new(
        "buffer_kib",
        ConfigType::Integer,
        "8192",
        "size of one CUPTI activity buffer in KiB",
    ));
    k.push(ConfigKey::new(
        "agent",
        ConfigType::String,
        "\"\"",
        "path of libxpuprof_cupti_agent.so (default: next to this plugin)",
    ));
    k
}

impl Config {
    /// Reads and checks the settings.
    pub fn from_plugin(c: &PluginConfig) -> PluginResult<Self> {
        let mut kinds = Vec::new();
        for (n, on, _) in KINDS {
            kinds.push((n, c.bool(n, on)?));
        }
        let cfg = Self {
            kinds,
            api: c.choice("api", &["launches", "all", "off"], "launches")?,
            launch_stacks: c.choice("launch_stacks", &["agent", "ebpf", "both", "off"], "agent")?,
            max_depth: c.integer("max_depth", 64)?,
            buffer_kib: c.integer("buffer_kib", 8192)?,
            agent: c.string("agent", "")?,
        };
        if !(1..=255).contains(&cfg.max_depth) {
            return Err(PluginError::new(format!(
                "config key `max_depth` must be 1 to 255, got {}",
                cfg.max_depth
            )));
        }
        if !(64..=1 << 20).contains(&cfg.buffer_kib) {
            return Err(PluginError::new(format!(
                "config key `buffer_kib` must be 64 to 1048576, got {}",
                cfg.buffer_kib
            )));
        }
        Ok(cfg)
    }

    /// The agent's `XPUPROF_CUPTI_OPTS`.
    pub fn agent_opts(&self) -> String {
        let mut v: Vec<String> = self.kinds.iter().map(|(n, on)| format!("{n}={}", u8::from(*on))).collect();
        v.push(format!("api={}", self.api));
        v.push(format!("stacks={}", self.launch_stacks));
        v.push(format!("depth={}", self.max_depth));
        v.push(format!("buffer_kib={}", self.buffer_kib));
        v.join(",")
    }

    /// Whether NVTX records are wanted.
    pub fn nvtx(&self) -> bool {
        self.kinds.iter().any(|(n, on)| *n == "nvtx" && *on)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_agent_options() {
        let c = Config::from_plugin(&PluginConfig::default()).unwrap();
        assert_eq!(
            c.agent_opts(),
            "kernels=1,memcpy=1,memset=1,sync=0,memory=1,nvtx=1,devices=1,overhead=1,api=launches,stacks=agent,depth=64,buffer_kib=8192"
        );
        let c = Config::from_plugin(
            &PluginConfig::parse("nvtx = false\napi = \"all\"\nlaunch_stacks = \"both\"").unwrap(),
        )
        .unwrap();
        assert!(!c.nvtx());
        assert!(c.agent_opts().contains("api=all,stacks=both"));
        let e = Config::from_plugin(&PluginConfig::parse("api = \"some\"").unwrap()).unwrap_err();
        assert!(e.0.contains("api"), "{e}");
        let e = Config::from_plugin(&PluginConfig::parse("max_depth = 0").unwrap()).unwrap_err();
        assert!(e.0.contains("max_depth"), "{e}");
    }
}
