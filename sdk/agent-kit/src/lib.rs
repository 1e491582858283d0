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
//! - [`python`]: the launching thread's Python frames merged into its stack (`python = "auto"`).
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
//! use xpuprof_agent_kit::channel::{Channel, Chunk, Outputs};
//! use xpuprof_agent_kit::{launches, modules, stack, trampoline, wire};
//!
//! // Start: connect, say hello with the module map, run the sender thread.
//! let socket = std::env::var("XPUPROF_ZE_SOCKET").ok();
//! let outputs = Outputs::connect(socket.as_deref(), None, "ze")?;
//! let ch = Arc::new(Channel::new("level zero agent", 1 << 20));
//! let known = modules::Known::default();
//! let mut first = Vec::new();
//! wire::Hello::new(runtime_version, wire::FLAG_AGENT_STACKS).encode(&mut first);
//! first.extend_from_slice(&known.refresh());
//! ch.push(Chunk::Bytes(first));
//! std::thread::spawn(move || ch.run(outputs, || { /* drain launches every 100 ms */ }));
//! xpuprof_agent_kit::exit::install(|| { /* drain, put_lost, MSG_BYE, close, wait */ });
//!
//! // API entry callback, on the application thread:
//! let regs = stack::registers();
//! if let Some(start) = registry.enter(&sites, domain, api_id, correlation, regs) {
//!     trampoline::call(&start, backend, correlation as u64);
//! }
//! // API exit callback:
//! registry.exit(result);
//! ```
//!
//! The CUPTI agent (`plugins/cupti/agent`) is the complete example.

pub mod agent;
pub mod buffers;
pub mod channel;
pub mod control;
pub mod discovery;
pub mod exit;
pub mod launches;
pub mod modules;
pub mod opts;
pub mod python;
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
