//! # `rocm`: the AMD GPU source (rocprofiler-sdk, roctracer on older ROCm)
//!
//! Two parts (docs/architecture.md): the in-target agent (`xpuprof-rocm-agent`) and this host plugin,
//! which
//!
//! - **prepare**: finds the agent next to this plugin, opens a Unix socket (the toolbox's
//!   agent host), and sets `ROCP_TOOL_LIBRARIES` (rocprofiler-sdk loads the agent as a tool),
//!   `HSA_TOOLS_LIB` (ROCr loads it on older ROCm, where the agent takes the roctracer path),
//!   `XPUPROF_ROCM_SOCKET` and `XPUPROF_ROCM_OPTS` for the target; children inherit them, so
//!   every ROCm process of the job connects;
//! - **start/stop**: accepts one connection per process and decodes each stream (`decode.rs`:
//!   agents, queues and HIP streams, launch sites, API calls, markers; `records.rs` for
//!   rocprofiler-sdk records, `activity.rs` for roctracer records), with the library's clock
//!   paired to the session clock for the host to convert, drops reported as losses, and
//!   correlation-id retirements passed to the host's correlator.
//!
//! `xpuprof doctor` says what a machine lacks (the HIP runtime, librocprofiler-register,
//! librocprofiler-sdk or roctracer, /dev/kfd) and what to install.
//!
//! The crate shows the plugin alone ([`Plugin`], [`Rocm`]); its modules stay private.

mod activity;
mod api_kind;
mod config;
mod decode;
mod machine;
mod records;
mod source;
mod stream;

pub use source::Rocm;

/// The plugin: the toolbox's agent-backed source with this backend.
pub type Plugin = xpuprof_toolbox::agent_host::AgentSource<Rocm>;

xpuprof_sdk::export_plugin!(source: Plugin);
