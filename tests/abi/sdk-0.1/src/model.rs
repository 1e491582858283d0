//! The vendor-neutral event model (docs/architecture.md, "Design principles").
//!
//! Everything a source reports and everything a sink receives is a [`Record`]: either a
//! *definition* (a string, process, thread, device, stream, module, frame or stack, each
//! interned once and referenced by id afterwards) or an *event* (API call, device operation,
//! launch site, CPU sample, marker, range, counter, loss).
//!
//! Ids are scoped to the stream they travel in. A source numbers its own definitions from 1;
//! the host re-numbers them into session-wide ids before sinks see them, so two sources can
//! both use string id 1 without clashing. Id 0 always means "none".
//!
//! All timestamps are nanoseconds. Events from sources are in the clock domain their record
//! says (see [`ClockDomain`]); sinks only ever see the session clock (`CLOCK_MONOTONIC`).

/// Defines a `u32` id newtype where 0 means "none".
macro_rules! id_type {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
        pub struct $name(pub u32);

        impl $name {
            /// The "no such definition" id.
            pub const NONE: Self = Self(0);

            /// True when this is the "none" id.
            pub fn is_none(self) -> bool {
                self.0 == 0
            }
        }
    };
}

id_type!(
    /// Id of an interned string ([`StrDef`]).
    StrId
);
id_type!(
    /// Id of a GPU or accelerator device ([`DeviceDef`]).
    DeviceId
);
id_type!(
    /// Id of a device stream or queue ([`StreamDef`]).
    StreamId
);
id_type!(
    /// Id of a loaded module: executable or shared library ([`ModuleDef`]).
    ModuleId
);
id_type!(
    /// Id of one code location ([`FrameDef`]).
    FrameId
);
id_type!(
    /// Id of a call stack ([`StackDef`]).
    StackId
);

/// Timestamp in nanoseconds.
pub type Nanos = u64;

/// Backend numbers used in correlation keys and in the correlation trampoline.
///
/// A correlation id is only meaningful inside its backend and process: CUPTI's id 42 in
/// process 7 has nothing to do with roctracer's id 42 there.
pub mod backend {
    /// No backend correlation id: the record is not joinable (for example a launch stack
    /// captured by a plain uprobe on `cudaLaunchKernel`). The host counts such launch sites and
    /// shows them as CPU stacks, never joins them by guessing.
    pub const UNCORRELATED: u32 = 0;
    /// NVIDIA CUDA via CUPTI.
    pub const CUDA: u32 = 1;
    /// AMD ROCm / HIP via roctracer or rocprofiler.
    pub const ROCM: u32 = 2;
    /// Intel oneAPI Level Zero.
    pub const LEVEL_ZERO: u32 = 3;
    /// First id free for third-party backends.
    pub const FIRST_THIRD_PARTY: u32 = 0x100;
    /// The scripted test backend used by xpuprof's own tests.
    pub const TEST: u32 = 0xFFFF;
}

/// A backend's own correlation id for one API call and the work it caused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Correlation {
    /// Which backend issued the id (see [`backend`]).
    pub backend: u32,
    /// The id as the backend gave it.
    pub id: u64,
}

/// The full correlation key: backend, process, id (docs/architecture.md, "Design principles").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CorrelationKey {
    /// Which backend issued the id.
    pub backend: u32,
    /// The process the id belongs to.
    pub pid: u32,
    /// The backend's id.
    pub id: u64,
}

impl CorrelationKey {
    /// Builds the key of `correlation` in process `pid`.
    pub fn new(pid: u32, correlation: Correlation) -> Self {
        Self { backend: correlation.backend, pid, id: correlation.id }
    }
}

/// An external correlation id pushed by a framework (for example PyTorch's sequence number or an
/// NVTX/roctx range id), kept apart from the backend's own id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ExternalId {
    /// Who issued it (backend specific; CUPTI's `CUpti_ExternalCorrelationKind` for CUDA).
    pub kind: u32,
    /// The id.
    pub id: u64,
}

/// Clock domain of a source's timestamps.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct ClockDomain(pub u32);

impl ClockDomain {
    /// The session clock: `CLOCK_MONOTONIC` nanoseconds, the clock of `bpf_ktime_get_ns`.
    pub const SESSION: Self = Self(0);
}

/// GPU / accelerator vendor.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[repr(u8)]
pub enum Vendor {
    /// Not known.
    #[default]
    Unknown = 0,
    /// NVIDIA.
    Nvidia = 1,
    /// AMD.
    Amd = 2,
    /// Intel.
    Intel = 3,
    /// A test double (xpuprof's own test plugins).
    Test = 255,
}

