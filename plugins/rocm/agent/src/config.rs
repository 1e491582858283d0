//! The agent's settings, read from the environment the host plugin prepared.
//!
//! - `XPUPROF_ROCM_SOCKET`: Unix socket path of the host plugin.
//! - `XPUPROF_ROCM_DUMP`: a directory; the stream is also written to `<dir>/rocm-<pid>.bin`.
//! - `XPUPROF_ROCM_OPTS`: comma-separated `key=value`: the options every agent takes and this
//!   backend's ([`AgentOpts`], declared once in `xpuprof-rocm-wire` for both ends).

use xpuprof_agent_kit::opts::Common;

pub use xpuprof_agent_kit::opts::StackMode;
pub use xpuprof_rocm_wire::{AgentOpts, ApiChoice};

/// Agent settings.
#[derive(Debug, Clone)]
pub struct Config {
    /// Outputs, launch stacks, their depth, the buffer size, verbosity: what every agent takes.
    pub common: Common,
    /// This backend's options: tracing library, record kinds, markers.
    pub opts: AgentOpts,
}

impl Default for Config {
    fn default() -> Self {
        Self { common: Common::new(64), opts: AgentOpts::default() }
    }
}

impl Config {
    /// Reads the environment.
    pub fn from_env() -> Result<Self, String> {
        let mut c = Self::default();
        let opts = c.common.read_env("ROCM");
        c.parse_opts(&opts)?;
        Ok(c)
    }

    /// Applies `key=value,...`: the options every agent takes and [`AgentOpts`].
    pub fn parse_opts(&mut self, opts: &str) -> Result<(), String> {
        let own = &mut self.opts;
        self.common.parse_with(opts, |o| own.apply(o))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_options() {
        let mut c = Config::default();
        c.parse_opts("stacks=both,markers=0,depth=300,buffer_kib=1024,api=roctracer").unwrap();
        assert_eq!(c.common.stacks, StackMode::Both);
        assert!(!c.opts.markers);
        assert_eq!(c.opts.api, ApiChoice::Roctracer);
        assert_eq!(c.common.max_depth, 255);
        assert_eq!(c.common.buffer_bytes, 1 << 20);
        assert!(c
            .parse_opts("stacks=some")
            .unwrap_err()
            .contains("option stacks must be agent, ebpf, both, off"));
        assert!(c.parse_opts("bogus=1").unwrap_err().contains("unknown option"));
    }
}
