//! Options of the folded view (`[sink.folded]`, and the same keys in `[sink.flamegraph]`),
//! declared once: keys, types, defaults and documentation all come from [`FoldedOptions`].

use xpuprof_sdk::config::TypedConfig;
use xpuprof_sdk::{ConfigKey, PluginConfig, PluginError, PluginResult};

xpuprof_sdk::config_enum! {
    /// How kernel names are printed.
    pub enum KernelNames {
        /// As the host shows it (demangled unless the session's `demangle = false`).
        Full = "full",
        /// Qualified function name only: no template arguments, parameters or return type; a
        /// stable id (`#1a2b3c4d`) is added where two different kernels share a short name.
        Short = "short",
    }
}

xpuprof_sdk::config_enum! {
    /// Which stack work replayed from a recording (a CUDA graph, a Level Zero regular command
    /// list) sits under.
    pub enum GraphStacks {
        /// Where it was replayed (the graph launch), as for any launch.
        Replay = "replay",
        /// Where it was recorded (the node's capture or creation, the append).
        Capture = "capture",
        /// The replay stack, then a `[recorded at]` frame and the recording stack below it.
        Both = "both",
    }
}

xpuprof_sdk::config_enum! {
    /// Which frames the stacks show.
    pub enum Frames {
        /// The user's level: in stacks with Python frames, the interpreter's own native frames,
        /// the native frames outside the outermost Python frame (the interpreter's start-up) and
        /// Python frames of `fold_files` are folded away (counted in the tooltip of the frame
        /// they lead to); C++ names lose their parameter lists and are cut to `name_width`;
        /// Python paths are shortened to the package (`transformers/models/…/x.py:307`).
        User = "user",
        /// Every frame as the host named it.
        All = "all",
    }
}

xpuprof_sdk::plugin_config! {
    /// Options of the folded view.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct FoldedOptions {
        /// "short" (template arguments, parameters and return type dropped; a stable #id added where two kernels share a short name; the flame graph's tooltip and search keep the full name) or "full"
        pub kernel_names: KernelNames = KernelNames::Short;
        /// name the device in GPU frames: [GPU0_Kernel]
        pub gpu_device: bool = false;
        /// name the stream in GPU frames: [GPU0_S7_Kernel]
        pub gpu_stream: bool = false;
        /// drop stacks lighter than this many microseconds
        pub min_weight: u64 = 1;
        /// start every stack with a `command (pid)` frame
        pub process_frame: bool = false;
        /// include off-CPU samples under an [off-cpu] root frame
        pub off_cpu: bool = true;
        /// stacks of replayed graph work: "replay" (graph launch), "capture" (where each node was captured or added), or "both" (replay, then [recorded at], then capture)
        pub graph_stacks: GraphStacks = GraphStacks::Both;
        /// "user" (interpreter internals and call plumbing folded away, C++ names without parameter lists, short Python paths) or "all" (every frame as named)
        pub frames: Frames = Frames::User;
        /// Python files whose frames the "user" view folds away (a path ending): call plumbing and the frozen import machinery
        pub fold_files: Vec<String> = ["torch/nn/modules/module.py", "<frozen importlib._bootstrap>", "<frozen importlib._bootstrap_external>"];
        /// longest native frame name in the "user" view, in characters (longer ones are cut on the right)
        pub name_width: usize = 80, min(16);
        /// start every stack with a `thread name (tid)` frame (after the process frame)
        pub thread_frame: bool = false;
        /// start every stack of a process that is a rank of a job with a `[rank N]` root frame (before the process frame)
        pub rank_roots: bool = false;
    }
}

impl FoldedOptions {
    /// The configuration keys of the folded view, with their defaults.
    pub fn config_keys() -> Vec<ConfigKey> {
        Self::schema().into_keys()
    }

    /// Reads the options from a plugin's configuration (which may hold the sink's own keys too).
    pub fn from_config(c: &PluginConfig) -> PluginResult<Self> {
        Self::from_table_lenient(c.table()).map_err(|p| PluginError::new(p.to_string()))
    }
}