impl Vendor {
    /// Decodes a vendor byte; unknown values map to [`Vendor::Unknown`].
    pub fn from_u8(v: u8) -> Self {
        match v {
            1 => Self::Nvidia,
            2 => Self::Amd,
            3 => Self::Intel,
            255 => Self::Test,
            _ => Self::Unknown,
        }
    }
}

/// An interned string.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StrDef {
    /// Its id.
    pub id: StrId,
    /// Its text.
    pub text: String,
}

/// A process of the session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcessDef {
    /// Process id.
    pub pid: u32,
    /// Parent process id (0 when not known).
    pub ppid: u32,
    /// Command line or executable name.
    pub command: StrId,
}

/// A thread of the session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ThreadDef {
    /// Process id.
    pub pid: u32,
    /// Thread id (kernel tid).
    pub tid: u32,
    /// Thread name (`comm`), or [`StrId::NONE`].
    pub name: StrId,
}

/// A GPU or accelerator.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceDef {
    /// Id used by events.
    pub id: DeviceId,
    /// Vendor.
    pub vendor: Vendor,
    /// Index as the runtime numbers it (CUDA device ordinal, ...).
    pub index: u32,
    /// Marketing name ("NVIDIA H100 80GB HBM3").
    pub name: StrId,
    /// Device UUID (zero when not known).
    pub uuid: [u8; 16],
    /// Multiprocessors / compute units.
    pub compute_units: u32,
    /// Device memory in bytes.
    pub memory_bytes: u64,
}

/// A device stream or queue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamDef {
    /// Id used by events.
    pub id: StreamId,
    /// The device it runs on.
    pub device: DeviceId,
    /// The process that owns it.
    pub pid: u32,
    /// The runtime's own number for it (CUDA stream id, ...).
    pub native_id: u64,
    /// Display name, or [`StrId::NONE`].
    pub name: StrId,
}

/// A loaded module: an executable, a shared library or the kernel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModuleDef {
    /// Id used by frames.
    pub id: ModuleId,
    /// Path of the file as the process mapped it.
    pub path: StrId,
    /// GNU build id, empty when the file has none.
    pub build_id: Vec<u8>,
}

/// What a frame's address means.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[repr(u8)]
pub enum FrameKind {
    /// `address` is a file offset inside `module` (normalised user address).
    #[default]
    FileOffset = 0,
    /// `address` is a virtual address in the process; the host normalises it if it can.
    Virtual = 1,
    /// `address` is a kernel address.
    Kernel = 2,
    /// No address: the frame is just its `name` (interpreted code, synthetic frames).
    Synthetic = 3,
}

impl FrameKind {
    /// Decodes a frame kind byte; unknown values map to [`FrameKind::Synthetic`].
    pub fn from_u8(v: u8) -> Self {
        match v {
            0 => Self::FileOffset,
            1 => Self::Virtual,
            2 => Self::Kernel,
            _ => Self::Synthetic,
        }
    }
}

/// One code location.
///
/// Sources usually send only `module` + `address`; the host's symbolizer fills in `name` and
/// `inlined` before sinks see the frame. A source that already knows the name (interpreted
/// code, a test double) sets `name` itself and the host keeps it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct FrameDef {
    /// Id used by stacks.
    pub id: FrameId,
    /// How to read `address`.
    pub kind: FrameKind,
    /// Module the address belongs to, or [`ModuleId::NONE`].
    pub module: ModuleId,
    /// File offset, virtual address or kernel address (see `kind`).
    pub address: u64,
    /// Process the address belongs to (needed for [`FrameKind::Virtual`]).
    pub pid: u32,
    /// Function name (demangled), or [`StrId::NONE`] while unknown.
    pub name: StrId,
    /// Functions inlined at this location, outermost first, each called from the previous one
    /// and the last one being where the address really is. Empty when nothing was inlined.
    pub inlined: Vec<StrId>,
}

/// A call stack.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct StackDef {
    /// Id used by events.
    pub id: StackId,
    /// Frames, innermost (leaf) first.
    pub frames: Vec<FrameId>,
}

