//! The ROCm agent's own options, declared once: the `rocm` host plugin reads them from its
//! `[source.rocm]` table (the same [`ApiChoice`] is its config key's type) and writes them into
//! `XPUPROF_ROCM_OPTS` (after the options every agent takes), the agent reads them back.

use xpuprof_sdk::config::{ConfigValue, Value};
use xpuprof_wire::opts::{Opt, OptValue};

xpuprof_sdk::config_enum! {
    /// Which tracing library the agent uses.
    pub enum ApiChoice {
        /// rocprofiler-sdk where the HIP runtime registers with librocprofiler-register (ROCm 6.2
        /// and later), roctracer otherwise.
        Auto = "auto",
        /// rocprofiler-sdk 1.x only.
        RocprofilerSdk = "rocprofiler-sdk",
        /// roctracer only (ROCm before 6.2).
        Roctracer = "roctracer",
    }
}

impl OptValue for ApiChoice {
    fn write(&self) -> String {
        self.as_str().into()
    }

    fn read(o: &Opt<'_>) -> Result<Self, String> {
        let words: Vec<Value> = Self::allowed();
        let words: Vec<&str> = words.iter().filter_map(Value::as_str).collect();
        let word = words[o.one_of(&words)?];
        Self::from_toml(&Value::String(word.into())).ok_or_else(|| o.unknown())
    }
}

xpuprof_wire::agent_options! {
    /// The ROCm agent's options beside those every agent takes.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub struct AgentOpts {
        /// Tracing library.
        pub api: ApiChoice = ApiChoice::Auto;
        /// Kernel dispatch records.
        pub kernels: bool = true;
        /// Memory copy records.
        pub copies: bool = true;
        /// Memory allocation records.
        pub memory: bool = true;
        /// Scratch memory records.
        pub scratch: bool = true;
        /// roctx markers and ranges.
        pub markers: bool = true;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_the_host_writes_the_agent_reads_back() {
        let host = AgentOpts { api: ApiChoice::RocprofilerSdk, markers: false, ..Default::default() };
        let mut agent = AgentOpts::default();
        for o in xpuprof_wire::opts::parse(&host.to_opts()).unwrap() {
            assert_eq!(agent.apply(&o), Ok(true), "{}", o.key);
        }
        assert_eq!(agent, host);
        let bad = Opt { key: "api", value: "hip" };
        assert!(ApiChoice::read(&bad).unwrap_err().contains("must be auto, rocprofiler-sdk, roctracer"));
    }
}
