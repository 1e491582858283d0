//! `[source.cupti]` settings, declared once in [`Config`]; what the agent gets of them travels in
//! `XPUPROF_CUPTI_OPTS` ([`CuptiOpts`], declared once in `xpuprof-cupti-wire` for both ends).

pub use xpuprof_cupti_wire::Api;
use xpuprof_cupti_wire::CuptiOpts;
use xpuprof_sdk::config::TypedConfig;
use xpuprof_sdk::prelude::*;
use xpuprof_toolbox::agent_host::CompileFrames;
pub use xpuprof_toolbox::launch_stacks::LaunchStacks;
use xpuprof_toolbox::python::Python;
use xpuprof_wire::opts::{CommonOpts, PythonMode, StackMode};
use xpuprof_wire::MAX_STACK_FRAMES;

use crate::windows::Windows;

xpuprof_sdk::plugin_config! {
    /// The `[source.cupti]` table.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct Config {
        /// kernel executions (name, grid, block, registers, shared memory, graph ids)
        pub kernels: bool = true;
        /// memory copies, including peer-to-peer
        pub memcpy: bool = true;
        /// memory sets
        pub memset: bool = true;
        /// synchronization records (the stream or event of each wait); off by default as CUPTI then adds
        /// about 0.4 us to every launch (api = "launches" still records the sync calls and their stacks)
        pub sync: bool = false;
        /// device memory allocations and frees
        pub memory: bool = true;
        /// NVTX markers and ranges
        pub nvtx: bool = true;
        /// device and context descriptions
        pub devices: bool = true;
        /// CUPTI's own overhead
        pub overhead: bool = true;
        /// runtime/driver API records: "launches" (launch-class calls only), "all" (about 1 us per call), "off"
        pub api: Api = Api::Launches;
        /// who captures launch stacks: "agent" (no root needed), "ebpf" (uprobe on the trampoline), "both", "off"
        pub launch_stacks: LaunchStacks = LaunchStacks::Agent;
        /// most frames per launch stack, Python frames included (a PyTorch launch with its Python frames is 60-100 deep; deeper stacks lose their root frames)
        pub max_depth: u32 = 255, min(1), max(MAX_STACK_FRAMES as u32);
        /// Python frames in launch stacks: "auto" (where the process runs CPython 3.9-3.13, each eval-loop
        /// frame replaced by the Python functions it runs, shown as function (file.py:line)), "off"
        pub python: Python = Python::Auto;
        /// PC sampling with stall reasons: which instructions of each kernel the GPU was at and why its
        /// warps stalled, under the kernel's launch stack (profile.pc.folded, flamegraph.pc.svg, the
        /// summary's stall table, pprof's gpu_pc_samples); off by default
        pub pc_sampling: bool = false;
        /// PC sampling period as N in 2^N GPU cycles between samples on each SM (5 to 31); 0: CUPTI's
        /// default for the device
        pub pc_sampling_period: u8 = 0, max(31);
        /// the program's NVTX annotations as frames between each launch's call site and its kernel: XLA's
        /// operation ranges as [xla] <module>/<operation> (<its source line>), and what its compiler
        /// phases launch (autotuning) under [compile] and the Python line that triggered the compilation;
        /// needs nvtx and agent launch stacks
        pub annotations: bool = false;
        /// Python functions of compile-time work, FILE_SUFFIX:FUNCTION (a final * matches any rest): a
        /// launch stack holding one gets the [compile] frame (torch.compile's autotuning, JAX's compiler)
        pub compile_frames: Vec<String> = [
            "torch/_inductor/runtime/benchmarking.py:*",
            "torch/_inductor/select_algorithm.py:AlgorithmSelectorCache.benchmark*",
            "torch/_inductor/autotune_process.py:*",
            "torch/_inductor/runtime/triton_heuristics.py:CachingAutotuner.bench*",
            "torch/_inductor/runtime/triton_heuristics.py:CachingAutotuner.autotune*",
            "torch/_inductor/runtime/triton_heuristics.py:CachingAutotuner.coordinate_descent*",
            "triton/testing.py:do_bench*",
            "jax/_src/compiler.py:*"
        ];
        /// size of one CUPTI activity buffer in KiB
        pub buffer_kib: u32 = 8192, min(64), max(1 << 20);
        /// path of libxpuprof_cupti_agent.so (unset: XPUPROF_CUPTI_AGENT, else next to this plugin); as root
        /// it must be owned by root or the invoking user and not writable by others
        pub agent: Option<String> = None;
    }
}

/// The keys `[source.cupti]` accepts.
pub fn keys() -> Vec<ConfigKey> {
    Config::schema().into_keys()
}

impl Config {
    /// Reads and checks the settings.
    pub fn from_plugin(c: &PluginConfig) -> PluginResult<Self> {
        let config: Self = c.typed()?;
        config.compile_frames()?;
        if (1..5).contains(&config.pc_sampling_period) {
            return Err(PluginError::new(format!(
                "pc_sampling_period = {} is below CUPTI's shortest period (2^5 cycles): give 5 to 31, or 0 for CUPTI's default",
                config.pc_sampling_period
            )));
        }
        Ok(config)
    }

