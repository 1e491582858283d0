//! The agent's settings, read from the environment the host plugin prepared.
//!
//! - `XPUPROF_CUPTI_SOCKET`: Unix socket path of the host plugin.
//! - `XPUPROF_CUPTI_DUMP`: a directory; the stream is also written to `<dir>/cupti-<pid>.bin`
//!   (how fixtures are captured; works without a host).
//! - `XPUPROF_CUPTI_OPTS`: comma-separated `key=value` (see [`Config::parse_opts`]).

/// Which API records CUPTI writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ApiMode {
    /// Only launch-class calls.
    Launches,
    /// Every runtime and driver call (costly: about a microsecond per call).
    All,
    /// None.
    Off,
}

use xpuprof_agent_kit::opts::Common;
pub use xpuprof_agent_kit::opts::StackMode;

pub use crate::markers::Range;

/// What is left of CUPTI outside a capture window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dormancy {
    /// CUPTI detached (`cuptiFinalize`): nothing of it runs; the next window subscribes again.
    Finalize,
    /// CUPTI subscribed with every callback and record kind off (what `xpuprof_cupti_capture`
    /// does).
    Pause,
}

/// What the end of the first marker window does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RangeEnd {
    /// No more windows.
    Stop,
    /// Every later matching range opens one again.
    Repeat,
}

/// Agent settings.
#[derive(Debug, Clone)]
pub struct Config {
    /// Outputs, launch stacks, their depth, the buffer size, verbosity: what every agent takes.
    pub common: Common,
    /// Kernel records.
    pub kernels: bool,
    /// Memcpy records.
    pub memcpy: bool,
    /// Memset records.
    pub memset: bool,
    /// Synchronization records (off by default: CUPTI then adds about 0.4 µs to every launch).
    pub sync: bool,
    /// Memory allocation/free records.
    pub memory: bool,
    /// NVTX markers and ranges.
    pub nvtx: bool,
    /// Device and context records.
    pub devices: bool,
    /// CUPTI overhead records.
    pub overhead: bool,
    /// API records.
    pub api: ApiMode,
    /// Python frames in launch stacks (`python=auto|off`).
    pub python: bool,
    /// Also take callbacks on runtime-API launches. Off by default: every runtime launch runs
    /// through a driver launch call with the same correlation id, so the driver callbacks alone
    /// see every launch (runtime and driver API) at half the callback cost.
    pub runtime_callbacks: bool,
    /// Install the timestamp callback (CLOCK_MONOTONIC). Off only for measurements: GPU times
    /// then come in CUPTI's clock with paired samples.
    pub monotonic: bool,
    /// Launch timestamps from the TSC where the kernel's clock runs on it (converted to the
    /// session clock before sending); off: `clock_gettime` at every launch.
    pub tsc: bool,
    /// Measurement aid: take the launch callbacks but return at once (CUPTI's own callback
    /// cost, without the agent's work).
    pub callback_noop: bool,
    /// Start with no window open (`paused=1`): the host, or the program's markers, open one.
    pub paused: bool,
    /// The program's markers that open and close windows (`range=cuda-profiler-api` or
    /// `range=nvtx:MESSAGE[@DOMAIN]`, percent-encoded).
    pub range: Option<Range>,
    /// After the first marker window (`range_end=stop|repeat`).
    pub range_end: RangeEnd,
    /// Outside windows (`dormant=finalize|pause`).
    pub dormancy: Dormancy,
    /// Started by a late attach (`xpuprof attach`), not at `cuInit`: not an option.
    pub late: bool,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            common: Common::new(255),
            kernels: true,
            memcpy: true,
            memset: true,
            sync: false,
            memory: true,
            nvtx: true,
            devices: true,
            overhead: true,
            api: ApiMode::Launches,
            python: true,
            runtime_callbacks: false,
            monotonic: true,
            tsc: true,
            callback_noop: false,
            paused: false,
            range: None,
            range_end: RangeEnd::Stop,
            dormancy: Dormancy::Finalize,
            late: false,
        }
    }
}

