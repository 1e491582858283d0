//! The ROCm agent's own options, declared once: the `rocm` host plugin writes them into
//! `XPUPROF_ROCM_OPTS` from its `[source.rocm]` table (after the options every agent takes), the
//! agent reads them back.

xpuprof_wire::opt_enum! {
    /// Which tracing library the agent uses.
    pub enum ApiChoice {
        /// rocprofiler-sdk when the runtime registers with `librocprofiler-register` (ROCm 6.2
        /// and later), roctracer otherwise.
        Auto = "auto",
        /// rocprofiler-sdk only.
        Sdk = "rocprofiler-sdk",
        /// roctracer only.
        Roctracer = "roctracer",
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
