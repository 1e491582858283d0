//! The agent's settings, read from the environment the host plugin prepared.
//!
//! - `XPUPROF_CUPTI_SOCKET`: Unix socket path of the host plugin.
//! - `XPUPROF_CUPTI_DUMP`: a directory; the stream is also written to `<dir>/cupti-<pid>.bin`
//!   (how fixtures are captured; works without a host).
//! - `XPUPROF_CUPTI_OPTS`: comma-separated `key=value`: the options every agent takes and this
//!   backend's ([`CuptiOpts`]: record kinds, API records, Python frames, capture windows,
//!   measurement aids; declared once in `xpuprof-cupti-wire` for both ends).

use xpuprof_agent_kit::opts::AgentConfig;

pub use xpuprof_agent_kit::opts::{PythonMode, StackMode};
pub use xpuprof_cupti_wire::{Api, CuptiOpts, Dormancy, Range, RangeEnd};

/// Agent settings.
pub type Config = AgentConfig<CuptiOpts>;

/// Most frames per launch stack unless the options say otherwise.
pub const DEFAULT_DEPTH: usize = 255;

/// Reads the environment.
pub fn from_env() -> Result<Config, String> {
    Config::from_env("CUPTI", DEFAULT_DEPTH)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_options() {
        let mut c = Config::new(DEFAULT_DEPTH);
        // The kit's options beside CUPTI's (theirs, their bounds and an unknown key are the
        // kit's tests).
        c.parse_opts("api=all,stacks=both,nvtx=0").unwrap();
        assert_eq!((c.opts.api, c.common.stacks, c.opts.nvtx), (Api::All, StackMode::Both, false));
        assert!(c.parse_opts("api=some").unwrap_err().contains("api"));
        c.parse_opts("paused=1,range=nvtx:step%2C 5@train,range_end=repeat,dormant=pause,python=off")
            .unwrap();
        assert!(c.opts.paused);
        assert_eq!(
            c.opts.range,
            Some(Range::Nvtx { message: "step, 5".into(), domain: Some("train".into()) })
        );
        assert_eq!((c.opts.range_end, c.opts.dormant), (RangeEnd::Repeat, Dormancy::Pause));
        assert_eq!(c.opts.python, PythonMode::Off);
        c.parse_opts("range=cuda-profiler-api").unwrap();
        assert_eq!(c.opts.range, Some(Range::ProfilerApi));
        assert!(c.parse_opts("range=other").unwrap_err().contains("cuda-profiler-api"));
        c.parse_opts("range=").unwrap();
        assert_eq!(c.opts.range, None, "the host writes no range empty");
    }
}
