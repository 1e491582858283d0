//! The agent's settings, read from the environment the host plugin prepared.
//!
//! - `XPUPROF_LEVELZERO_SOCKET`: Unix socket path of the host plugin.
//! - `XPUPROF_LEVELZERO_DUMP`: a directory; the stream is also written to `<dir>/ze-<pid>.bin`.
//! - `XPUPROF_LEVELZERO_OPTS`: comma-separated `key=value`: the options every agent takes and
//!   this backend's ([`AgentOpts`], declared once in the wire crate for both ends).

use xpuprof_agent_kit::opts::{Common, PythonMode};
use xpuprof_agent_kit::wire::levelzero::AgentOpts;

/// Agent settings: `Common::read_env("LEVELZERO")`, then [`Config::parse_opts`] on the options.
#[derive(Debug, Clone)]
pub struct Config {
    /// Outputs, launch stacks, their depth, verbosity: what every agent takes.
    pub common: Common,
    /// This backend's options.
    pub opts: AgentOpts,
}

impl Default for Config {
    fn default() -> Self {
        Self { common: Common::new(128), opts: AgentOpts::default() }
    }
}

impl Config {
    /// Applies `key=value,...`: the options every agent takes and [`AgentOpts`].
    pub fn parse_opts(&mut self, opts: &str) -> Result<(), String> {
        let own = &mut self.opts;
        self.common.parse_with(opts, |o| own.apply(o))
    }

    /// Python frames in launch stacks.
    pub fn python(&self) -> bool {
        self.opts.python != PythonMode::Off
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_options() {
        let mut c = Config::default();
        assert_eq!((c.python(), c.common.max_depth), (true, 128));
        c.parse_opts("python=off,depth=16").unwrap();
        assert_eq!((c.python(), c.common.max_depth), (false, 16));
        assert!(c.parse_opts("python=on").unwrap_err().contains("must be auto, off"));
        assert!(c.parse_opts("bogus=1").unwrap_err().contains("unknown option"));
    }
}
