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
    /// GPU time by the user's Python code; absent when no launch stack had Python frames.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub python: Option<PythonView>,
    /// Kernel time of compile-time work (launch stacks holding the `[compile]` frame) against
    /// the steady state; absent when no kernel was compile-time work.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub compile_time: Option<crate::compile_time::CompileTimeRow>,
    /// Per device: whether launching was what kept the GPU idle, with the evidence.
    pub launch_bound: Vec<LaunchBoundRow>,
    /// Launch sites by GPU time (at most 100), innermost user frame first.
    pub launch_sites: Vec<LaunchSiteRow>,
    /// Per kernel, by total time.
    pub kernels: Vec<KernelRow>,
    /// Device PC samples per kernel: top stall reasons and hot source lines; absent when the
    /// session has no samples.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub pc_samples: Vec<crate::pc_stalls::PcKernelRow>,
    /// Per device, its kernels by time (at most 50 each).
    pub kernels_by_device: Vec<DeviceKernels>,
    /// memcpy/memset per operation, direction and device.
    pub transfers: Vec<TransferRow>,
    /// Device memory.
    pub memory: Memory,
    /// Per device timeline.
    pub devices: Vec<DeviceRow>,
    /// Per stream busy time, by device.
    pub streams: Vec<crate::streams::StreamRow>,
    /// Per process and thread.
    pub threads: Vec<ThreadRow>,
    /// Per rank of the job, by rank; absent when no process is a rank of a job.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub ranks: Vec<crate::ranks::RankRow>,
    /// Collectives matched across ranks; absent when the session has none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub collectives: Option<crate::collectives::CollectivesReport>,
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
    /// What tables show: `short_name`, and where several kernels share it, the words of the full
    /// name that tell it apart (`at::native::vectorized_elementwise_kernel [FillFunctor float]`).
    pub label: String,
    /// Stable id of `name` (`#` + 8 hex digits), printed beside the short name in
    /// `summary.txt` and in flame graphs so the full name can be found here.
    pub id: String,
    /// The launching CPU stack, innermost first, when split by launch site
    /// (`by_launch_site = true`); `null` otherwise; `[]` for launches not joined to a stack.
    pub launch_site: Option<Vec<String>>,
    /// `launch_site` as `summary.txt` shows it, innermost user frame first (`null` when
    /// `launch_site` is).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub display_launch_site: Option<Vec<String>>,
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
    /// Memory records the backend reported without an API call of the program (no correlation
    /// id), by device, kind and the name the source gave them.
    pub without_api_call: Vec<RuntimeMemoryRow>,
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
    /// Allocations made by API calls of the program.
    pub allocations: u64,
    /// Their bytes.
    pub allocated_bytes: u64,
    /// Frees made by API calls of the program.
    pub frees: u64,
    /// Their bytes.
    pub freed_bytes: u64,
    /// Allocation records without an API call (`memory.without_api_call`).
    pub runtime_allocations: u64,
    /// Their bytes.
    pub runtime_allocated_bytes: u64,
    /// Free records without an API call.
    pub runtime_frees: u64,
    /// Their bytes.
    pub runtime_freed_bytes: u64,
    /// Highest bytes in use (all records).
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
    /// The process's name when it is a rank of a job (`rank N (host, pid)`); absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub process: Option<String>,
    /// Allocations.
    pub allocations: u64,
    /// Bytes.
    pub bytes: u64,
    /// Allocating stack, innermost first, from the allocating API call's caller (`[]` when
    /// unknown).
    pub stack: Vec<String>,
    /// `stack` as `summary.txt` shows it, innermost user frame first.
    pub display_stack: Vec<String>,
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
    /// Length of the union of kernel intervals (inside the capture windows, when there are).
    pub kernel_busy_ns: u64,
    /// Disjoint pieces of that union.
    pub busy_intervals: u64,
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
    /// Kernels that arrived after more than about `timeline_intervals` later busy intervals of
    /// the device (kept apart and merged at the end: busy time and gaps are exact whatever it is).
    pub late_ops: u64,
    /// Busy time per capture window, in window order; absent without windows.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub windows: Vec<WindowBusyRow>,
}

