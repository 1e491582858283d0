//! # xpuprof sink `summary`: the statistics report and the input of `xpuprof diff`
//!
//! `xpuprof --sink summary -- CMD` (the default sink when none is given) writes two files into
//! the output directory and prints a five-line digest to stderr when the run ends (totals, GPU
//! busy share and the launch-bound verdict, the top lines of the user's Python code or top
//! kernels or CPU functions, losses and xpuprof's own CPU share, memory left allocated and where
//! the report is):
//!
//! - `summary.txt`: aligned tables for a terminal (at most `text_rows` rows each);
//! - `summary.json`: the same report, complete, in a versioned schema ([`SCHEMA_VERSION`],
//!   documented field by field in `SCHEMA.md` next to this crate's `Cargo.toml`) that
//!   `xpuprof diff BASE CURRENT` compares to gate CI on regressions.
//!
//! ## What it reports
//!
//! `summary.txt` answers the first questions first: how busy each device was (and, for the
//! largest idle gaps, what the CPU did before), whether launching kept it idle, which lines and
//! `nn.Module`s of the user's Python code the GPU time comes from, forward against backward,
//! then kernels, launch sites and the rest.
//!
//! | Section | From | Content |
//! |---|---|---|
//! | `devices` | kernels, `CpuSample`, `CaptureWindow` | per device: kernel busy time (the exact union of kernel intervals, [`union`]) over session time and per capture window, idle gaps ≥ `idle_gap_threshold_us`, the five largest with the user's CPU sample taken last before each (samples in xpuprof's own code passed over and counted apart, `xpuprof_samples_before`) |
//! | `launch_bound` | `ApiCall`, kernels | per device: launch-bound, GPU-bound or neither, with launch API time against GPU busy time, launches per second ([`launch_bound`]) |
//! | `python` | launch stacks with Python frames | GPU time by the innermost line of the user's code, by `nn.Module` class (innermost and anywhere on the stack), forward against backward ([`gpu_time`], [`python`]) |
//! | `launch_sites` | kernels, launch stacks | GPU time by launch stack, the user's innermost frame first ([`frames`]) |
//! | `api` | `ApiCall` | per function: calls, failed calls by result code, total/mean/min/max/p50/p99 host time |
//! | `kernels` | `DeviceOp` kernel | per name (or name + launch stack with `by_launch_site = true`): launches, total/mean/min/max/p50/p99 device time, share of all kernel time, the most used grid/block/shared memory/registers; a label that tells kernels sharing a short name apart ([`kernel_label`]); and per device |
//! | `transfers` | `DeviceOp` memcpy/memset | per operation, direction and device: count, bytes, device time, achieved GB/s |
//! | `memory` | `DeviceOp` alloc/free | per device: allocations and frees by API calls, records the runtime made on its own apart, bytes, peak in use, in use at exit; what was still allocated at exit grouped by allocating stack |
//! | `threads` | `ApiCall`, `LaunchSite`, `DeviceOp` sync | per process and thread: launches, launch-API time, synchronisation API time (`*Synchronize*` calls) and device sync operations |
//! | `cpu` | `CpuSample` | on-CPU hot functions (self and total time) and off-CPU blocked time by function, xpuprof's own code as `[xpuprof]` ([`own_code`]): the whole report of a CPU-only run |
//! | `counters` | `Counter` | per series and device: points, min, mean, max, last |
//! | `xpuprof` | everything | records per kind, correlated events per backend, losses per cause and notes apart ([`losses`]), xpuprof's own share of the target's sampled CPU, overhead records, device work the host could not join to a launch |
//!
//! **Events per source.** Sinks receive the merged stream without the name of the source of each
//! record, so the report counts records per *kind* and correlated events per *backend* (named
//! as the backend's source declares it, plus `test` and `uncorrelated`), which identifies the
//! GPU source; CPU samples are counted under `cpu_sample`. The session's source names are in
//! `session.sources`.
//!
//! **Overhead records** are the model's `Overhead` events (for example a tracing library's overhead
//! activity records), counted per name with their duration. **API calls** are classified by their
//! `ApiKind` (launch, sync, ...), never by name; only records that do not state a kind
//! (archives written before kinds existed) fall back to the naming rule they were first
//! summarised with (`Synchronize` or `Launch` in the name).
//!
//! **Percentiles** are nearest-rank, exact while a series has at most
//! `exact_percentile_samples` values (default 10 000), and within 0.4 % relative error beyond,
//! from a bounded log-linear histogram (see [`quantile`]). Counts, totals, means, minima and
//! maxima are always exact. Memory grows with distinct names, stacks, threads and devices, and
//! with the distinct busy intervals of each device's timeline (2 to 6 bytes each once out of
//! the merge map, [`union`]); CPU samples are aggregated per stack ([`cpu`]) and at most 262,144
//! are kept by time for the idle gaps ([`samples`]).
//!
//! **Leaks.** Alloc/free operations carry a size but no address, so a free releases the oldest
//! outstanding allocation of the same size, device and process; totals and bytes at exit are
//! exact, only the attribution among same-size allocation sites depends on this ([`memory`]).
//!
//! ## Configuration (`[sink.summary]`)
//!
//! `by_launch_site` (false), `idle_gap_threshold_us` (100.0), `exact_percentile_samples`
//! (10000), `text_rows` (25), `digest` (true), `python_user_paths` and `python_library_paths`
//! (`[]`: which Python files are the user's, [`python`]). See [`config`].
//!
//! ## The seed sample's report, item by item
//!
//! The vendor callback-profiling sample xpuprof grew from reports the items below; this is where
//! each one is in the summary.
//!
//! | Seed sample item | Counterpart in the summary |
//! |---|---|
//! | "Runtime API Calls": `<runtime>Malloc: 3 calls, total, avg` | `api[]`: `calls`, `time.total_ns`, `time.mean_ns` (text: "API calls" table) |
//! | "Driver API Calls": context creation, module loading, kernel launch | the same `api[]` table: driver calls are API calls like runtime ones (where the GPU source records them) |
//! | API timing statistics: min, max, average, total | `api[].time`: `min_ns`, `max_ns`, `mean_ns`, `total_ns`, plus `p50_ns`, `p99_ns` |
//! | Error tracking: failed calls and error codes | `api[].errors`, `api[].errors_by_code[]` (text: "Errors", "Error codes") |
//! | Parameter analysis: memory sizes | `transfers[].bytes`, `memory.devices[].allocated_bytes`, `memory.leaks[].bytes` |
//! | Parameter analysis: kernel configurations | `kernels[].typical` (grid, block, shared memory, registers) and `distinct_configs` |
//! | "GPU Utilization: 78.5%" | `devices[].busy_pct` (kernel occupancy of the session) and the digest's "GPU busy" line |
//! | "Memory Bandwidth: 245.2 GB/s" | `transfers[].gb_per_s`, achieved per direction and device |
//! | "Cache Hit Rate: 92.3%" | `counters[]`: hardware metrics appear there when a source records them as `Counter` series; the sources do not collect hardware counters yet, so no row is invented |
//! | "Total Profiling Overhead: 0.8ms (0.5% of total execution time)" | `xpuprof.agent_cpu`: xpuprof's own code in the target's sampled CPU time; `xpuprof.overhead[]`: the sources' overhead records; losses in `xpuprof.losses[]` |
//! | Memory usage: `totalAllocated`, `activeAllocations`, allocation history | `memory.devices[]`: `allocations`, `allocated_bytes`, `frees`, `freed_bytes`, `in_use_at_exit_bytes`; `memory.leaks[]` with the allocating stack; the history as the `device memory in use` counter when a source records it |
//! | Kernel launch analysis: `totalLaunches` | `kernels[].launches`, `threads[].launches`, `launch_bound[]` (launch API time against GPU busy time, launches per second) |
//! | Kernel launch analysis: `totalThreads` (grid × block) | `kernels[].typical.grid` × `.block` for the usual configuration |
//! | Kernel launch analysis: `sharedMemUsage` | `kernels[].typical.shared_memory_bytes` |
//! | Kernel launch analysis: `asyncLaunches` (non-default stream) | every launch is asynchronous in the event model; host time spent waiting is `threads[].sync_api_ns` / `sync_op_ns` (per-stream placement is in the chrome trace) |
//! | Multi-threaded analysis: per-thread API statistics | `threads[]`: `api_calls`, `api_ns`, `launch_api_ns`, `sync_api_ns` per (pid, tid) |
//! | Synchronization analysis ("unnecessary synchronisation points") | `threads[].sync_api_calls`, `sync_api_ns`, `sync_ops`, `sync_op_ns`; idle gaps in `devices[].largest_gaps` with the CPU stack before them |
//! | Application profile: compute/memory ratio | `kernels[].time.total_ns` summed against `transfers[].time_ns` summed |
//! | Application profile: async utilisation | `devices[].busy_pct` |
//! | Application profile: `peakMemoryUsage` | `memory.devices[].peak_in_use_bytes` |
//! | Application profile: `averageOccupancy` (SM occupancy) | `counters[]` when a source records it (hardware metric, not collected yet) |
//! | Live dashboard: API time, kernel time, memory allocated | the five-line digest at the end of the run (totals, GPU busy, top kernels, losses) |
//! | CI report JSON (`total_api_time`, `kernel_utilization`, ...) | `summary.json` (versioned schema) |
//! | CI: `exit(1)` when performance degrades past a threshold | `xpuprof diff BASE CURRENT --threshold 5% --metric total`: exit 0 / 1 (regression) / 2 (bad input) |
//! | `--baseline` / `--compare baseline_profile.txt` | `xpuprof diff BASE CURRENT` (`--format text|json|markdown`) |

pub mod allocators;
pub mod assemble;
pub mod collect;
pub mod collectives;
pub mod compile_time;
pub mod config;
pub mod cpu;
pub mod defs;
pub mod digest;
pub mod fmt;
pub mod frames;
pub mod gpu_time;
pub mod kernel_label;
pub mod launch_bound;
pub mod losses;
pub mod memory;
pub mod own_code;
pub mod own_record;
pub mod pc_stalls;
pub mod piece_log;
pub mod python;
pub mod quantile;
pub mod ranks;
pub mod report;
pub mod samples;
pub mod sink;
pub mod streams;
pub mod text;
pub mod text_gpu;
pub mod timeline;
pub mod union;

pub use report::{Summary, SCHEMA_VERSION};
pub use sink::SummarySink;

xpuprof_sdk::export_plugin!(sink: SummarySink);
