//! The CUPTI agent's own options, declared once: the `cupti` host plugin fills them from its
//! `[source.cupti]` table (the same [`Api`] is its config key's type) and the session's capture
//! windows, and writes them into `XPUPROF_CUPTI_OPTS` after the options every agent takes; the
//! agent reads them back.

use xpuprof_sdk::config::{ConfigValue, Value};
use xpuprof_wire::opts::{Opt, OptValue, PythonMode};

xpuprof_sdk::config_enum! {
    /// Which runtime/driver API calls are recorded.
    pub enum Api {
        /// Launch-class calls only (timed by the launch callbacks: no CUPTI API records).
        Launches = "launches",
        /// Every call (CUPTI's API records: about 1 us each).
        All = "all",
        /// None.
        Off = "off",
    }
}

impl OptValue for Api {
    fn write(&self) -> String {
        self.as_str().into()
    }

    fn read(o: &Opt<'_>) -> Result<Self, String> {
        let allowed = Self::allowed();
        let words: Vec<&str> = allowed.iter().filter_map(Value::as_str).collect();
        o.one_of(&words)?;
        Self::from_toml(&Value::String(o.value.into())).ok_or_else(|| o.unknown())
    }
}

xpuprof_wire::opt_enum! {
    /// What the end of the first marker window does.
    pub enum RangeEnd {
        /// No more windows.
        Stop = "stop",
        /// Every later matching range opens one again.
        Repeat = "repeat",
    }
}

xpuprof_wire::opt_enum! {
    /// What is left of CUPTI outside a capture window.
    pub enum Dormancy {
        /// CUPTI detached (`cuptiFinalize`): nothing of it runs; the next window subscribes again.
        Finalize = "finalize",
        /// CUPTI subscribed with every callback and record kind off (what `xpuprof_cupti_capture`
        /// does).
        Pause = "pause",
    }
}

/// The program's markers that open and close capture windows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Range {
    /// `cuProfilerStart` / `cuProfilerStop`.
    ProfilerApi,
    /// NVTX ranges with this message, in this domain (`None`: the default domain).
    Nvtx {
        /// The range's message.
        message: String,
        /// The domain's name.
        domain: Option<String>,
    },
}

impl Range {
    /// Reads `cuda-profiler-api` or `nvtx:MESSAGE[@DOMAIN]`.
    pub fn parse(text: &str) -> Result<Self, String> {
        if text == "cuda-profiler-api" {
            return Ok(Self::ProfilerApi);
        }
        let Some(spec) = text.strip_prefix("nvtx:").filter(|s| !s.is_empty()) else {
            return Err(format!(
                "option range must be cuda-profiler-api or nvtx:MESSAGE[@DOMAIN], got `{text}`"
            ));
        };
        Ok(match spec.rsplit_once('@') {
            Some((m, d)) if !d.is_empty() => Self::Nvtx { message: m.to_owned(), domain: Some(d.to_owned()) },
            _ => Self::Nvtx { message: spec.to_owned(), domain: None },
        })
    }

    /// The range as the user writes it ([`Range::parse`] reads it back).
    pub fn text(&self) -> String {
        match self {
            Self::ProfilerApi => "cuda-profiler-api".into(),
            Self::Nvtx { message, domain: None } => format!("nvtx:{message}"),
            Self::Nvtx { message, domain: Some(d) } => format!("nvtx:{message}@{d}"),
        }
    }
}

/// Written percent-encoded (`%`, `,` and `=` as `%XX`: option values hold no `,` or `=`).
impl OptValue for Range {
    fn write(&self) -> String {
        let mut out = String::new();
        for c in self.text().chars() {
            match c {
                '%' | ',' | '=' => out.push_str(&format!("%{:02X}", c as u32)),
                c => out.push(c),
            }
        }
        out
    }

    fn read(o: &Opt<'_>) -> Result<Self, String> {
        Self::parse(&percent_decode(o.value))
    }
}

