//! # xpuprof-toolbox: what sources, sinks and the host would otherwise each rebuild
//!
//! - [`normalise`]: process address → module (path + GNU build id) + file offset, from a
//!   process's memory maps (read from `/proc/<pid>/maps`, or sent by an in-target agent) with
//!   the one maps parser of `xpuprof-wire` and GNU build ids read with `object`.
//! - [`intern`]: emits each string, process, thread, module, frame and stack definition once and
//!   hands out its id, so a source numbers its definitions without bookkeeping of its own.
//! - [`defs`]: the definitions resolver for sinks: what the ids in events refer to.
//! - [`demangle`]: kernel and function names for people (Rust and Itanium C++), one implementation.
//! - [`printable`]: the one escaping of the target's strings (names) for terminals and tables.
//! - [`api_kind`]: what an API call does, from its name and a backend's table of name fragments.
//! - [`agent_host`]: the host side of an in-target agent (private socket, one reader per
//!   process, the decoder thread, finding and preloading the agent), for GPU sources.
//! - [`kernel_name`]: short kernel names for tables and frames, and the stable id that finds the
//!   full name again.
//! - [`procfs`]: a process's parent and command line, read from `/proc`.
//! - [`python`]: the `python = "auto" | "off"` switch and the Python frames of agents' stacks.
//! - [`python_frame`]: Python frame names (`function (file:line)`) read back, and their files
//!   shortened to the package for tables and flame graphs.
//! - [`collectives`]: which collective a device operation is on every rank of a job
//!   (communicator and sequence number), for the merge's clock alignment and the sinks.
//! - [`own_code`]: which frames are xpuprof's own code in the target (its agents), shown as one
//!   `[xpuprof]` frame by the outputs.
//! - [`timeline`]: what the timeline sinks share: launch flow ids, API calls held for their
//!   launch stack, device work put in start order for lanes.
//!
//! A sibling crate of the SDK rather than part of it: the SDK stays the small ABI contract a
//! third-party plugin builds in seconds, while these helpers pull in `object` and cpp_demangle,
//! which only the plugins that normalise addresses or show names need.

pub mod agent_host;
pub mod api_kind;
pub mod collectives;
pub mod defs;
pub mod demangle;
pub mod intern;
pub mod json_lines;
pub mod kernel_name;
pub mod normalise;
pub mod own_code;
pub mod printable;
pub mod procfs;
pub mod python;
pub mod python_frame;
pub mod shares;
pub mod timeline;

pub use defs::Definitions;
pub use intern::Interner;
pub use normalise::ModuleMap;