impl Config {
    /// Reads the environment.
    pub fn from_env() -> Result<Self, String> {
        let mut c = Self::default();
        let opts = c.common.read_env("CUPTI");
        c.parse_opts(&opts)?;
        Ok(c)
    }

    /// Applies `key=value,...`: booleans `kernels memcpy memset sync memory nvtx devices
    /// overhead verbose runtime_callbacks monotonic tsc callback_noop paused` (0/1),
    /// `api=launches|all|off`, `stacks=agent|ebpf|both|off`, `depth=N`, `buffer_kib=N`,
    /// `range=cuda-profiler-api|nvtx:MESSAGE[@DOMAIN]` (percent-encoded), `range_end=stop|repeat`,
    /// `dormant=finalize|pause`.
    pub fn parse_opts(&mut self, opts: &str) -> Result<(), String> {
        const APIS: [ApiMode; 3] = [ApiMode::Launches, ApiMode::All, ApiMode::Off];
        for o in xpuprof_agent_kit::opts::parse(opts)? {
            if self.common.apply(&o)? {
                continue;
            }
            match o.key {
                "kernels" => self.kernels = o.flag()?,
                "memcpy" => self.memcpy = o.flag()?,
                "memset" => self.memset = o.flag()?,
                "sync" => self.sync = o.flag()?,
                "memory" => self.memory = o.flag()?,
                "nvtx" => self.nvtx = o.flag()?,
                "devices" => self.devices = o.flag()?,
                "overhead" => self.overhead = o.flag()?,
                "runtime_callbacks" => self.runtime_callbacks = o.flag()?,
                "monotonic" => self.monotonic = o.flag()?,
                "tsc" => self.tsc = o.flag()?,
                "callback_noop" => self.callback_noop = o.flag()?,
                "api" => self.api = APIS[o.one_of(&["launches", "all", "off"])?],
                "python" => self.python = o.one_of(&["auto", "off"])? == 0,
                "paused" => self.paused = o.flag()?,
                "range" => self.range = Some(Range::parse(&crate::markers::percent_decode(o.value))?),
                "range_end" => {
                    self.range_end = [RangeEnd::Stop, RangeEnd::Repeat][o.one_of(&["stop", "repeat"])?]
                }
                "dormant" => {
                    self.dormancy = [Dormancy::Finalize, Dormancy::Pause][o.one_of(&["finalize", "pause"])?]
                }
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
        c.parse_opts("api=all,stacks=both,nvtx=0,depth=300,buffer_kib=1024").unwrap();
        assert_eq!(c.api, ApiMode::All);
        assert_eq!(c.common.stacks, StackMode::Both);
        assert!(!c.nvtx);
        assert_eq!(c.common.max_depth, 300, "a depth within the kit's bound is kept");
        assert_eq!(c.common.buffer_bytes, 1 << 20);
        c.parse_opts("depth=5000").unwrap();
        assert_eq!(
            c.common.max_depth,
            xpuprof_agent_kit::wire::MAX_STACK_FRAMES,
            "deeper is cut to the bound"
        );
        assert!(c.parse_opts("api=some").unwrap_err().contains("api"));
        assert!(c.parse_opts("bogus=1").unwrap_err().contains("unknown option"));
        c.parse_opts("paused=1,range=nvtx:step%2C 5@train,range_end=repeat,dormant=pause").unwrap();
        assert!(c.paused);
        assert_eq!(c.range, Some(Range::Nvtx { message: "step, 5".into(), domain: Some("train".into()) }));
        assert_eq!((c.range_end, c.dormancy), (RangeEnd::Repeat, Dormancy::Pause));
        c.parse_opts("range=cuda-profiler-api").unwrap();
        assert_eq!(c.range, Some(Range::ProfilerApi));
        assert!(c.parse_opts("range=other").unwrap_err().contains("cuda-profiler-api"));
    }
}
