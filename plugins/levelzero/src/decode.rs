//! Decodes the agents' streams (`xpuprof-wire` framing, hello, module map, errors and losses, with
//! the Level Zero messages of [`xpuprof_wire::levelzero`]) into SDK records.
//!
//! One [`Decoder`] serves every connection of a session (one per Level Zero process), so all
//! definitions share one id space. Correlation ids are the agent's own (`backend::LEVEL_ZERO`,
//! per process): an immediate append is the launch of its one operation; an execute of regular
//! lists is the launch of all their operations, each carrying a [`Submission`] (the list, the
//! append that recorded it, the execute that ran it). Device times stay in device ticks, in the
//! device's clock domain ([`crate::devices`]): the host unwraps and converts them.

use xpuprof_sdk::hash::IdMap;
use xpuprof_sdk::model::*;
use xpuprof_sdk::{Emitter, Logger};
use xpuprof_toolbox::agent_host::{AgentConn, AgentDecoder, Conn as KitConn, KitDecoder, Step};
use xpuprof_wire::launches::Launch;
use xpuprof_wire::levelzero::{self as wire, api_kind, launch_domain, op_kind, Msg};

use crate::devices::{Described, Device, Devices, Pairs};

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
    agent: AgentConn,
    /// The agent writes Level Zero messages of another version: they are ignored.
    refused: bool,
    names: IdMap<u32, StrId>,
    devices: IdMap<u64, Device>,
    streams: IdMap<u64, StreamId>,
    pairs: Pairs,
}

impl KitConn for Conn {
    fn agent(&self) -> &AgentConn {
        &self.agent
    }

    fn agent_mut(&mut self) -> &mut AgentConn {
        &mut self.agent
    }
}

/// The decoder.
#[derive(Debug)]
pub struct Decoder {
    /// The kit's part: definitions, launch stacks, connections, the shared counters.
    pub kit: AgentDecoder<Conn>,
    devices: Devices,
    streams: u32,
    /// This backend's counters.
    pub stats: Stats,
}

impl KitDecoder for Decoder {
    type Conn = Conn;
    type Own = Stats;

    fn kit(&mut self) -> &mut AgentDecoder<Conn> {
        &mut self.kit
    }

    fn step(&mut self, conn: u64, step: Step<'_>, out: &mut Emitter) {
        let refused = self.kit.conns.get(&conn).is_none_or(|c| c.refused);
        match step {
            Step::Hello(_) => self.kit.counts.processes += 1,
            Step::Launches { tid, launches, .. } if !refused => {
                for l in launches {
                    self.launch(conn, tid, &l, out);
                }
            }
            Step::Message(m) if !refused => match wire::decode(m.ty, m.payload) {
                Some(Msg::Version(v)) if v != wire::VERSION => self.refuse(conn, v),
                Some(m) => self.ze_message(conn, m, out),
                None => {}
            },
            _ => {}
        }
    }

    /// Reports an agent that did not flush.
    fn end_conn(&mut self, conn: u64, _out: &mut Emitter) {
        let Some(c) = self.kit.conns.remove(&conn) else { return };
        let a = &c.agent;
        if a.hello && !a.refused && !c.refused && !a.bye {
            self.kit.counts.unfinished += 1;
            self.kit.log.warn(&format!(
                "the levelzero agent of process {} ended without flushing (killed?): its last work is missing",
                a.pid
            ));
        }
    }

    fn into_own(self) -> Stats {
        self.stats
    }
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

    fn refuse(&mut self, conn: u64, v: u32) {
        let pid = self.kit.pid(conn);
        if let Some(c) = self.kit.conns.get_mut(&conn) {
            c.refused = true;
        }
        self.kit.log.error(&format!(
            "the levelzero agent in process {pid} writes Level Zero messages version {v}, this plugin reads \
             version {}: its stream is ignored; use the agent built with this xpuprof",
            wire::VERSION
        ));
    }

    /// The site of a launch-class call (an append or an execute) with the agent's stack.
    fn launch(&mut self, conn: u64, tid: u32, l: &Launch, out: &mut Emitter) {
        let Some(c) = self.kit.conns.get(&conn) else { return };
        let api = c.names.get(&l.api_id).copied().unwrap_or(StrId::NONE);
        let correlation = Correlation { backend: backend::LEVEL_ZERO, id: u64::from(l.correlation) };
        if let Some(site) = self.kit.launch_site(conn, tid, l, correlation, api) {
            out.emit(&Record::LaunchSite(site.recording(l.domain == launch_domain::RECORDING)));
        }
    }

