//! The agent's settings, read from the environment the host plugin prepared.
//!
//! - `XPUPROF_LEVELZERO_SOCKET`: Unix socket path of the host plugin.
//! - `XPUPROF_LEVELZERO_DUMP`: a directory; the stream is also written to `<dir>/ze-<pid>.bin`.
//! - `XPUPROF_LEVELZERO_OPTS`: comma-separated `key=value` (see [`Config::parse_opts`]).

use xpuprof_agent_kit::opts::{self, Common};

/// Agent settings: `Common::read_env("LEVELZERO")`, then [`Config::parse_opts`] on the options.
#[derive(Debug, Clone)]
pub struct Config {
    /// Outputs, launch stacks, their depth, verbosity: what every agent takes.
    pub common: Common,
    /// Python frames in launch stacks.
    pub python: bool,
}

impl Default for Config {
    fn default() -> Self {
        Self { common: Common::new(128), python: true }
    }
}

impl Config {
    /// Applies `key=value,...`: `python=auto|off`, and the options every agent takes
    /// (`stacks`, `depth`, `buffer_kib`, `verbose`).
    pub fn parse_opts(&mut self, opts: &str) -> Result<(), String> {
        for o in opts::parse(opts)? {
            if self.common.apply(&o)? {
                continue;
            }
            match o.key {
                "python" => self.python = o.one_of(&["auto", "off"])? == 0,
                _ => return Err(o.unknown()),
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_options() {
        let mut c = Config::default();
        assert_eq!((c.python, c.common.max_depth), (true, 128));
        c.parse_opts("python=off,depth=16").unwrap();
        assert_eq!((c.python, c.common.max_depth), (false, 16));
        assert!(c.parse_opts("python=on").unwrap_err().contains("must be auto, off"));
        assert!(c.parse_opts("bogus=1").unwrap_err().contains("unknown option"));
    }
}
