//! # xpuprof-levelzero-wire: what the Level Zero agent says beyond `xpuprof-wire`
//!
//! The Level Zero messages of the stream from the agent (in the target) to the `levelzero`
//! host plugin: message numbers 64 to 73 ([`FIRST`] onwards, in `xpuprof-wire`'s vendor range,
//! where they were defined before each backend's messages moved to its own folder; the bytes
//! are unchanged).
//!
//! The stream itself is `xpuprof-wire`'s (framing, the versioned [`MSG_HELLO`], the module map,
//! errors, lost output, the final bye); this crate adds the messages only the Level Zero agent
//! sends, each encoded and decoded here so both sides agree by construction. The first of them is always [`Msg::Version`]:
//! a host refuses Level Zero messages of another [`VERSION`] instead of decoding them wrongly.
//!
//! Times: API entry/exit are `CLOCK_MONOTONIC` ns (the session clock) read by the agent;
//! device work is in raw device ticks of its device ([`Msg::Op`]), converted by the host from
//! the device's tick rate and wrap width ([`Msg::Device`]), the agent's
//! `zeDeviceGetGlobalTimestamps` pairs (device ticks ↔ `CLOCK_MONOTONIC_RAW`, [`Msg::Clock`])
//! and its own `CLOCK_MONOTONIC_RAW` ↔ `CLOCK_MONOTONIC` pair taken right after them
//! ([`Msg::HostClock`]).
//!
//! Version 2: [`api_kind::COPY`] and [`api_kind::MEMSET`] (a version-1 host would take copy and
//! fill appends for calls without a launch), and [`Msg::Api`]'s `recording` byte.
//!
//! Version 3: launch sites and their stacks travel as the kit's launch messages
//! ([`xpuprof_wire::MSG_LAUNCHES`], see [`launch_domain`], which says whether the call records work);
//! the stack message and [`Msg::Api`]'s stack and `recording` are gone.

mod codec;
mod options;

pub use codec::{decode, Writer};
pub use options::AgentOpts;
pub use xpuprof_wire::MSG_HELLO;

/// Version of the Level Zero messages, in [`Msg::Version`]. Raise it when a payload changes.
pub const VERSION: u32 = 3;

/// The first message number of this crate (64).
pub const FIRST: u8 = 64;

/// What an API call is, for sinks that classify calls without matching names. Launch-class
/// calls (appends and executes, whatever their kind) carry a correlation id and a stack.
pub mod api_kind {
    /// Anything else.
    pub const OTHER: u8 = 0;
    /// Puts device work on a list (append) or starts it (execute).
    pub const LAUNCH: u8 = 1;
    /// Host synchronisation, or a barrier append (device-side wait).
    pub const SYNC: u8 = 2;
    /// Appends a memory copy.
    pub const COPY: u8 = 3;
    /// Appends a memory fill.
    pub const MEMSET: u8 = 4;
}

/// The domain of a launch entry (the kit's [`xpuprof_wire::MSG_LAUNCHES`]) of a launch-class call; its
/// API id is the call's name ([`Msg::Str`] id), its correlation id the call's (agent ids fit in
/// 32 bits).
pub mod launch_domain {
    /// A call that runs its work: an append to an immediate list, an execute.
    pub const CALL: u8 = 0;
    /// An append to a regular list: it records work that runs at every execute.
    pub const RECORDING: u8 = 1;
}

/// Kinds of device work.
pub mod op_kind {
    /// A kernel launch (plain, cooperative or indirect).
    pub const KERNEL: u8 = 0;
    /// A memory copy.
    pub const COPY: u8 = 1;
    /// A memory fill.
    pub const FILL: u8 = 2;
    /// A barrier.
    pub const BARRIER: u8 = 3;
}

/// Copy directions (the model's `CopyKind` numbering).
pub mod copy_kind {
    /// Not known.
    pub const UNKNOWN: u8 = 0;
    /// Host to device.
    pub const HTOD: u8 = 1;
    /// Device to host.
    pub const DTOH: u8 = 2;
    /// Device to device.
    pub const DTOD: u8 = 3;
    /// Host to host.
    pub const HTOH: u8 = 4;
}

/// Causes of [`Msg::Loss`].
pub mod loss {
    /// A regular list was executed again before the agent could read the previous execution's
    /// timestamps: that execution's device work is lost (counted per operation).
    pub const REEXECUTED: u8 = 1;
    /// The agent's buffer to the host was full.
    pub const CHANNEL_FULL: u8 = 2;
    /// A timestamp event could not be created or read.
    pub const NO_TIMESTAMP: u8 = 3;
    /// Work still unread when the process ended.
    pub const UNREAD_AT_EXIT: u8 = 4;
}

/// Queue kinds.
pub mod queue_kind {
    /// A command queue (regular lists are executed on it).
    pub const COMMAND_QUEUE: u8 = 0;
    /// An immediate command list.
    pub const IMMEDIATE_LIST: u8 = 1;
}

/// One device operation with its raw ticks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Op {
    /// [`op_kind`].
    pub kind: u8,
    /// [`copy_kind`].
    pub copy: u8,
    /// Kernel name ([`Msg::Str`] id), 0 for other work.
    pub name: u32,
    /// The launch's correlation id: the append on an immediate list, the execute for a regular
    /// list.
    pub correlation: u64,
    /// For a regular list: the append that recorded it (its submission link); else 0.
    pub recorded: u64,
    /// For a regular list: the list's handle; else 0.
    pub list: u64,
    /// Device handle.
    pub device: u64,
    /// Queue handle (command queue or immediate list).
    pub queue: u64,
    /// Start, device ticks (masked to the device's valid bits).
    pub start: u64,
    /// End, device ticks.
    pub end: u64,
    /// Bytes copied or filled.
    pub bytes: u64,
    /// Group count (work-groups per dimension).
    pub groups: [u32; 3],
    /// Group size (work-items per work-group per dimension).
    pub group_size: [u32; 3],
}

/// One message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Msg {
    /// The version of these messages ([`VERSION`]); the first Level Zero message of a stream.
    Version(u32),
    /// An interned string (API and kernel names).
    Str { id: u32, text: String },
    /// A device or sub-device.
    Device {
        handle: u64,
        parent: u64,
        index: u32,
        sub: Option<u32>,
        tick_hz: u64,
        valid_bits: u32,
        compute_units: u32,
        uuid: [u8; 16],
        name: String,
    },
    /// A command queue or immediate list ([`queue_kind`]).
    Queue { handle: u64, device: u64, kind: u8 },
    /// An API call.
    Api { tid: u32, name: u32, kind: u8, start: u64, end: u64, correlation: u64, result: u32 },
    /// Device work.
    Op(Op),
    /// A `zeDeviceGetGlobalTimestamps` pair.
    Clock { device: u64, ticks: u64, raw: u64 },
    /// A `CLOCK_MONOTONIC_RAW` / `CLOCK_MONOTONIC` pair.
    HostClock { raw: u64, mono: u64 },
    /// Work lost ([`loss`]).
    Loss { cause: u8, count: u64 },
}
