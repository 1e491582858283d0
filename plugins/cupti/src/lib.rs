//! # `cupti`: the NVIDIA GPU source (CUDA's reference backend)
//!
//! Two parts (docs/architecture.md): the in-target agent (`xpuprof-cupti-agent`, injected with
//! `CUDA_INJECTION64_PATH`) and this host plugin, which
//!
//! - **prepare**: finds the agent next to this plugin, opens a Unix socket, and sets
//!   `CUDA_INJECTION64_PATH`, `NVTX_INJECTION64_PATH`, `XPUPROF_CUPTI_SOCKET` and
//!   `XPUPROF_CUPTI_OPTS` for the target (children inherit them, so every CUDA process of the
//!   job connects);
//! - **start/stop**: accepts one connection per CUDA process and decodes each stream
//!   ([`wire`] framing, [`decode`] for launch sites and stacks, [`activity`] for CUPTI records,
//!   by record version via [`layout`]); `stop` waits for every connection to end.
//!
//! Everything is keyed by CUPTI's correlation id (`backend::CUDA`), so the host joins kernels
//! (all nodes of a graph launch too) to their launch site exactly; a replayed graph node is also
//! joined to the call that captured or added it ([`graphs`], the model's submission link).

pub mod activity;
pub mod api_kind;
mod attach;
mod collective;
pub mod config;
pub mod decode;
pub mod graphs;
pub mod layout;
mod machine;
pub mod source;
mod stream;
mod windows;

pub use xpuprof_wire as wire;

pub use source::Cupti;

/// The plugin: the toolbox's agent-backed source with this backend.
pub type Plugin = xpuprof_toolbox::agent_host::AgentSource<Cupti>;

xpuprof_sdk::export_plugin!(source: Plugin);
