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
use xpuprof_toolbox::agent_host::{parent_of, AgentCounts};
use xpuprof_toolbox::normalise::{self, ModuleMap};
use xpuprof_toolbox::Interner;
use xpuprof_wire::levelzero::{self as wire, api_kind, op_kind, Msg};
use xpuprof_wire::{self as kit_wire, Hello, Reader};

use crate::devices::{Described, Device, Devices, Pairs};
use xpuprof_toolbox::python::PyFrames;

/// Counters of this backend (those every agent-backed decoder keeps are the toolbox's
/// [`AgentCounts`], in [`Decoder::counts`]).
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
struct Conn {
    pid: u32,
    ok: bool,
    bye: bool,
    maps: ModuleMap,
    python: PyFrames,
    names: IdMap<u32, StrId>,
    devices: IdMap<u64, Device>,
    streams: IdMap<u64, StreamId>,
    stacks: IdMap<u64, StackId>,
    pairs: Pairs,
}

/// The decoder.
#[derive(Debug)]
pub struct Decoder {
    log: Logger,
    conns: IdMap<u64, Conn>,
    strs: Interner,
    devices: Devices,
    streams: u32,
    /// The counters every agent-backed decoder keeps.
    pub counts: AgentCounts,
    /// This backend's counters.
    pub stats: Stats,
}

impl Decoder {
    /// A decoder for one session.
    pub fn new(log: Logger) -> Self {
        Self {
            log,
            conns: IdMap::default(),
            strs: Interner::default(),
            devices: Devices::default(),
            streams: 0,
            counts: AgentCounts::default(),
            stats: Stats::default(),
        }
    }

    /// Decodes the complete messages at the front of `buf` from connection `conn`; returns the
    /// bytes consumed.
    pub fn feed(&mut self, conn: u64, buf: &[u8], out: &mut Emitter) -> usize {
        let (msgs, used) = kit_wire::split_messages(buf);
        for m in msgs {
            self.message(conn, m.ty, m.payload, out);
        }
        used
    }

    fn message(&mut self, conn: u64, ty: u8, payload: &[u8], out: &mut Emitter) {
        if ty == kit_wire::MSG_HELLO {
            return self.hello(conn, Hello::decode(payload), out);
        }
        let Some(c) = self.conns.get_mut(&conn).filter(|c| c.ok) else { return };
        let pid = c.pid;
        match ty {
            kit_wire::MSG_MODULES => c.maps = ModuleMap::new(kit_wire::maps::decode_modules(payload)),
            kit_wire::MSG_ERROR => {
                self.counts.agent_errors += 1;
                let text = String::from_utf8_lossy(payload);
                self.log.warn(&format!("the levelzero agent could not trace process {pid}: {text}"));
            }
            kit_wire::MSG_LOST_BYTES => {
                let chunks = Reader::new(payload).u64();
                self.counts.lost_chunks += chunks;
                self.loss(pid, "levelzero agent output dropped (chunks)", chunks, out);
            }
            kit_wire::MSG_BYE => c.bye = true,
            kit_wire::MSG_PY_FRAMES => c.python.define(payload),
            kit_wire::MSG_PY_COUNTS => self.counts.python.add(payload),
            _ => match wire::decode(ty, payload) {
                Some(Msg::Version(v)) if v != wire::VERSION => {
                    c.ok = false;
                    self.log.error(&format!(
                        "the levelzero agent in process {pid} writes Level Zero messages version {v}, this plugin reads \
                         version {}: its stream is ignored; use the agent built with this xpuprof",
                        wire::VERSION
                    ));
                }
                Some(m) => self.ze_message(conn, pid, m, out),
                None => {}
            },
        }
    }

