//! # xpuprof-core: the xpuprof host
//!
//! The small core that every profile goes through (docs/architecture.md, "Design principles"):
//!
//! - [`host`]: finds plugin libraries, loads them through the SDK's ABI with layout and version
//!   checks, and wraps live instances;
//! - [`config`]: the strict `xpuprof.toml` with file/line/column errors, and validation of each
//!   plugin's table against the keys it declares;
//! - [`target`] and [`signals`]: the profiled command, held before `exec` until the sources are
//!   attached, its exit code, Ctrl+C forwarding;
//! - [`pipeline`]: session-wide interning, clock conversion, symbolization (blazesym) and the
//!   exact-key correlator, streaming records to the sinks as they become final;
//! - [`session`]: the recording lifecycle; [`report`]: replay of an archive through any sinks;
//!   [`merge`]: the recordings of several hosts replayed as one job; [`ranks`]: ranks as labels;
//! - [`window`], [`trigger`], [`attach`], [`continuous`]: capture windows (by time, on request,
//!   at the program's markers), `xpuprof attach PID` and continuous mode;
//! - [`doctor`], [`summary`], [`diff`]: what the CLI prints.
//!
//! The `xpuprof` binary only turns command-line arguments into the plain option structs here.

// A closed stderr must never abort a session: print through `say!` (see `term`).
#![deny(clippy::print_stderr)]

pub mod agent_dump;
pub mod attach;
pub mod check;
pub mod config;
pub mod continuous;
pub mod diff;
pub mod doctor;
pub mod host;
pub mod merge;
pub mod newplugin;
pub mod outdir;
pub mod overrides;
pub mod pipeline;
pub mod ranks;
pub mod report;
pub mod runas;
pub mod session;
pub mod signals;
pub mod summary;
pub mod target;
pub mod term;
pub mod trigger;
pub mod window;
