//! The `summary.json` schema (see `SCHEMA.md` in this crate for field-by-field documentation).
//!
//! Compatibility: fields are only ever added within a [`SCHEMA_VERSION`]; removing, renaming or
//! changing the meaning of a field bumps it. Readers (such as `xpuprof diff`) must ignore fields
//! they do not know. All times are nanoseconds of the session clock; percentages are 0–100.

use std::collections::BTreeMap;

use serde::Serialize;

/// Version of the `summary.json` schema.
pub const SCHEMA_VERSION: u32 = 1;

/// The whole report.
#[derive(Debug, Clone, Serialize)]
pub struct Summary {
    /// [`SCHEMA_VERSION`].
    pub schema_version: u32,
    /// `xpuprof-plugin-summary <version>`.
    pub generator: String,
    /// What was profiled and when.
    pub session: Session,
    /// How percentiles were computed.
    pub percentiles: PercentileMethod,
    /// Per API function, by total time.
    pub api: Vec<ApiRow>,
    /// Per kernel, by total time.
    pub kernels: Vec<KernelRow>,
    /// memcpy/memset per operation, direction and device.
    pub transfers: Vec<TransferRow>,
    /// Device memory.
    pub memory: Memory,
    /// Per device timeline.
    pub devices: Vec<DeviceRow>,
    /// Per process and thread.
    pub threads: Vec<ThreadRow>,
    /// CPU samples.
    pub cpu: Cpu,
    /// Counter series (memory in use, utilisation, hardware metrics a source records).
    pub counters: Vec<CounterRow>,
    /// xpuprof's own record.
    pub xpuprof: Own,
}

/// What was profiled and when.
#[derive(Debug, Clone, Serialize)]
pub struct Session {
    /// The profiled command (empty for `xpuprof report`).
    pub command: Vec<String>,
    /// Source plugins of the session.
    pub sources: Vec<String>,
    /// Earliest event time.
    pub start_ns: u64,
    /// Latest event time.
    pub end_ns: u64,
    /// `end_ns - start_ns`; with capture windows, the time inside them (their union).
    pub duration_ns: u64,
    /// The capture windows the report covers, in order; absent when the session recorded the
    /// whole run.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub windows: Vec<WindowRow>,
}

/// One capture window.
#[derive(Debug, Clone, Serialize)]
pub struct WindowRow {
    /// Opened at.
    pub start_ns: u64,
    /// Closed at.
    pub end_ns: u64,
    /// `end_ns - start_ns`.
    pub duration_ns: u64,
    /// What opened it: the model's `WindowOpener` in kebab case (`start`, `delay`, `trigger`,
    /// `attach`, or the marker kind of the source that opened it).
    pub opened_by: String,
}

/// How percentiles were computed (see the crate docs).
#[derive(Debug, Clone, Serialize)]
pub struct PercentileMethod {
    /// Always `"nearest-rank"`.
    pub definition: &'static str,
    /// Values kept exactly per series.
    pub exact_samples_cap: u64,
    /// Bound on the relative error of a percentile whose series went over the cap.
    pub histogram_relative_error: f64,
}

/// Statistics of a series of durations.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Time {
    /// Sum.
    pub total_ns: u64,
    /// Mean (rounded down).
    pub mean_ns: u64,
    /// Minimum.
    pub min_ns: u64,
    /// Maximum.
    pub max_ns: u64,
    /// Median.
    pub p50_ns: u64,
    /// 99th percentile.
    pub p99_ns: u64,
    /// False when the percentiles come from the histogram.
    pub exact: bool,
}

/// One API function.
#[derive(Debug, Clone, Serialize)]
pub struct ApiRow {
    /// Function name.
    pub name: String,
    /// Calls.
    pub calls: u64,
    /// Calls with a non-zero result.
    pub errors: u64,
    /// Those calls per result code, by code.
    pub errors_by_code: Vec<ErrorCount>,
    /// Host time.
    pub time: Time,
}

/// Calls that returned one result code.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct ErrorCount {
    /// The result code.
    pub code: i64,
    /// Calls.
    pub count: u64,
}

/// One kernel (by name, or by name and launch site).
#[derive(Debug, Clone, Serialize)]
pub struct KernelRow {
    /// Kernel name as the runtime reported it (demangled).
    pub name: String,
    /// Qualified function name only (template arguments, parameters, return type dropped).
    pub short_name: String,
    /// Stable id of `name` (`#` + 8 hex digits), printed beside the short name in
    /// `summary.txt` and in flame graphs so the full name can be found here.
    pub id: String,
    /// The launching CPU stack, innermost first, when split by launch site
    /// (`by_launch_site = true`); `null` otherwise; `[]` for launches not joined to a stack.
    pub launch_site: Option<Vec<String>>,
    /// Launches (executions; a graph launch counts each kernel node).
    pub launches: u64,
    /// Device time.
    pub time: Time,
    /// Share of all kernel time of the session, percent.
    pub gpu_time_pct: f64,
    /// The most used launch configuration.
    pub typical: LaunchConfig,
    /// Distinct configurations seen (16 means "16 or more").
    pub distinct_configs: u64,
}