/// A host-side runtime or driver API call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiCall {
    /// Calling process.
    pub pid: u32,
    /// Calling thread.
    pub tid: u32,
    /// Entry time.
    pub start: Nanos,
    /// Exit time.
    pub end: Nanos,
    /// Function name (`cudaLaunchKernel`).
    pub name: StrId,
    /// Backend correlation id, when the call has one.
    pub correlation: Option<Correlation>,
    /// External correlation id, when a framework pushed one.
    pub external: Option<ExternalId>,
    /// The call's result code (0 = success for CUDA, HIP and Level Zero).
    pub result: i64,
}

/// Kind of device work.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[repr(u8)]
pub enum DeviceOpKind {
    /// A compute kernel.
    #[default]
    Kernel = 0,
    /// A memory copy.
    Memcpy = 1,
    /// A memory set.
    Memset = 2,
    /// A synchronisation (stream/event/context wait).
    Sync = 3,
    /// A device memory allocation (`bytes` = size).
    Alloc = 4,
    /// A device memory release (`bytes` = size).
    Free = 5,
    /// Anything else (`name` says what).
    Other = 255,
}

impl DeviceOpKind {
    /// Decodes a kind byte; unknown values map to [`DeviceOpKind::Other`].
    pub fn from_u8(v: u8) -> Self {
        match v {
            0 => Self::Kernel,
            1 => Self::Memcpy,
            2 => Self::Memset,
            3 => Self::Sync,
            4 => Self::Alloc,
            5 => Self::Free,
            _ => Self::Other,
        }
    }
}

/// Direction of a memory copy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[repr(u8)]
pub enum CopyKind {
    /// Not a copy, or not known.
    #[default]
    Unknown = 0,
    /// Host to device.
    HostToDevice = 1,
    /// Device to host.
    DeviceToHost = 2,
    /// Device to device (same device).
    DeviceToDevice = 3,
    /// Host to host.
    HostToHost = 4,
    /// Peer to peer (between devices).
    PeerToPeer = 5,
}

impl CopyKind {
    /// Decodes a copy kind byte; unknown values map to [`CopyKind::Unknown`].
    pub fn from_u8(v: u8) -> Self {
        match v {
            1 => Self::HostToDevice,
            2 => Self::DeviceToHost,
            3 => Self::DeviceToDevice,
            4 => Self::HostToHost,
            5 => Self::PeerToPeer,
            _ => Self::Unknown,
        }
    }

    /// Short display name (`HtoD`, `DtoH`, ...), as used by the folded `[GPU_Memcpy]` frame.
    pub fn short_name(self) -> &'static str {
        match self {
            Self::Unknown => "Unknown",
            Self::HostToDevice => "HtoD",
            Self::DeviceToHost => "DtoH",
            Self::DeviceToDevice => "DtoD",
            Self::HostToHost => "HtoH",
            Self::PeerToPeer => "PtoP",
        }
    }
}

/// Launch configuration of a kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct KernelInfo {
    /// Grid size.
    pub grid: [u32; 3],
    /// Block size.
    pub block: [u32; 3],
    /// Static + dynamic shared memory per block, bytes.
    pub shared_memory: u32,
    /// Registers per thread.
    pub registers: u32,
}

/// Graph ids of work launched as part of a graph.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct GraphInfo {
    /// Graph (executable) id.
    pub graph: u64,
    /// Node id inside the graph.
    pub node: u64,
}

/// Work on a device.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceOp {
    /// What kind of work.
    pub kind: DeviceOpKind,
    /// Process that submitted it.
    pub pid: u32,
    /// Device it ran on.
    pub device: DeviceId,
    /// Stream/queue it ran on, or [`StreamId::NONE`].
    pub stream: StreamId,
    /// Start on the device.
    pub start: Nanos,
    /// End on the device.
    pub end: Nanos,
    /// Clock domain of `start` and `end` (the host converts them to the session clock).
    pub clock: ClockDomain,
    /// Kernel name (mangled or not, as the runtime reports it) or operation name.
    pub name: StrId,
    /// Bytes copied/set/allocated, 0 when not relevant.
    pub bytes: u64,
    /// Copy direction for [`DeviceOpKind::Memcpy`].
    pub copy: CopyKind,
    /// Backend correlation id of the API call that caused it.
    pub correlation: Option<Correlation>,
    /// Launch configuration for kernels.
    pub kernel: Option<KernelInfo>,
    /// Graph ids when the work ran as part of a graph.
    pub graph: Option<GraphInfo>,
    /// Filled by the host's correlator, never by sources: the launch this work was joined to.
    pub launch: Option<LaunchRef>,
}

