//! The decoder of the Level Zero agents' streams into SDK records: its state and the lookups the
//! message handlers share (queues and streams, losses). What each message does (the kit's
//! messages first, then launch entries and the Level Zero messages of
//! [`xpuprof_levelzero_wire`]) is in `stream.rs`, the decoder as the toolbox's `KitDecoder`.
//!
//! One [`Decoder`] serves every connection of a session (one per Level Zero process), so all
//! definitions share one id space. Correlation ids are the agent's own (`backend::LEVEL_ZERO`,
//! per process): an immediate append is the launch of its one operation; an execute of regular
//! lists is the launch of all their operations, each carrying a [`Submission`] (the list, the
//! append that recorded it, the execute that ran it). Device times stay in device ticks, in the
//! device's clock domain ([`crate::devices`]): the host unwraps and converts them.

use xpuprof_levelzero_wire as wire;
use xpuprof_sdk::hash::IdMap;
use xpuprof_sdk::model::*;
use xpuprof_sdk::{Emitter, Logger};
use xpuprof_toolbox::agent_host::{AgentConn, AgentDecoder};

use crate::devices::{Device, Devices, Pairs};

/// Cause of a loss: messages the agent's channel dropped (the host was gone or too slow).
pub const LOSS_AGENT_CHANNEL: &str = "levelzero agent output dropped (chunks)";

/// Counters of this backend (those every agent-backed decoder keeps are the toolbox's
/// `AgentCounts`, in `AgentDecoder::counts`).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Stats {
    /// API calls emitted.
    pub api_calls: u64,
    /// Operations on a device the agent never described (not emitted, reported as a loss).
    pub unconvertible: u64,
    /// Operations the agents counted lost.
    pub lost: u64,
}

/// Per-connection (per-process) state.
#[derive(Debug, Default)]
pub struct Conn {
    /// What the kit's messages said (process, hello, module map, Python frames).
    pub(crate) agent: AgentConn,
    /// The agent writes Level Zero messages of another version: they are ignored.
    pub(crate) refused: bool,
    /// Names (API calls, kernels) by the agent's string id.
    pub(crate) names: IdMap<u32, StrId>,
    pub(crate) devices: IdMap<u64, Device>,
    pub(crate) streams: IdMap<u64, StreamId>,
    pub(crate) pairs: Pairs,
}

xpuprof_toolbox::kit_conn!(Conn);

/// The decoder.
#[derive(Debug)]
pub struct Decoder {
    /// The kit's part: definitions, launch stacks, connections, the shared counters.
    pub kit: AgentDecoder<Conn>,
    pub(crate) devices: Devices,
    streams: u32,
    /// This backend's counters.
    pub stats: Stats,
}

impl Decoder {
    /// A decoder for one session.
    pub fn new(log: Logger) -> Self {
        Self {
            kit: AgentDecoder::new(log, LOSS_AGENT_CHANNEL),
            devices: Devices::default(),
            streams: 0,
            stats: Stats::default(),
        }
    }

    pub(crate) fn queue(&mut self, conn: u64, handle: u64, device: u64, kind: u8, out: &mut Emitter) {
        let Some(c) = self.kit.conns.get_mut(&conn) else { return };
        let Some(dev) = c.devices.get(&device).map(|d| d.id) else { return };
        self.streams += 1;
        let id = StreamId(self.streams);
        let (what, kind) = if kind == wire::queue_kind::IMMEDIATE_LIST {
            ("immediate command list", QueueKind::LevelZeroImmediateList)
        } else {
            ("command queue", QueueKind::LevelZeroQueue)
        };
        let n = c.streams.len() + 1;
        c.streams.insert(handle, id);
        let pid = c.agent.pid;
        let name = self.kit.strs.string(out, &format!("{what} {n}"));
        out.emit(&Record::Stream(
            StreamDef::default().id(id).device(dev).pid(pid).native_id(handle).name(name).kind(kind),
        ));
    }

    pub(crate) fn loss(&mut self, pid: u32, cause: &str, count: u64, out: &mut Emitter) {
        let cause = self.kit.strs.string(out, cause);
        out.emit(&Record::Loss(
            Loss::default().pid(pid).time(xpuprof_sdk::clock::now_ns()).cause(cause).count(count),
        ));
    }
}

/// The stable phrase of an agent loss cause.
pub(crate) fn loss_cause(cause: u8) -> &'static str {
    match cause {
        wire::loss::REEXECUTED => "levelzero list re-executed before its timestamps were read",
        wire::loss::CHANNEL_FULL => "levelzero agent buffer full",
        wire::loss::NO_TIMESTAMP => "levelzero timestamp not readable",
        wire::loss::UNREAD_AT_EXIT => "levelzero work unfinished at exit",
        _ => "levelzero loss of an unknown kind",
    }
}
