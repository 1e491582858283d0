//! The decoder of the ROCm agents' streams into SDK records: its state and the lookups the
//! message handlers share (processes, clock domains, devices, queues and streams).
//!
//! One [`Decoder`] serves every connection of a session (one per process), so all definitions
//! share one id space. What each message does (hello, launch sites, clock pairs, drops, names,
//! markers) is in `stream.rs` (the decoder as the toolbox's `KitDecoder`); the vendor records
//! in [`crate::records`] (rocprofiler-sdk) and [`crate::activity`] (roctracer); the agent's own
//! messages through `xpuprof-rocm-wire`.
//!
//! Correlation: the key is (process, the tracing library's internal correlation id), as
//! `backend::ROCM`; the agent's launch entries carry its low 32 bits, and so do the device
//! records here, so both sides agree. Device timestamps stay in the library's clock domain
//! ([`SDK_CLOCK`]: CLOCK_BOOTTIME; [`ROCTRACER_CLOCK`]: ROCr's system clock) and are converted
//! by the host through the agent's clock pairs.

use xpuprof_rocm_wire::{self as rocm_wire, Api};
use xpuprof_sdk::hash::IdMap;
use xpuprof_sdk::model::*;
use xpuprof_sdk::{Emitter, Logger};
use xpuprof_toolbox::agent_host::{AgentConn, AgentDecoder};

/// Clock domain of rocprofiler-sdk timestamps (CLOCK_BOOTTIME nanoseconds).
pub const SDK_CLOCK: ClockDomain = ClockDomain(0x0A00_0001);
/// Clock domain of roctracer timestamps (ROCr's system clock, nanoseconds).
pub const ROCTRACER_CLOCK: ClockDomain = ClockDomain(0x0A00_0002);

/// Cause of a loss: records the tracing library dropped (its DISCARD buffer was full).
pub const LOSS_DROPPED: &str = "rocm tracing library dropped records";
/// Cause of a loss: messages the agent's channel dropped (the host was gone or too slow).
pub const LOSS_AGENT_CHANNEL: &str = "rocm agent messages dropped";

/// Counters of this backend (the kit's, shared with every agent-backed decoder, are in
/// `AgentDecoder::counts`).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Stats {
    /// Correlation ids retired.
    pub retired: u64,
    /// Records of a kind this decoder does not use.
    pub skipped: u64,
}

/// A kernel symbol of a process.
#[derive(Debug, Clone)]
pub(crate) struct KernelSym {
    pub(crate) name: StrId,
    pub(crate) sym: rocm_wire::Kernel,
}

/// Per-connection (per-process) state.
#[derive(Debug, Default)]
pub struct Conn {
    /// What the kit's messages said (process, hello, module map, strings).
    pub(crate) agent: AgentConn,
    pub(crate) api: Option<Api>,
    /// API names by (domain, id).
    pub(crate) names: IdMap<(u32, u32), String>,
    pub(crate) kernels: IdMap<u64, KernelSym>,
    /// Devices by the library's agent handle (roctracer: device index); CPU agents map to
    /// [`DeviceId::NONE`].
    pub(crate) agents: IdMap<u64, DeviceId>,
    /// HSA queues by handle.
    pub(crate) queues: IdMap<u64, StreamId>,
    /// HIP streams by the SDK's stream id.
    pub(crate) hip_streams: IdMap<u64, StreamId>,
    /// The HIP stream of each API call still in flight (dropped at retirement).
    pub(crate) stream_of: IdMap<u32, u64>,
    /// Sizes of live allocations by address (a free record carries only the address).
    pub(crate) allocations: IdMap<u64, u64>,
    /// Open roctx ranges per thread: (start, name).
    pub(crate) ranges: IdMap<u32, Vec<(u64, StrId)>>,
}

xpuprof_toolbox::kit_conn!(Conn);

/// Decoder state shared by all connections.
#[derive(Debug)]
pub struct Decoder {
    /// The kit's part: definitions, launch stacks, connections, the shared counters.
    pub kit: AgentDecoder<Conn>,
    pub(crate) next_device: u32,
    next_stream: u32,
    pub(crate) clocks_defined: [bool; 2],
    /// This backend's counters.
    pub stats: Stats,
}

