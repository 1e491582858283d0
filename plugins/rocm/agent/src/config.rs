//! The agent's settings, read from the environment the host plugin prepared.
//!
//! - `XPUPROF_ROCM_SOCKET`: Unix socket path of the host plugin.
//! - `XPUPROF_ROCM_DUMP`: a directory; the stream is also written to `<dir>/rocm-<pid>.bin`.
//! - `XPUPROF_ROCM_OPTS`: comma-separated `key=value` (see [`Config::parse_opts`]).

use xpuprof_agent_kit::opts::{self, Common};

pub use xpuprof_agent_kit::opts::StackMode;

/// Which tracing library to use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ApiChoice {
    /// rocprofiler-sdk when the runtime registers with `librocprofiler-register` (ROCm 6.2 and
    /// later), roctracer otherwise.
    Auto,
    /// rocprofiler-sdk only.
    Sdk,
    /// roctracer only.
    Roctracer,
}

/// Agent settings.
#[derive(Debug, Clone)]
pub struct Config {
    /// Outputs, launch stacks, their depth, the buffer size, verbosity: what every agent takes.
    pub common: Common,
    /// Tracing library.
    pub api: ApiChoice,
    /// Kernel dispatch records.
    pub kernels: bool,
    /// Memory copy records.
    pub copies: bool,
    /// Memory allocation records.
    pub memory: bool,
    /// Scratch memory records.
    pub scratch: bool,
    /// roctx markers and ranges.
    pub markers: bool,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            common: Common::new(64),
            api: ApiChoice::Auto,
            kernels: true,
            copies: true,
            memory: true,
            scratch: true,
            markers: true,
        }
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

    /// Applies `key=value,...`: booleans `kernels copies memory scratch markers verbose` (0/1),
    /// `api=auto|rocprofiler-sdk|roctracer`,
    /// `stacks=agent|ebpf|both|off`, `depth=N` (1 to 255), `buffer_kib=N` (64 to 1048576).
    pub fn parse_opts(&mut self, opts: &str) -> Result<(), String> {
        const APIS: [ApiChoice; 3] = [ApiChoice::Auto, ApiChoice::Sdk, ApiChoice::Roctracer];
        for o in opts::parse(opts)? {
            if self.common.apply(&o)? {
                continue;
            }
            match o.key {
                "kernels" => self.kernels = o.flag()?,
                "copies" => self.copies = o.flag()?,
                "memory" => self.memory = o.flag()?,
                "scratch" => self.scratch = o.flag()?,
                "markers" => self.markers = o.flag()?,
                "api" => self.api = APIS[o.one_of(&["auto", "rocprofiler-sdk", "roctracer"])?],
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
        c.parse_opts("stacks=both,markers=0,depth=300,buffer_kib=1024").unwrap();
        assert_eq!(c.common.stacks, StackMode::Both);
        assert!(!c.markers);
        assert_eq!(c.common.max_depth, 255);
        assert_eq!(c.common.buffer_bytes, 1 << 20);
        assert!(c
            .parse_opts("stacks=some")
            .unwrap_err()
            .contains("option stacks must be agent, ebpf, both, off"));
        assert!(c.parse_opts("bogus=1").unwrap_err().contains("unknown option"));
    }
}
