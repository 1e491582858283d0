//! # `pprof` sink
//!
//! Writes `<out>/profile.pb.gz`: a gzipped pprof `profile.proto` that `go tool pprof`,
//! Pyroscope, Parca and Grafana read. GPU device time is attributed to the CPU stack that
//! launched the work (then the launch API and a `[GPU_Kernel]<name>` leaf), CPU samples to their
//! stacks, as separate sample types (`gpu_time`, `gpu_ops`, `cpu_time`, ...: only those with
//! data), with labels for process, thread, device, stream and kernel. Python frames are
//! functions with their file and line, the executable is the first mapping. Samples are merged by stack and
//! labels while the session runs; the file is written at the end. `docs/formats.md` describes
//! it.

mod builder;
pub mod config;
mod defs;
mod names;
mod profile;
pub mod proto;
mod sink;

pub use config::ProfileOptions;
pub use sink::{PprofSink, FILE_NAME};

xpuprof_sdk::export_plugin!(sink: PprofSink);
