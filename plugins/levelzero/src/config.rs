//! `[source.levelzero]` settings: every key is declared once, with the agent's options, in
//! `xpuprof-levelzero-wire`'s `AgentOpts` (for both ends), which is the host's [`Config`]; what
//! the agent gets of them travels in `XPUPROF_LEVELZERO_OPTS` (`Config::to_opts`).

use xpuprof_sdk::config::TypedConfig;
use xpuprof_sdk::prelude::*;

/// The `[source.levelzero]` table.
pub use xpuprof_levelzero_wire::AgentOpts as Config;

/// The keys `[source.levelzero]` accepts.
pub fn keys() -> Vec<ConfigKey> {
    Config::schema().into_keys()
}