/// A kernel launch configuration.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct LaunchConfig {
    /// Grid size.
    pub grid: [u32; 3],
    /// Block size.
    pub block: [u32; 3],
    /// Shared memory per block, bytes.
    pub shared_memory_bytes: u32,
    /// Registers per thread.
    pub registers_per_thread: u32,
    /// Launches that used it.
    pub launches: u64,
}

/// memcpy or memset traffic of one direction on one device.
#[derive(Debug, Clone, Serialize)]
pub struct TransferRow {
    /// `"memcpy"` or `"memset"`.
    pub op: &'static str,
    /// `HtoD`, `DtoH`, `DtoD`, `HtoH`, `PtoP`, `Unknown`; `"-"` for memset.
    pub direction: &'static str,
    /// Device index (-1 when the device was not defined).
    pub device_index: i64,
    /// Device name.
    pub device: String,
    /// Operations.
    pub count: u64,
    /// Bytes.
    pub bytes: u64,
    /// Device time.
    pub time_ns: u64,
    /// `bytes / time_ns` (GB/s, 10^9 bytes per second); 0 when no time was recorded.
    pub gb_per_s: f64,
}

/// Device memory.
#[derive(Debug, Clone, Serialize)]
pub struct Memory {
    /// Per device.
    pub devices: Vec<DeviceMemoryRow>,
    /// Still allocated at exit, by allocating stack; largest first.
    pub leaks: Vec<LeakRow>,
    /// Frees that matched no allocation of the same size, device and process.
    pub unmatched_frees: u64,
    /// How frees are matched to allocations: `"fifo-by-size"` (see the crate docs).
    pub leak_matching: &'static str,
}

/// Allocation counters of one device.
#[derive(Debug, Clone, Serialize)]
pub struct DeviceMemoryRow {
    /// Device index.
    pub device_index: i64,
    /// Device name.
    pub device: String,
    /// Allocations.
    pub allocations: u64,
    /// Bytes allocated.
    pub allocated_bytes: u64,
    /// Frees.
    pub frees: u64,
    /// Bytes freed.
    pub freed_bytes: u64,
    /// Highest bytes in use.
    pub peak_in_use_bytes: u64,
    /// Bytes still in use at exit.
    pub in_use_at_exit_bytes: u64,
}

/// Allocations still outstanding at exit from one stack.
#[derive(Debug, Clone, Serialize)]
pub struct LeakRow {
    /// Device index.
    pub device_index: i64,
    /// Device name.
    pub device: String,
    /// Process.
    pub pid: u32,
    /// Allocations.
    pub allocations: u64,
    /// Bytes.
    pub bytes: u64,
    /// Allocating stack, innermost first, from the allocating API call's caller (`[]` when
    /// unknown).
    pub stack: Vec<String>,
    /// The caching allocator whose pool holds this memory (`"PyTorch's XPU caching
    /// allocator"`), recognised by its frame on the stack; `null` otherwise. Such memory is
    /// kept on purpose and released by the driver at exit: not a leak.
    pub caching_allocator: Option<&'static str>,
    /// Allocated without a correlation id: by the runtime on its own (a lazy module
    /// loading, for one), not by a call of the program.
    pub by_runtime: bool,
}

/// One device's kernel timeline.
#[derive(Debug, Clone, Serialize)]
pub struct DeviceRow {
    /// Device index.
    pub device_index: i64,
    /// Device name.
    pub device: String,
    /// Kernels.
    pub kernels: u64,
    /// Union of kernel intervals.
    pub kernel_busy_ns: u64,
    /// Session duration.
    pub session_ns: u64,
    /// `kernel_busy_ns / session_ns`, percent.
    pub busy_pct: f64,
    /// Gaps at least this long are counted.
    pub idle_gap_threshold_ns: u64,
    /// Gaps over the threshold.
    pub idle_gaps: u64,
    /// Their total length.
    pub idle_gap_total_ns: u64,
    /// The largest gaps, longest first (at most 5).
    pub largest_gaps: Vec<GapRow>,
    /// Kernels that arrived too far out of order (gap list may be approximate when > 0).
    pub late_ops: u64,
}

/// One idle gap.
#[derive(Debug, Clone, Serialize)]
pub struct GapRow {
    /// End of the kernel before the gap.
    pub start_ns: u64,
    /// Start of the kernel after it.
    pub end_ns: u64,
    /// Length.
    pub duration_ns: u64,
    /// The CPU sample taken last before the gap, `null` without samples.
    pub cpu_before: Option<CpuBefore>,
}