/// A device's busy time inside one capture window.
#[derive(Debug, Clone, Serialize)]
pub struct WindowBusyRow {
    /// Window start.
    pub start_ns: u64,
    /// Window end.
    pub end_ns: u64,
    /// Union of kernel intervals inside the window.
    pub busy_ns: u64,
    /// `busy_ns` over the window's length, percent.
    pub busy_pct: f64,
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
    /// The user's CPU sample taken last before the gap (samples in xpuprof's own code passed
    /// over), `null` without one.
    pub cpu_before: Option<CpuBefore>,
    /// CPU samples in xpuprof's own code taken after `cpu_before` up to the gap (estimated once
    /// samples are thinned): the profiler's share of the lead-up, apart from the user's. Absent
    /// when none.
    #[serde(skip_serializing_if = "is_zero")]
    pub xpuprof_samples_before: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
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
    /// Stack, innermost first (never in xpuprof's own code: those samples are passed over).
    pub stack: Vec<String>,
    /// `stack` as `summary.txt` shows it: the leaf, then the user's Python frames.
    pub display_stack: Vec<String>,
}

/// One thread.
#[derive(Debug, Clone, Serialize)]
pub struct ThreadRow {
    /// Process.
    pub pid: u32,
    /// The process's name when it is a rank of a job (`rank N (host, pid)`); absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub process: Option<String>,
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
    /// Reports that lost nothing (frames placed differently, say), per cause, largest first.
    pub notes: Vec<LossRow>,
    /// xpuprof's own code in the target's sampled CPU time.
    pub agent_cpu: AgentCpu,
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

/// xpuprof's own code in the profiled processes, from CPU samples.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct AgentCpu {
    /// On-CPU samples whose stack holds xpuprof's code.
    pub samples: u64,
    /// Their weight.
    pub weight_ns: u64,
    /// `weight_ns` over all on-CPU weight, percent.
    pub on_cpu_pct: f64,
}

/// Memory records of one kind and name on one device that no API call of the program caused.
#[derive(Debug, Clone, Serialize)]
pub struct RuntimeMemoryRow {
    /// Device index.
    pub device_index: i64,
    /// Device name.
    pub device: String,
    /// `alloc` or `free`.
    pub kind: &'static str,
    /// What the source called them (`[unnamed]` when it named them not).
    pub name: String,
    /// Records.
    pub records: u64,
    /// Bytes.
    pub bytes: u64,
}

/// GPU time by the user's Python code.
#[derive(Debug, Clone, Serialize)]
pub struct PythonView {
    /// What counted as the user's code.
    pub user_code: UserCodeRule,
    /// Kernel time by the innermost user Python line of its launch stack.
    pub by_line: Vec<LineRow>,
    /// Kernel time by `nn.Module` class (the classes whose `forward` is on the stack).
    pub by_module: Vec<ModuleRow>,
    /// Kernel time in forward passes, backward passes and elsewhere.
    pub phases: Vec<PhaseRow>,
}

/// The rule that told user code from library code.
#[derive(Debug, Clone, Serialize)]
pub struct UserCodeRule {
    /// Always user code (the `python_user_paths` setting).
    pub user_paths: Vec<String>,
    /// Never user code (the `python_library_paths` setting).
    pub library_paths: Vec<String>,
    /// The rule in words.
    pub rule: &'static str,
}

/// Kernel time launched from one line.
#[derive(Debug, Clone, Serialize)]
pub struct LineRow {
    /// `function (file:line)` with an installed file's path shortened, or a `[...]` group of
    /// launches without a user line.
    pub location: String,
    /// Python function (qualified name), empty for a group.
    pub function: String,
    /// File as the interpreter knows it, empty for a group.
    pub file: String,
    /// Line, 0 for a group.
    pub line: u32,
    /// Kernel device time.
    pub gpu_ns: u64,
    /// Share of all kernel time, percent.
    pub gpu_pct: f64,
    /// Kernels.
    pub launches: u64,
    /// The kernel with the most time, as tables label it.
    pub top_kernel: String,
}