    /// The agent's options (`XPUPROF_CUPTI_OPTS`): those every agent takes, then this backend's
    /// ([`CuptiOpts`]) with the session's capture `windows`.
    pub fn agent_opts(&self, windows: &Windows) -> String {
        let stacks = StackMode::from_word(self.launch_stacks.as_str()).unwrap_or_default();
        let (depth, buffer_kib) = (self.max_depth as usize, self.buffer_kib as usize);
        let common = CommonOpts { stacks, depth, buffer_kib, verbose: false };
        let own = CuptiOpts {
            kernels: self.kernels,
            memcpy: self.memcpy,
            memset: self.memset,
            sync: self.sync,
            memory: self.memory,
            nvtx: self.nvtx,
            devices: self.devices,
            overhead: self.overhead,
            api: self.api,
            python: PythonMode::from_word(self.python.as_str()).unwrap_or_default(),
            paused: windows.paused,
            range: windows.range.clone(),
            range_end: windows.range_end,
            pc_sampling: self.pc_sampling,
            pc_sampling_period: u32::from(self.pc_sampling_period),
            annotations: self.annotations,
            ..CuptiOpts::default()
        };
        format!("{},{}", common.to_opts(), own.to_opts())
    }

    /// The functions of compile-time work ([`Config::compile_frames`]'s patterns, read).
    pub fn compile_frames(&self) -> PluginResult<CompileFrames> {
        CompileFrames::parse(&self.compile_frames)
            .map_err(|e| PluginError::new(format!("[source.cupti] compile_frames: {e}")))
    }

    /// Whether NVTX records are wanted.
    pub fn nvtx(&self) -> bool {
        self.nvtx
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_agent_options() {
        let c = Config::from_plugin(&PluginConfig::default()).unwrap();
        assert_eq!(
            c.agent_opts(&Windows::default()),
            "stacks=agent,depth=255,buffer_kib=8192,verbose=0,\
             kernels=1,memcpy=1,memset=1,sync=0,memory=1,nvtx=1,devices=1,overhead=1,api=launches,python=auto,\
             runtime_callbacks=0,monotonic=1,tsc=1,callback_noop=0,paused=0,range=,range_end=stop,dormant=finalize,pc_sampling=0,pc_sampling_period=0,annotations=0"
        );
        let c = Config::from_plugin(
            &PluginConfig::parse("nvtx = false\napi = \"all\"\nlaunch_stacks = \"both\"").unwrap(),
        )
        .unwrap();
        assert!(!c.nvtx());
        let o = c.agent_opts(&Windows::default());
        assert!(o.starts_with("stacks=both,") && o.contains(",nvtx=0,") && o.contains(",api=all,"), "{o}");
        assert!(c.compile_frames().unwrap().matches("do_bench (/x/triton/testing.py:3)"));
        let e =
            Config::from_plugin(&PluginConfig::parse("compile_frames = [\"x.py\"]").unwrap()).unwrap_err();
        assert!(e.0.contains("compile_frames") && e.0.contains("FILE_SUFFIX:FUNCTION"), "{e}");
        let e = Config::from_plugin(&PluginConfig::parse("api = \"some\"").unwrap()).unwrap_err();
        assert!(e.0.contains("api"), "{e}");
        let e = Config::from_plugin(&PluginConfig::parse("max_depth = 0").unwrap()).unwrap_err();
        assert!(e.0.contains("max_depth"), "{e}");
        // Up to the wire's bound (a stack's frame count is a u16 since protocol 2), not a byte's.
        let c = Config::from_plugin(&PluginConfig::parse("max_depth = 1024").unwrap()).unwrap();
        assert!(c.agent_opts(&Windows::default()).contains(",depth=1024,"));
        let e = Config::from_plugin(&PluginConfig::parse("max_depth = 1025").unwrap()).unwrap_err();
        assert!(e.0.contains("max_depth") && e.0.contains("1024"), "{e}");
        let e = Config::from_plugin(&PluginConfig::parse("buffer_kib = 1").unwrap()).unwrap_err();
        assert!(e.0.contains("between 64 and 1048576"), "{e}");
        let c =
            Config::from_plugin(&PluginConfig::parse("pc_sampling = true\npc_sampling_period = 18").unwrap())
                .unwrap();
        let o = c.agent_opts(&Windows::default());
        assert!(o.ends_with(",pc_sampling=1,pc_sampling_period=18,annotations=0"), "{o}");
        let e = Config::from_plugin(&PluginConfig::parse("pc_sampling_period = 4").unwrap()).unwrap_err();
        assert!(e.0.contains("5 to 31"), "{e}");
        let e = Config::from_plugin(&PluginConfig::parse("pc_sampling_period = 32").unwrap()).unwrap_err();
        assert!(e.0.contains("pc_sampling_period"), "{e}");
    }
}