impl Decoder {
    /// A decoder logging through `log`.
    pub fn new(log: Logger) -> Self {
        Self {
            kit: AgentDecoder::new(log, LOSS_AGENT_CHANNEL),
            next_device: 1,
            next_stream: 1,
            clocks_defined: [false; 2],
            stats: Stats::default(),
        }
    }

    pub(crate) fn pid(&self, conn: u64) -> u32 {
        self.kit.pid(conn)
    }

    /// The clock domain of connection `conn`'s device timestamps.
    pub(crate) fn domain(&self, conn: u64) -> ClockDomain {
        match self.kit.conns.get(&conn).and_then(|c| c.api) {
            Some(Api::Roctracer) => ROCTRACER_CLOCK,
            _ => SDK_CLOCK,
        }
    }

    /// The device of agent `handle` (a roctracer device index when no agents were sent: it is
    /// defined on first use).
    pub(crate) fn device(&mut self, conn: u64, handle: u64, out: &mut Emitter) -> DeviceId {
        if let Some(d) = self.kit.conns.get(&conn).and_then(|c| c.agents.get(&handle)) {
            return *d;
        }
        let id = DeviceId(self.next_device);
        self.next_device += 1;
        let name = self.kit.strs.string(out, &format!("AMD GPU {handle}"));
        out.emit(&Record::Device(
            DeviceDef::default()
                .id(id)
                .vendor(Vendor::Amd)
                .index(handle as u32)
                .name(name)
                .kind(DeviceKind::Gpu),
        ));
        self.kit.conns.entry(conn).or_default().agents.insert(handle, id);
        id
    }

    /// HSA queue `queue` of `device`.
    pub(crate) fn queue(&mut self, conn: u64, device: DeviceId, queue: u64, out: &mut Emitter) -> StreamId {
        if let Some(q) = self.kit.conns.get(&conn).and_then(|c| c.queues.get(&queue)) {
            return *q;
        }
        let id = self.define_stream(conn, device, queue, QueueKind::HsaQueue, None, out);
        self.kit.conns.entry(conn).or_default().queues.insert(queue, id);
        id
    }

    /// The HIP stream the agent bound to the API call `corr`, submitting to `parent`.
    pub(crate) fn hip_stream(
        &mut self,
        conn: u64,
        device: DeviceId,
        corr: u32,
        parent: StreamId,
        out: &mut Emitter,
    ) -> Option<StreamId> {
        let hip = self.kit.conns.get(&conn).and_then(|c| c.stream_of.get(&corr)).copied()?;
        if let Some(s) = self.kit.conns.get(&conn).and_then(|c| c.hip_streams.get(&hip)) {
            return Some(*s);
        }
        let id = self.define_stream(conn, device, hip, QueueKind::HipStream, Some(parent), out);
        self.kit.conns.entry(conn).or_default().hip_streams.insert(hip, id);
        Some(id)
    }

    /// A new stream of `device`: its id, defined (`native` is the runtime's handle; `parent`,
    /// the queue a HIP stream submits to).
    fn define_stream(
        &mut self,
        conn: u64,
        device: DeviceId,
        native: u64,
        kind: QueueKind,
        parent: Option<StreamId>,
        out: &mut Emitter,
    ) -> StreamId {
        let id = StreamId(self.next_stream);
        self.next_stream += 1;
        let mut def =
            StreamDef::default().id(id).device(device).pid(self.pid(conn)).native_id(native).kind(kind);
        if let Some(p) = parent {
            def = def.parent(p);
        }
        out.emit(&Record::Stream(def));
        id
    }

    /// The stream of work of call `corr` on HSA queue `queue`: its HIP stream when the agent
    /// bound one, else the queue.
    pub(crate) fn stream(
        &mut self,
        conn: u64,
        device: DeviceId,
        queue: u64,
        corr: u32,
        out: &mut Emitter,
    ) -> StreamId {
        let q = self.queue(conn, device, queue, out);
        self.hip_stream(conn, device, corr, q, out).unwrap_or(q)
    }
}