/// Undoes the `%XX` escapes of [`Range`]'s written form.
fn percent_decode(v: &str) -> String {
    let b = v.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = b
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (b[i], hex) {
            (b'%', Some(x)) => {
                out.push(x);
                i += 3;
            }
            (c, _) => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

xpuprof_wire::agent_options! {
    /// The CUPTI agent's options beside those every agent takes.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct CuptiOpts {
        /// Kernel records.
        pub kernels: bool = true;
        /// Memcpy records.
        pub memcpy: bool = true;
        /// Memset records.
        pub memset: bool = true;
        /// Synchronization records (off by default: CUPTI then adds about 0.4 µs to every launch).
        pub sync: bool = false;
        /// Memory allocation/free records.
        pub memory: bool = true;
        /// NVTX markers and ranges.
        pub nvtx: bool = true;
        /// Device and context records.
        pub devices: bool = true;
        /// CUPTI overhead records.
        pub overhead: bool = true;
        /// API records.
        pub api: Api = Api::Launches;
        /// Python frames in launch stacks.
        pub python: PythonMode = PythonMode::Auto;
        /// Also take callbacks on runtime-API launches. Off by default: every runtime launch runs
        /// through a driver launch call with the same correlation id, so the driver callbacks alone
        /// see every launch (runtime and driver API) at half the callback cost.
        pub runtime_callbacks: bool = false;
        /// Install the timestamp callback (CLOCK_MONOTONIC). Off only for measurements: GPU times
        /// then come in CUPTI's clock with paired samples.
        pub monotonic: bool = true;
        /// Launch timestamps from the TSC where the kernel's clock runs on it (converted to the
        /// session clock before sending); off: `clock_gettime` at every launch.
        pub tsc: bool = true;
        /// Measurement aid: take the launch callbacks but return at once (CUPTI's own callback
        /// cost, without the agent's work).
        pub callback_noop: bool = false;
        /// Start with no window open: the host, or the program's markers, open one.
        pub paused: bool = false;
        /// The program's markers that open and close windows (empty: none).
        pub range: Option<Range> = None;
        /// After the first marker window.
        pub range_end: RangeEnd = RangeEnd::Stop;
        /// Outside windows.
        pub dormant: Dormancy = Dormancy::Finalize;
        /// PC sampling with stall reasons (CUPTI's PC sampling API, continuous collection).
        pub pc_sampling: bool = false;
        /// PC sampling period: 2^N GPU cycles between samples on each SM, N from 5 to 31; 0:
        /// CUPTI's default for the device (set by its SM count).
        pub pc_sampling_period: u32 = 0;
        /// The program's NVTX annotation ranges as frames between each launch's call site and
        /// its kernel (XLA's operations), its compiler phases' launches marked compile-time.
        pub annotations: bool = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use xpuprof_wire::opts::parse;

    fn read(opts: &str) -> Result<CuptiOpts, String> {
        let mut c = CuptiOpts::default();
        for o in parse(opts)? {
            if !c.apply(&o)? {
                return Err(o.unknown());
            }
        }
        Ok(c)
    }

    #[test]
    fn what_the_host_writes_the_agent_reads_back() {
        let host = CuptiOpts {
            api: Api::All,
            nvtx: false,
            python: PythonMode::Off,
            paused: true,
            range: Some(Range::Nvtx { message: "step, 5=x%".into(), domain: Some("train".into()) }),
            range_end: RangeEnd::Repeat,
            dormant: Dormancy::Pause,
            ..Default::default()
        };
        let text = host.to_opts();
        assert!(text.contains(",range=nvtx:step%2C 5%3Dx%25@train,range_end=repeat,"), "{text}");
        assert_eq!(read(&text), Ok(host));
        let none = CuptiOpts::default().to_opts();
        assert!(none.contains(",range=,"), "{none}");
        assert_eq!(read(&none), Ok(CuptiOpts::default()));
    }

    #[test]
    fn bad_values_are_named() {
        assert!(read("api=some").unwrap_err().contains("option api must be launches, all, off"));
        assert!(read("range=other").unwrap_err().contains("cuda-profiler-api"));
        assert!(read("range_end=again").unwrap_err().contains("stop, repeat"));
        assert!(read("dormant=x").unwrap_err().contains("finalize, pause"));
        assert_eq!(read("range=cuda-profiler-api").unwrap().range, Some(Range::ProfilerApi));
        assert_eq!(
            read("range=nvtx:a@").unwrap().range,
            Some(Range::Nvtx { message: "a@".into(), domain: None }),
            "an empty domain is part of the message"
        );
        assert_eq!(percent_decode("a%2Cb%3Dc%25%zz"), "a,b=c%%zz");
        assert_eq!(
            Range::parse("nvtx:a@b@dom"),
            Ok(Range::Nvtx { message: "a@b".into(), domain: Some("dom".into()) })
        );
        assert_eq!(Range::parse("nvtx:step"), Ok(Range::Nvtx { message: "step".into(), domain: None }));
        assert!(Range::parse("nvtx:").is_err());
    }
}