/// What the correlator joined a device operation to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct LaunchRef {
    /// Launching thread.
    pub tid: u32,
    /// The CPU stack at the launch, innermost first, or [`StackId::NONE`] if only the API call
    /// was found.
    pub stack: StackId,
    /// The launching API function's name, or [`StrId::NONE`] if not known.
    pub api: StrId,
    /// When the launch API was entered.
    pub time: Nanos,
}

/// The CPU stack at the moment a launch-class API was entered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LaunchSite {
    /// Process.
    pub pid: u32,
    /// Thread.
    pub tid: u32,
    /// Time of the API entry (session clock).
    pub time: Nanos,
    /// The launch's correlation id.
    pub correlation: Correlation,
    /// The launch API's name (`cudaLaunchKernel`), or [`StrId::NONE`].
    pub api: StrId,
    /// The stack, innermost first.
    pub stack: StackId,
}

/// Whether a CPU sample saw the thread running or blocked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[repr(u8)]
pub enum SampleKind {
    /// The thread was on a CPU.
    #[default]
    OnCpu = 0,
    /// The thread was blocked for `weight` nanoseconds.
    OffCpu = 1,
}

/// A sampled CPU stack.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CpuSample {
    /// Process.
    pub pid: u32,
    /// Thread.
    pub tid: u32,
    /// Sample time (for off-CPU: when the thread woke up).
    pub time: Nanos,
    /// On- or off-CPU.
    pub kind: SampleKind,
    /// Nanoseconds this sample stands for: the sampling period, or the blocked time.
    pub weight: u64,
    /// The stack, innermost first.
    pub stack: StackId,
}

/// A user annotation: an instant marker (`start == end`) or a range.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Annotation {
    /// Process.
    pub pid: u32,
    /// Thread.
    pub tid: u32,
    /// Start.
    pub start: Nanos,
    /// End (equal to `start` for a marker).
    pub end: Nanos,
    /// Text.
    pub name: StrId,
    /// Domain / category (NVTX domain, ...), or [`StrId::NONE`].
    pub domain: StrId,
}

/// One point of a numeric series.
#[derive(Debug, Clone, PartialEq)]
pub struct Counter {
    /// Process, or 0 for a machine-wide series.
    pub pid: u32,
    /// Device, or [`DeviceId::NONE`].
    pub device: DeviceId,
    /// Time.
    pub time: Nanos,
    /// Series name ("device memory in use").
    pub name: StrId,
    /// Value.
    pub value: f64,
}

/// Data that was dropped: never silent (docs/architecture.md, "Design principles").
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Loss {
    /// Process it concerns, or 0.
    pub pid: u32,
    /// Time it was noticed.
    pub time: Nanos,
    /// Cause, as a short stable phrase ("cupti dropped records", "ring buffer full").
    pub cause: StrId,
    /// How many items were lost.
    pub count: u64,
}

/// A pair of simultaneous readings of a source clock and the session clock, used by the host to
/// convert that source's timestamps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClockSync {
    /// The source clock domain.
    pub domain: ClockDomain,
    /// Reading of the source clock.
    pub source_time: u64,
    /// Reading of the session clock at the same moment.
    pub session_time: Nanos,
}

/// Everything that travels through the plugin ABI.
#[derive(Debug, Clone, PartialEq)]
pub enum Record {
    /// String definition.
    Str(StrDef),
    /// Process definition.
    Process(ProcessDef),
    /// Thread definition.
    Thread(ThreadDef),
    /// Device definition.
    Device(DeviceDef),
    /// Stream definition.
    Stream(StreamDef),
    /// Module definition.
    Module(ModuleDef),
    /// Frame definition.
    Frame(FrameDef),
    /// Stack definition.
    Stack(StackDef),
    /// Host API call.
    ApiCall(ApiCall),
    /// Device work.
    DeviceOp(DeviceOp),
    /// Launch stack.
    LaunchSite(LaunchSite),
    /// CPU sample.
    CpuSample(CpuSample),
    /// Instant marker.
    Marker(Annotation),
    /// Range.
    Range(Annotation),
    /// Counter point.
    Counter(Counter),
    /// Loss report.
    Loss(Loss),
    /// Clock pairing.
    ClockSync(ClockSync),
}

impl Record {
    /// True for definitions (interned objects referenced by id), false for events.
    pub fn is_definition(&self) -> bool {
        matches!(
            self,
            Record::Str(_)
                | Record::Process(_)
                | Record::Thread(_)
                | Record::Device(_)
                | Record::Stream(_)
                | Record::Module(_)
                | Record::Frame(_)
                | Record::Stack(_)
        )
    }
}
