//! The `[source.cupti]` settings and the CUPTI agent's own options, declared once in
//! [`CuptiOpts`]: the `cupti` host plugin reads the struct from its table, sets the session's
//! capture windows in it and writes it into `XPUPROF_CUPTI_OPTS` after the options every agent
//! takes; the agent reads it back.

use xpuprof_wire::opts::{Opt, OptValue, PythonMode, StackMode};
use xpuprof_wire::MAX_STACK_FRAMES;

xpuprof_sdk::option_enum! {
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

xpuprof_sdk::backend_options! {
    /// The `[source.cupti]` table (the `#[host]` and `#[both]` fields) and the CUPTI agent's
    /// options beside those every agent takes (the `#[both]` and `#[agent]` fields).
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct CuptiOpts {
        #[both]
        /// kernel executions (name, grid, block, registers, shared memory, graph ids)
        pub kernels: bool = true;
        #[both]
        /// memory copies, including peer-to-peer
        pub memcpy: bool = true;
        #[both]
        /// memory sets
        pub memset: bool = true;
        #[both]
        /// synchronization records (the stream or event of each wait); off by default as CUPTI then adds
        /// about 0.4 us to every launch (api = "launches" still records the sync calls and their stacks)
        pub sync: bool = false;
        #[both]
        /// device memory allocations and frees
        pub memory: bool = true;
        #[both]
        /// NVTX markers and ranges
        pub nvtx: bool = true;
        #[both]
        /// device and context descriptions
        pub devices: bool = true;
        #[both]
        /// CUPTI's own overhead
        pub overhead: bool = true;
        #[both]
        /// runtime/driver API records: "launches" (launch-class calls only), "all" (about 1 us per call), "off"
        pub api: Api = Api::Launches;
        #[host]
        /// who captures launch stacks: "agent" (no root needed), "ebpf" (uprobe on the trampoline), "both", "off"
        pub launch_stacks: StackMode = StackMode::Agent;
        #[host]
        /// most frames per launch stack, Python frames included (a PyTorch launch with its Python frames is 60-100 deep; deeper stacks lose their root frames)
        pub max_depth: u32 = 255, min(1), max(MAX_STACK_FRAMES as u32);
        #[both]
        /// Python frames in launch stacks: "auto" (where the process runs CPython 3.9-3.13, each eval-loop
        /// frame replaced by the Python functions it runs, shown as function (file.py:line)), "off"
        pub python: PythonMode = PythonMode::Auto;
        #[agent]
        /// Also take callbacks on runtime-API launches. Off by default: every runtime launch runs
        /// through a driver launch call with the same correlation id, so the driver callbacks alone
        /// see every launch (runtime and driver API) at half the callback cost.
        pub runtime_callbacks: bool = false;
        #[agent]
        /// Install the timestamp callback (CLOCK_MONOTONIC). Off only for measurements: GPU times
        /// then come in CUPTI's clock with paired samples.
        pub monotonic: bool = true;
        #[agent]
        /// Launch timestamps from the TSC where the kernel's clock runs on it (converted to the
        /// session clock before sending); off: `clock_gettime` at every launch.
        pub tsc: bool = true;
        #[agent]
        /// Measurement aid: take the launch callbacks but return at once (CUPTI's own callback
        /// cost, without the agent's work).
        pub callback_noop: bool = false;
        #[agent]
        /// Start with no window open: the host, or the program's markers, open one.
        pub paused: bool = false;
        #[agent]
        /// The program's markers that open and close windows (empty: none).
        pub range: Option<Range> = None;
        #[agent]
        /// After the first marker window.
        pub range_end: RangeEnd = RangeEnd::Stop;
        #[agent]
        /// Outside windows.
        pub dormant: Dormancy = Dormancy::Finalize;
        #[both]
        /// PC sampling with stall reasons: which instructions of each kernel the GPU was at and why its
        /// warps stalled, under the kernel's launch stack (profile.pc.folded, flamegraph.pc.svg, the
        /// summary's stall table, pprof's gpu_pc_samples); off by default
        pub pc_sampling: bool = false;
        #[both]
        /// PC sampling period as N in 2^N GPU cycles between samples on each SM (5 to 31; 16 keeps
        /// ResNet-18 training within 1.3x on the H200, docs/pc-sampling.md); 0: CUPTI's default
        /// for the device (2^11 on the H200: 1.37x)
        pub pc_sampling_period: u32 = 16, max(31);
        #[both]
        /// the program's NVTX annotations as frames between each launch's call site and its kernel: XLA's
        /// operation ranges as [xla] <module>/<operation> (<its source line>), and what its compiler
        /// phases launch (autotuning) under [compile] and the Python line that triggered the compilation;
        /// needs nvtx and agent launch stacks; only XLA's texts make frames, other ranges cost a read each
        pub annotations: bool = true;
        #[host]
        /// Python functions of compile-time work, FILE_SUFFIX:FUNCTION (a final * matches any rest): a
        /// launch stack holding one gets the [compile] frame (torch.compile's autotuning, JAX's compiler)
        pub compile_frames: Vec<String> = [
            "torch/_inductor/runtime/benchmarking.py:*",
            "torch/_inductor/select_algorithm.py:AlgorithmSelectorCache.benchmark*",
            "torch/_inductor/autotune_process.py:*",
            "torch/_inductor/runtime/triton_heuristics.py:CachingAutotuner.bench*",
            "torch/_inductor/runtime/triton_heuristics.py:CachingAutotuner.autotune*",
            "torch/_inductor/runtime/triton_heuristics.py:CachingAutotuner.coordinate_descent*",
            "torch/_inductor/scheduler.py:Scheduler.benchmark*",
            "torch/_inductor/scheduler.py:Scheduler.speedup_by_fusion*",
            "triton/testing.py:do_bench*",
            "jax/_src/compiler.py:*"
        ];
        #[host]
        /// size of one CUPTI activity buffer in KiB
        pub buffer_kib: u32 = 8192, min(64), max(1 << 20);
        #[host]
        /// path of libxpuprof_cupti_agent.so (unset: XPUPROF_CUPTI_AGENT, else next to this plugin); as root
        /// it must be owned by root or the invoking user and not writable by others
        pub agent: Option<String> = None;
        #[host]
        /// with pc_sampling: the sampled instructions' SASS text, from nvdisasm run by the host on each
        /// sampled cubin it holds (those with a line table) while recording, shown by the summary and
        /// pprof and kept by the archive; off, or nvdisasm not found: no instruction text (said once)
        pub pc_sampling_sass: bool = true;
        #[host]
        /// path of nvdisasm for pc_sampling_sass (unset: $CUDA_HOME/bin, $CUDA_PATH/bin,
        /// /usr/local/cuda/bin, then PATH)
        pub nvdisasm: Option<String> = None;
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