/// Kernel time under one `nn.Module` class.
#[derive(Debug, Clone, Serialize)]
pub struct ModuleRow {
    /// Class (`Qwen3Attention`); `forward` for a class the interpreter does not name (Python
    /// before 3.11); `[no nn.Module forward]` for kernels launched outside any.
    pub module: String,
    /// Its file (shortened like `location`), empty for the group.
    pub file: String,
    /// Time of kernels whose innermost module it is.
    pub self_ns: u64,
    /// `self_ns` of all kernel time, percent (self shares add up to 100).
    pub self_pct: f64,
    /// Time of kernels with it anywhere on the stack (counted once per kernel).
    pub total_ns: u64,
    /// `total_ns` of all kernel time, percent.
    pub total_pct: f64,
    /// Kernels whose innermost module it is.
    pub launches: u64,
}

/// Kernel time of one phase.
#[derive(Debug, Clone, Serialize)]
pub struct PhaseRow {
    /// `forward`, `backward` or `other`.
    pub phase: &'static str,
    /// Kernel device time.
    pub gpu_ns: u64,
    /// Share of all kernel time, percent.
    pub gpu_pct: f64,
    /// Kernels.
    pub launches: u64,
}

/// Kernel time launched from one stack (as shown: stacks that differ only in frames tables
/// leave out are one row).
#[derive(Debug, Clone, Serialize)]
pub struct LaunchSiteRow {
    /// The stack, innermost user frame first (`[]`: launches without a stack).
    pub stack: Vec<String>,
    /// Kernel device time.
    pub gpu_ns: u64,
    /// Share of all kernel time, percent.
    pub gpu_pct: f64,
    /// Kernels.
    pub launches: u64,
    /// Distinct kernels.
    pub kernels: u64,
    /// The kernel with the most time, as tables label it.
    pub top_kernel: String,
}

/// One device's kernels.
#[derive(Debug, Clone, Serialize)]
pub struct DeviceKernels {
    /// Device index.
    pub device_index: i64,
    /// Device name.
    pub device: String,
    /// Kernel time on it.
    pub total_ns: u64,
    /// Its kernels by time, at most 50.
    pub kernels: Vec<DeviceKernelRow>,
}

/// One kernel on one device.
#[derive(Debug, Clone, Serialize)]
pub struct DeviceKernelRow {
    /// As `kernels[].label`.
    pub label: String,
    /// As `kernels[].id`.
    pub id: String,
    /// Executions on the device.
    pub launches: u64,
    /// Device time.
    pub total_ns: u64,
    /// Share of the device's kernel time, percent.
    pub gpu_pct: f64,
}

/// Whether launching kept one device idle.
#[derive(Debug, Clone, Serialize)]
pub struct LaunchBoundRow {
    /// Device index.
    pub device_index: i64,
    /// Device name.
    pub device: String,
    /// `launch-bound`, `gpu-bound`, `not-launch-bound` or `unknown` (no launch calls recorded).
    pub verdict: &'static str,
    /// Launch API calls of the threads that launched onto the device (each thread's calls
    /// shared among devices by its kernels on them).
    pub launch_api_calls: u64,
    /// Their host time.
    pub launch_api_ns: u64,
    /// Kernels on the device.
    pub kernels: u64,
    /// `devices[].kernel_busy_ns`.
    pub kernel_busy_ns: u64,
    /// `devices[].busy_pct`.
    pub busy_pct: f64,
    /// `launch_api_calls` per second of session time.
    pub launch_calls_per_s: f64,
    /// Mean host time of a launch call.
    pub mean_launch_api_ns: u64,
    /// GPU busy time per launch call.
    pub busy_ns_per_launch: u64,
    /// The verdict's reason in one sentence.
    pub evidence: String,
}
