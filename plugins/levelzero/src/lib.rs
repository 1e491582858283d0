//! # `levelzero`: the Intel GPU source (Level Zero)
//!
//! Two parts (docs/architecture.md): the in-target agent (`xpuprof-levelzero-agent`, preloaded, on the
//! loader's tracing layer) and this host plugin, which
//!
//! - **prepare**: finds the agent next to this plugin, opens a Unix socket, and sets
//!   `LD_PRELOAD` (the agent, ahead of any existing preload), `ZE_ENABLE_TRACING_LAYER=1` and
//!   `XPUPROF_LEVELZERO_SOCKET` for the target; children inherit them, so every Level Zero
//!   process of the job connects;
//! - **start/stop**: accepts one connection per process (the toolbox's `agent_host`) and
//!   decodes each stream (`decode.rs`: queues and immediate lists, API calls with their kind,
//!   launch stacks, device work, losses); each device and sub-device (`devices.rs`) has its own
//!   clock domain, in whose ticks device work stays: the host unwraps and converts them.
//!
//! Correlation ids are the agent's own (`backend::LEVEL_ZERO`): the host joins every kernel
//! and copy to the call that launched it (the append on an immediate list, the execute for a
//! regular list, with a `Submission` naming the list and the append that recorded the work)
//! exactly. `machine.rs` says what a machine lacks.
//!
//! The crate shows the plugin alone ([`Plugin`], [`LevelZero`]); its modules stay private.

mod config;
mod decode;
mod devices;
mod machine;
mod source;
mod stream;

pub use source::LevelZero;

/// The plugin: the toolbox's agent-backed source with this backend.
pub type Plugin = xpuprof_toolbox::agent_host::AgentSource<LevelZero>;

xpuprof_sdk::export_plugin!(source: Plugin);