/// A CPU sample shown next to a gap.
#[derive(Debug, Clone, Serialize)]
pub struct CpuBefore {
    /// Process.
    pub pid: u32,
    /// Thread.
    pub tid: u32,
    /// Sample time.
    pub time_ns: u64,
    /// Stack, innermost first.
    pub stack: Vec<String>,
}

/// One thread.
#[derive(Debug, Clone, Serialize)]
pub struct ThreadRow {
    /// Process.
    pub pid: u32,
    /// Thread (0: device sync operations not joined to a thread).
    pub tid: u32,
    /// Thread name.
    pub name: String,
    /// Launches: the larger of `launch_api_calls` and `launch_sites`.
    pub launches: u64,
    /// Launch sites (captured launch stacks).
    pub launch_sites: u64,
    /// API calls whose name contains `Launch`.
    pub launch_api_calls: u64,
    /// Their host time.
    pub launch_api_ns: u64,
    /// API calls whose name contains `Synchronize`.
    pub sync_api_calls: u64,
    /// Their host time.
    pub sync_api_ns: u64,
    /// Device synchronisation operations joined to this thread.
    pub sync_ops: u64,
    /// Their device time.
    pub sync_op_ns: u64,
    /// All API calls.
    pub api_calls: u64,
    /// Their host time.
    pub api_ns: u64,
}

/// CPU samples.
#[derive(Debug, Clone, Serialize)]
pub struct Cpu {
    /// On-CPU samples (weight: sampling period).
    pub on_cpu: CpuProfile,
    /// Off-CPU samples (weight: blocked time).
    pub off_cpu: CpuProfile,
}

/// Samples of one kind.
#[derive(Debug, Clone, Serialize)]
pub struct CpuProfile {
    /// Samples.
    pub samples: u64,
    /// Sum of weights.
    pub weight_ns: u64,
    /// Functions by self time (at most 200).
    pub hot_functions: Vec<HotFunctionRow>,
}

/// One function of a CPU profile.
#[derive(Debug, Clone, Serialize)]
pub struct HotFunctionRow {
    /// Function name (`module+0xoffset` when not symbolised).
    pub function: String,
    /// Weight with this function innermost.
    pub self_ns: u64,
    /// `self_ns / weight_ns`, percent.
    pub self_pct: f64,
    /// Weight with this function anywhere on the stack.
    pub total_ns: u64,
    /// Samples with this function innermost.
    pub self_samples: u64,
}

/// One counter series.
#[derive(Debug, Clone, Serialize)]
pub struct CounterRow {
    /// Series name.
    pub name: String,
    /// Device index, -1 for a series of no device.
    pub device_index: i64,
    /// Device name (empty for a series of no device).
    pub device: String,
    /// Points.
    pub count: u64,
    /// Smallest value.
    pub min: f64,
    /// Largest value.
    pub max: f64,
    /// Mean of the points.
    pub mean: f64,
    /// The latest value.
    pub last: f64,
}

/// xpuprof's own record.
#[derive(Debug, Clone, Serialize)]
pub struct Own {
    /// Records received per kind (definitions included).
    pub records_by_kind: BTreeMap<String, u64>,
    /// API calls, device operations and launch sites per correlation backend, by the name its
    /// source declared (`test`, `uncorrelated`, or `backend-N` for one no loaded source names).
    pub events_by_backend: BTreeMap<String, u64>,
    /// Items lost per cause, largest first.
    pub losses: Vec<LossRow>,
    /// Sum of `losses[].count`.
    pub lost_total: u64,
    /// Overhead records per name.
    pub overhead: Vec<OverheadRow>,
    /// Device operations the host could not join to a launch.
    pub unmatched_device_ops: u64,
    /// Those by kind, each with why it could not be joined.
    pub unmatched_by_kind: Vec<UnmatchedRow>,
}

/// Device operations of one kind without a launch site.
#[derive(Debug, Clone, Serialize)]
pub struct UnmatchedRow {
    /// `kernel`, `memcpy`, `memset`, `sync`, `alloc`, `free`, `other`.
    pub kind: &'static str,
    /// Carrying a correlation id that matched no launch the session saw (the launch happened
    /// before tracing started, or its record was lost).
    pub correlation_unmatched: u64,
    /// Carrying no correlation id: the backend reported the work without naming the call that
    /// caused it (for example memory the runtime freed on its own at exit).
    pub no_correlation_id: u64,
}

/// Losses of one cause.
#[derive(Debug, Clone, Serialize)]
pub struct LossRow {
    /// Cause as the source reported it.
    pub cause: String,
    /// Items lost.
    pub count: u64,
    /// Loss records with this cause.
    pub reports: u64,
}

/// Overhead records of one name.
#[derive(Debug, Clone, Serialize)]
pub struct OverheadRow {
    /// Name.
    pub name: String,
    /// Records.
    pub count: u64,
    /// Summed duration.
    pub total_ns: u64,
    /// `total_ns / session.duration_ns`, percent.
    pub session_pct: f64,
}