    fn ze_message(&mut self, conn: u64, pid: u32, m: Msg, out: &mut Emitter) {
        let c = self.conns.get_mut(&conn).expect("checked by the caller");
        match m {
            Msg::Version(_) => {}
            Msg::Stack { hash, frames } => {
                if c.stacks.contains_key(&hash) {
                    return;
                }
                let ids: Vec<FrameId> = frames
                    .iter()
                    .map(|&ra| match c.python.frame(&mut self.strs, out, ra) {
                        Some(f) => f,
                        None => normalise::return_address_frame(&mut self.strs, out, pid, &c.maps, ra),
                    })
                    .collect();
                let id = self.strs.stack(out, &ids);
                c.stacks.insert(hash, id);
            }
            Msg::Str { id, text } => {
                let s = self.strs.string(out, &text);
                c.names.insert(id, s);
            }
            Msg::Device { handle, parent, index, sub, tick_hz, valid_bits, compute_units, uuid, name } => {
                let parent = c.devices.get(&parent).map(|d| d.id);
                let d =
                    Described { handle, parent, index, sub, tick_hz, valid_bits, compute_units, uuid, name };
                let dev = self.devices.define(d, &mut self.strs, out);
                c.devices.insert(handle, dev);
            }
            Msg::Queue { handle, device, kind } => self.queue(conn, handle, device, kind, out),
            Msg::Api { tid, name, kind, recording, start, end, correlation, result, stack } => {
                self.strs.thread(out, pid, tid, "");
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
                // Launch-class calls (appends, executes) carry a correlation id and a stack.
                if let Some(correlation) = corr {
                    let stack = c.stacks.get(&stack).copied().unwrap_or(StackId::NONE);
                    out.emit(&Record::LaunchSite(
                        LaunchSite::default()
                            .pid(pid)
                            .tid(tid)
                            .time(start)
                            .correlation(correlation)
                            .api(name)
                            .stack(stack)
                            .recording(recording),
                    ));
                    self.counts.launch_sites += 1;
                }
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

    fn hello(&mut self, conn: u64, h: Hello, out: &mut Emitter) {
        let ok = match h.check() {
            Ok(()) => true,
            Err(e) => {
                self.log.error(&e.to_string());
                false
            }
        };
        if ok {
            self.counts.processes += 1;
            self.strs.process(out, h.pid, parent_of(h.pid), &h.command);
        }
        self.conns.insert(conn, Conn { pid: h.pid, ok, ..Default::default() });
    }

    fn queue(&mut self, conn: u64, handle: u64, device: u64, kind: u8, out: &mut Emitter) {
        let c = self.conns.get_mut(&conn).expect("checked by the caller");
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
        let pid = c.pid;
        let name = self.strs.string(out, &format!("{what} {n}"));
        out.emit(&Record::Stream(
            StreamDef::default().id(id).device(dev).pid(pid).native_id(handle).name(name).kind(kind),
        ));
    }

    fn op(&mut self, conn: u64, op: wire::Op, out: &mut Emitter) {
        let c = self.conns.get_mut(&conn).expect("checked by the caller");
        let pid = c.pid;
        let Some(&dev) = c.devices.get(&op.device) else {
            self.stats.unconvertible += 1;
            return self.loss(pid, "levelzero device work on a device the agent did not describe", 1, out);
        };
        let Device { id: device, clock, .. } = dev;
        let stream = c.streams.get(&op.queue).copied().unwrap_or(StreamId::NONE);
        let name = c.names.get(&op.name).copied();
        let (kind, name) = match op.kind {
            op_kind::KERNEL => (DeviceOpKind::Kernel, name.unwrap_or(StrId::NONE)),
            op_kind::COPY => (DeviceOpKind::Memcpy, self.strs.string(out, "zeCommandListAppendMemoryCopy")),
            op_kind::FILL => (DeviceOpKind::Memset, self.strs.string(out, "zeCommandListAppendMemoryFill")),
            _ => (DeviceOpKind::Sync, self.strs.string(out, "zeCommandListAppendBarrier")),
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
        self.counts.device_ops += 1;
        self.counts.kernels += u64::from(op.kind == op_kind::KERNEL);
    }

    fn loss(&mut self, pid: u32, cause: &str, count: u64, out: &mut Emitter) {
        let cause = self.strs.string(out, cause);
        out.emit(&Record::Loss(
            Loss::default().pid(pid).time(xpuprof_sdk::clock::now_ns()).cause(cause).count(count),
        ));
    }

    /// Connection `conn` ended.
    pub fn finish(&mut self, conn: u64) {
        if let Some(c) = self.conns.remove(&conn) {
            if c.ok && !c.bye {
                self.counts.unfinished += 1;
                self.log.warn(&format!(
                    "the levelzero agent of process {} ended without flushing (killed?): its last work is missing",
                    c.pid
                ));
            }
        }
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

/// The parent of a live process (0 when it is gone).
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
