//! The agent's settings, read from the environment the host plugin prepared.
//!
//! - `XPUPROF_LEVELZERO_SOCKET`: Unix socket path of the host plugin.
//! - `XPUPROF_LEVELZERO_DUMP`: a directory; the stream is also written to `<dir>/ze-<pid>.bin`.
//! - `XPUPROF_LEVELZERO_OPTS`: comma-separated `key=value`: the options every agent takes and
//!   this backend's ([`AgentOpts`], declared once in the wire crate for both ends).

use xpuprof_agent_kit::opts::AgentConfig;
pub use xpuprof_levelzero_wire::AgentOpts;

/// Agent settings.
pub type Config = AgentConfig<AgentOpts>;

/// Most frames of a launch stack, unless the options say otherwise.
pub const MAX_DEPTH: usize = 128;

#[cfg(test)]
mod tests {
    use xpuprof_agent_kit::opts::PythonMode;

    use super::*;

    #[test]
    fn parses_options() {
        let mut c = Config::new(MAX_DEPTH);
        assert_eq!((c.opts.python, c.common.max_depth), (PythonMode::Auto, 128));
        c.parse_opts("python=off,depth=16").unwrap();
        assert_eq!((c.opts.python, c.common.max_depth), (PythonMode::Off, 16));
        assert!(c.parse_opts("python=on").unwrap_err().contains("must be auto, off"));
        assert!(c.parse_opts("bogus=1").unwrap_err().contains("unknown option"));
    }
}