    fn ze_message(&mut self, conn: u64, m: Msg, out: &mut Emitter) {
        let Some(c) = self.kit.conns.get_mut(&conn) else { return };
        let pid = c.agent.pid;
        let strs = &mut self.kit.strs;
        match m {
            Msg::Version(_) => {}
            Msg::Str { id, text } => {
                let s = strs.string(out, &text);
                c.names.insert(id, s);
            }
            Msg::Device { handle, parent, index, sub, tick_hz, valid_bits, compute_units, uuid, name } => {
                let parent = c.devices.get(&parent).map(|d| d.id);
                let d =
                    Described { handle, parent, index, sub, tick_hz, valid_bits, compute_units, uuid, name };
                let dev = self.devices.define(d, strs, out);
                c.devices.insert(handle, dev);
            }
            Msg::Queue { handle, device, kind } => self.queue(conn, handle, device, kind, out),
            Msg::Api { tid, name, kind, start, end, correlation, result } => {
                strs.thread(out, pid, tid, "");
                let name = c.names.get(&name).copied().unwrap_or(StrId::NONE);
                let corr = (correlation != 0)
                    .then_some(Correlation { backend: backend::LEVEL_ZERO, id: correlation });
                let call = ApiCall::default()
                    .pid(pid)
                    .tid(tid)
                    .start(start)
                    .end(end)
                    .name(name)
                    .kind(api_kind_of(kind))
                    .correlation(corr)
                    .result(result as i64);
                out.emit(&Record::ApiCall(call));
                self.stats.api_calls += 1;
            }
            Msg::Op(op) => self.op(conn, op, out),
            Msg::Clock { device, ticks, raw } => {
                if let Some(d) = c.devices.get(&device) {
                    c.pairs.device(d.clock, ticks, raw);
                }
            }
            Msg::HostClock { raw, mono } => c.pairs.host(raw, mono, out),
            Msg::Loss { cause, count } => {
                self.stats.lost += count;
                self.loss(pid, loss_cause(cause), count, out);
            }
        }
    }

    fn queue(&mut self, conn: u64, handle: u64, device: u64, kind: u8, out: &mut Emitter) {
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

    fn op(&mut self, conn: u64, op: wire::Op, out: &mut Emitter) {
        let Some(c) = self.kit.conns.get_mut(&conn) else { return };
        let pid = c.agent.pid;
        let Some(&dev) = c.devices.get(&op.device) else {
            self.stats.unconvertible += 1;
            return self.loss(pid, "levelzero device work on a device the agent did not describe", 1, out);
        };
        let Device { id: device, clock, .. } = dev;
        let stream = c.streams.get(&op.queue).copied().unwrap_or(StreamId::NONE);
        let name = c.names.get(&op.name).copied();
        let (kind, name) = match op.kind {
            op_kind::KERNEL => (DeviceOpKind::Kernel, name.unwrap_or(StrId::NONE)),
            op_kind::COPY => {
                (DeviceOpKind::Memcpy, self.kit.strs.string(out, "zeCommandListAppendMemoryCopy"))
            }
            op_kind::FILL => {
                (DeviceOpKind::Memset, self.kit.strs.string(out, "zeCommandListAppendMemoryFill"))
            }
            _ => (DeviceOpKind::Sync, self.kit.strs.string(out, "zeCommandListAppendBarrier")),
        };
        let kernel = (op.kind == op_kind::KERNEL)
            .then_some(KernelInfo::default().grid(op.groups).block(op.group_size));
        let correlation = Correlation { backend: backend::LEVEL_ZERO, id: op.correlation };
        let submission = (op.list != 0).then_some(
            Submission::default()
                .list(op.list)
                .record(Some(Correlation { backend: backend::LEVEL_ZERO, id: op.recorded }))
                .execution(op.correlation),
        );
        let copy = CopyKind::from_u8(op.copy);
        let (src, dst) = copy_ends(copy, device);
        out.emit(&Record::DeviceOp(
            DeviceOp::default()
                .kind(kind)
                .pid(pid)
                .device(device)
                .stream(stream)
                .start(op.start)
                .end(dev.end_after(op.start, op.end))
                .clock(clock)
                .name(name)
                .bytes(op.bytes)
                .copy(copy)
                .src_device(src)
                .dst_device(dst)
                .correlation(Some(correlation))
                .kernel(kernel)
                .submission(submission),
        ));
        self.kit.counts.device_ops += 1;
        self.kit.counts.kernels += u64::from(op.kind == op_kind::KERNEL);
    }

    fn loss(&mut self, pid: u32, cause: &str, count: u64, out: &mut Emitter) {
        let cause = self.kit.strs.string(out, cause);
        out.emit(&Record::Loss(
            Loss::default().pid(pid).time(xpuprof_sdk::clock::now_ns()).cause(cause).count(count),
        ));
    }
}

/// The model's kind of a call the agent classified.
fn api_kind_of(kind: u8) -> ApiKind {
    match kind {
        api_kind::LAUNCH => ApiKind::Launch,
        api_kind::SYNC => ApiKind::Sync,
        api_kind::COPY => ApiKind::Copy,
        api_kind::MEMSET => ApiKind::Memset,
        _ => ApiKind::Other,
    }
}

/// Source and destination devices of a copy on `device` (the agent knows the memory type of each
/// end, not which device a peer allocation lives on: a device-to-device copy is taken as local).
fn copy_ends(copy: CopyKind, device: DeviceId) -> (DeviceId, DeviceId) {
    match copy {
        CopyKind::HostToDevice => (DeviceId::NONE, device),
        CopyKind::DeviceToHost => (device, DeviceId::NONE),
        CopyKind::DeviceToDevice => (device, device),
        _ => (DeviceId::NONE, DeviceId::NONE),
    }
}

/// The stable phrase of an agent loss cause.
fn loss_cause(cause: u8) -> &'static str {
    match cause {
        wire::loss::REEXECUTED => "levelzero list re-executed before its timestamps were read",
        wire::loss::CHANNEL_FULL => "levelzero agent buffer full",
        wire::loss::NO_TIMESTAMP => "levelzero timestamp not readable",
        wire::loss::UNREAD_AT_EXIT => "levelzero work unfinished at exit",
        _ => "levelzero loss of an unknown kind",
    }
}
