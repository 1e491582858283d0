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
//!   (`xpuprof-wire` framing and `xpuprof-cupti-wire`'s own message; `decode.rs` and `stream.rs`
//!   for launch sites and stacks, `activity.rs` for CUPTI records, read by record version
//!   through `record_offsets.rs`); `stop` waits for every connection to end.
//!
//! Everything is keyed by CUPTI's correlation id (`backend::CUDA`), so the host joins kernels
//! (all nodes of a graph launch too) to their launch site exactly; a replayed graph node is also
//! joined to the call that captured or added it (`graphs.rs`, the model's submission link).
//!
//! The crate shows what a host needs and what tests, benchmarks and examples drive: the plugin
//! ([`Plugin`], [`Cupti`]), the stream [`Decoder`] and the wire crates it reads ([`wire`],
//! [`cuda_wire`]); the modules stay private.

mod activity;
mod api_kind;
mod attach;
mod collective;
mod config;
mod decode;
mod devices;
mod follow;
mod graphs;
mod machine;
mod pc_sampling;
mod record_offsets;
mod source;
mod stream;
mod windows;

pub use xpuprof_cupti_wire as cuda_wire;
pub use xpuprof_wire as wire;

pub use decode::Decoder;
pub use source::Cupti;

/// The plugin: the toolbox's agent-backed source with this backend.
pub type Plugin = xpuprof_toolbox::agent_host::AgentSource<Cupti>;

xpuprof_sdk::export_plugin!(source: Plugin);
