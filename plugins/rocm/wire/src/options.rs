//! The `[source.rocm]` settings and the ROCm agent's own options, declared once in
//! [`AgentOpts`]: the `rocm` host plugin reads the struct from its table and writes it into
//! `XPUPROF_ROCM_OPTS` (after the options every agent takes), the agent reads it back.

use xpuprof_wire::opts::StackMode;

xpuprof_sdk::option_enum! {
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

xpuprof_sdk::backend_options! {
    /// The `[source.rocm]` table (the `#[host]` and `#[both]` fields) and the ROCm agent's
    /// options beside those every agent takes (the `#[both]` fields).
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct AgentOpts {
        #[host]
        /// path of libxpuprof_rocm_agent.so (unset: XPUPROF_ROCM_AGENT, else next to this plugin);
        /// as root it must be owned by root or the invoking user and not writable by others
        pub agent: Option<String> = None;
        #[both]
        /// tracing library: "auto", "rocprofiler-sdk" or "roctracer"
        pub api: ApiChoice = ApiChoice::Auto;
        #[host]
        /// where launch stacks come from
        pub launch_stacks: StackMode = StackMode::Agent;
        #[host]
        /// most frames per launch stack
        pub max_depth: u8 = 64, min(1);
        #[host]
        /// size of the tracing library's record buffer, KiB (records beyond it are dropped and counted)
        pub buffer_kib: u32 = 8192, min(64), max(1 << 20);
        #[both]
        /// kernel dispatches
        pub kernels: bool = true;
        #[both]
        /// memory copies
        pub copies: bool = true;
        #[both]
        /// memory allocations and frees (rocprofiler-sdk only)
        pub memory: bool = true;
        #[both]
        /// scratch memory allocations (rocprofiler-sdk only)
        pub scratch: bool = true;
        #[both]
        /// roctx markers and ranges
        pub markers: bool = true;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use xpuprof_wire::opts::{Opt, OptValue};

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
