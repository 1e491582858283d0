//! # xpuprof-agent-kit: the parts every in-target agent shares
//!
//! A GPU source is two halves (design §3): a host plugin, and an agent library the vendor runtime
//! loads into the profiled process (CUPTI through `CUDA_INJECTION64_PATH`, ROCm through its tool
//! library variable, Level Zero through its tracing layer plus a preload). This crate is what the
//! agents have in common, so a new backend writes only its vendor glue:
//!
//! - [`wire`]: the versioned stream to the host (re-exported `xpuprof-wire`; the host plugin's
//!   decoder reads the same crate).
//! - [`channel`]: the queue from the producing threads to one sender thread that writes the host
//!   socket and/or a dump file. Application threads never write to the socket; when the host is
//!   gone or the queue is full, output is dropped and counted ([`wire::MSG_LOST_BYTES`]).
//! - [`buffers`]: a pool of record buffers handed to the vendor library and back.
//! - [`launches`]: launch sites recorded at API entry on application threads (thread-local
//!   scratch, one lock per launch, stacks deduplicated per thread), drained as
//!   [`wire::MSG_LAUNCHES`].
//! - [`stack`]: the calling thread's stack walk ([`xpuprof_unwind`]: frame pointers where the
//!   code keeps them, the binaries' CFI where not; bounded by the thread's stack; the agent's
//!   own frames left out).
//! - [`timestamps`]: launch timestamps from the TSC where the kernel's clock runs on it,
//!   converted to the session clock before they leave the process.
//! - [`trampoline`]: the call of the exported no-op `xpuprof_agent_launch(backend, id, ip, sp,
//!   bp)` that the eBPF source probes to capture the same stack from the same start.
//! - [`annotations`]: frames the agent learns from the program's annotations (a compiled
//!   operation's name, compile-time work), put between a launch's call site and its device work.
//! - [`python`]: the launching thread's Python frames merged into its stack (`python = "auto"`).
//! - [`reuse`]: a launch's stack built from the thread's previous one where it still holds
//!   (checked word by word; `launch_reuse=off|check` for measurements).
//! - [`modules`]: this process's executable mappings, re-sent when a stack leaves them.
//! - [`control`]: the host's commands (capture on/off, detach) read from the agent's socket by an
//!   agent thread.
//! - [`exit`]: flush at `exit` and on SIGINT/SIGTERM, then let the program's own handling go on.
//! - [`discovery`]: find and load the vendor library that matches the process's runtime.
//! - [`opts`]: the `key=value,...` option string the host plugin passes in the environment.
//! - [`agent`]: [`AgentCore`], what every agent holds of the above (channel, launch registry,
//!   known modules, clock, own code, sender thread) with the stream's opening and last words.
//!
//! ## An agent in outline
//!
//! ```ignore
//! use xpuprof_agent_kit::channel::Outputs;
//! use xpuprof_agent_kit::opts::AgentConfig;
//! use xpuprof_agent_kit::{modules, stack, trampoline, wire, AgentCore};
//!
//! // Settings: outputs, the common options and the backend's own (declared once with
//! // `xpuprof_wire::agent_options!`, written by the host plugin).
//! let config = AgentConfig::<MyOpts>::from_env("MYGPU", 64)?;
//! let c = &config.common;
//! let outputs = Outputs::connect(c.socket.as_deref(), c.dump_dir.as_deref(), "mygpu")?;
//! // Channel, launch registry, clock; the agent's and the vendor library's code cut from stacks.
//! let own = modules::ranges_of(&[&modules::own_path().unwrap_or_default(), vendor_lib]);
//! let core = AgentCore::new("mygpu agent", c.buffer_bytes, own);
//! core.hello(&wire::Hello::new(runtime_version, wire::FLAG_AGENT_STACKS), &[]);
//! // ... keep `core` in the agent's static, then:
//! core.start_sender("xpuprof-mygpu-send", outputs, || { /* agent().core.drain_launches() */ })?;
//! xpuprof_agent_kit::exit::install(|| { /* flush the vendor library, agent().core.finish(timeout) */ });
//!
//! // API entry callback, on the application thread:
//! let regs = stack::registers();
//! let sites = core.sites(&config.common);
//! if let Some(start) = core.launches.enter(&sites, domain, api_id, correlation, regs) {
//!     trampoline::call(&start, backend, correlation as u64);
//! }
//! // API exit callback:
//! core.launches.exit(result);
//! ```
//!
//! The ROCm agent (`plugins/rocm/agent`) is a complete example; the CUPTI and Level Zero agents
//! (`plugins/cupti/agent`, `plugins/levelzero/agent`) hold the same [`AgentCore`].

pub mod agent;
pub mod annotations;
pub mod buffers;
pub mod channel;
pub mod control;
pub mod detail;
pub mod discovery;
pub mod exit;
pub mod launches;
pub mod modules;
pub mod opts;
pub mod python;
pub mod reuse;
pub mod stack;
pub mod timestamps;
pub mod trampoline;

pub use agent::AgentCore;
pub use xpuprof_wire as wire;

/// One line on stderr, prefixed with the agent's name and the process id so the user knows who
/// speaks (`xpuprof cupti agent (pid 42): ...`).
pub fn say(agent: &str, msg: &str) {
    eprintln!("xpuprof {agent} (pid {}): {msg}", std::process::id());
}
