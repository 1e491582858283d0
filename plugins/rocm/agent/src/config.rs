//! The agent's settings, read from the environment the host plugin prepared.
//!
//! - `XPUPROF_ROCM_SOCKET`: Unix socket path of the host plugin.
//! - `XPUPROF_ROCM_DUMP`: a directory; the stream is also written to `<dir>/rocm-<pid>.bin`.
//! - `XPUPROF_ROCM_OPTS`: comma-separated `key=value`: the options every agent takes and this
//!   backend's ([`AgentOpts`]: tracing library, record kinds, markers; declared once in
//!   `xpuprof-rocm-wire` for both ends).

use xpuprof_agent_kit::opts::AgentConfig;

pub use xpuprof_agent_kit::opts::StackMode;
pub use xpuprof_rocm_wire::{AgentOpts, ApiChoice};

/// Agent settings.
pub type Config = AgentConfig<AgentOpts>;

/// Reads the environment (stacks of 64 frames unless the options say otherwise).
pub fn from_env() -> Result<Config, String> {
    Config::from_env("ROCM", 64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_options() {
        // The kit's options beside ROCm's (theirs, their bounds and an unknown key are the kit's
        // tests).
        let mut c = Config::new(64);
        c.parse_opts("stacks=both,markers=0,api=roctracer").unwrap();
        assert_eq!(
            (c.opts.api, c.common.stacks, c.opts.markers),
            (ApiChoice::Roctracer, StackMode::Both, false)
        );
        assert!(c.parse_opts("api=other").unwrap_err().contains("api"));
    }
}
