//! Decodes the agents' streams (`xpuprof-wire` framing, hello, module map, errors and losses, with
//! the Level Zero messages of [`xpuprof_wire::levelzero`]) into SDK records.
//!
//! One [`Decoder`] serves every connection of a session (one per Level Zero process), so all
//! definitions share one id space. Correlation ids are the agent's own (`backend::LEVEL_ZERO`,
//! per process): an immediate append is the launch of its one operation; an execute of regular
//! lists is the launch of all their operations, each carrying the list and the append that
//! recorded it as `GraphInfo::default().graph(list).node(append id)`. Device times are converted to
//! `CLOCK_MONOTONIC_RAW` here ([`crate::clock`]) and to the session clock by the host from the
//! agent's RAW/MONOTONIC pairs.

use std::collections::{HashMap, HashSet};

use xpuprof_sdk::model::*;
use xpuprof_sdk::{Emitter, Logger, StringInterner};
use xpuprof_wire::levelzero::{self as wire, api_kind, op_kind, Msg};
use xpuprof_wire::maps::Mapping;
use xpuprof_wire::{self as kit_wire, Hello, Reader};

use crate::clock::DeviceClock;
use crate::stacks::Stacks;
use xpuprof_toolbox::python::{PyCounts, PyFrames};

/// The clock domain of converted device times: `CLOCK_MONOTONIC_RAW` ns.
pub const RAW: ClockDomain = ClockDomain(1);

/// Counters a user sees in the log at the end.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Stats {
    /// Processes that connected.
    pub processes: u64,
    /// Device operations emitted.
    pub device_ops: u64,
    /// Kernels among them.
    pub kernels: u64,
    /// Launch sites emitted.
    pub launch_sites: u64,
    /// API calls emitted.
    pub api_calls: u64,
    /// Operations whose device or clock was unknown (not emitted, reported as a loss).
    pub unconvertible: u64,
    /// Operations the agents counted lost.
    pub lost: u64,
    /// Agents that could not trace their process.
    pub agent_errors: u64,
    /// Connections that ended without the agent's final message.
    pub unfinished: u64,
    /// Python frames in the launch stacks.
    pub python: PyCounts,
}

/// Per-connection (per-process) state.
#[derive(Debug, Default)]
struct Conn {
    pid: u32,
    ok: bool,
    bye: bool,
    maps: Vec<Mapping>,
    python: PyFrames,
    names: HashMap<u32, StrId>,
    devices: HashMap<u64, (DeviceId, DeviceClock)>,
    streams: HashMap<u64, StreamId>,
    threads: HashSet<u32>,
}

/// The decoder.
#[derive(Debug)]
pub struct Decoder {
    log: Logger,
    conns: HashMap<u64, Conn>,
    strs: StringInterner,
    stacks: Stacks,
    devices: u32,
    streams: u32,
    /// What was decoded.
    pub stats: Stats,
}

impl Decoder {
    /// A decoder for one session.
    pub fn new(log: Logger) -> Self {
        Self {
            log,
            conns: HashMap::new(),
            strs: StringInterner::new(1),
            stacks: Stacks::default(),
            devices: 0,
            streams: 0,
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
            kit_wire::MSG_MODULES => c.maps = kit_wire::maps::decode_modules(payload),
            kit_wire::MSG_ERROR => {
                self.stats.agent_errors += 1;
                let text = String::from_utf8_lossy(payload);
                self.log.warn(&format!("the levelzero agent could not trace process {pid}: {text}"));
            }
            kit_wire::MSG_LOST_BYTES => {
                let chunks = Reader::new(payload).u64();
                self.stats.lost += chunks;
                self.loss(pid, "levelzero agent output dropped (chunks)", chunks, out);
            }
            kit_wire::MSG_BYE => c.bye = true,
            kit_wire::MSG_PY_FRAMES => c.python.define(payload),
            kit_wire::MSG_PY_COUNTS => self.stats.python.add(payload),
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
                self.stacks.define(pid, hash, &frames, (&c.maps, &c.python), &mut self.strs, out);
            }
            Msg::Str { id, text } => {
                let s = self.strs.intern(out, &text);
                c.names.insert(id, s);
            }
            Msg::Device { handle, index, sub, tick_hz, valid_bits, compute_units, uuid, name, .. } => {
                self.devices += 1;
                let id = DeviceId(self.devices);
                let name = match sub {
                    Some(t) if !name.contains("tile") => format!("{name} tile {t}"),
                    _ => name,
                };
                let name = self.strs.intern(out, &name);
                let d = DeviceDef::default()
                    .id(id)
                    .vendor(Vendor::Intel)
                    .index(index)
                    .name(name)
                    .uuid(uuid)
                    .compute_units(compute_units);
                out.emit(&Record::Device(d));
                let c = self.conns.get_mut(&conn).expect("present");
                c.devices.insert(handle, (id, DeviceClock::new(tick_hz, valid_bits)));
            }
            Msg::Queue { handle, device, kind } => self.queue(conn, handle, device, kind, out),
            Msg::Api { tid, name, kind, start, end, correlation, result, stack } => {
                if c.threads.insert(tid) {
                    out.emit(&Record::Thread(ThreadDef::default().pid(pid).tid(tid)));
                }
                let name = c.names.get(&name).copied().unwrap_or(StrId::NONE);
                let corr = (correlation != 0)
                    .then_some(Correlation { backend: backend::LEVEL_ZERO, id: correlation });
                let call = ApiCall::default()
                    .pid(pid)
                    .tid(tid)
                    .start(start)
                    .end(end)
                    .name(name)
                    .correlation(corr)
                    .result(result as i64);
                out.emit(&Record::ApiCall(call));
                self.stats.api_calls += 1;
                if let (api_kind::LAUNCH, Some(correlation)) = (kind, corr) {
                    let stack = self.stacks.get(pid, stack);
                    out.emit(&Record::LaunchSite(
                        LaunchSite::default()
                            .pid(pid)
                            .tid(tid)
                            .time(start)
                            .correlation(correlation)
                            .api(name)
                            .stack(stack),
                    ));
                    self.stats.launch_sites += 1;
                }
            }
            Msg::Op(op) => self.op(conn, op, out),
            Msg::Clock { device, ticks, raw } => {
                if let Some((_, clock)) = c.devices.get_mut(&device) {
                    clock.pair(ticks, raw);
                }
            }
            Msg::HostClock { raw, mono } => {
                out.emit(&Record::ClockSync(
                    ClockSync::default().domain(RAW).source_time(raw).session_time(mono),
                ));
            }
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
            self.stats.processes += 1;
            let command = self.strs.intern(out, &h.command);
            out.emit(&Record::Process(
                ProcessDef::default().pid(h.pid).ppid(parent_of(h.pid)).command(command),
            ));
        }
        self.conns.insert(conn, Conn { pid: h.pid, ok, ..Default::default() });
    }

    fn queue(&mut self, conn: u64, handle: u64, device: u64, kind: u8, out: &mut Emitter) {
        let c = self.conns.get_mut(&conn).expect("checked by the caller");
        let Some(&(dev, _)) = c.devices.get(&device) else { return };
        self.streams += 1;
        let id = StreamId(self.streams);
        let what =
            if kind == wire::queue_kind::IMMEDIATE_LIST { "immediate command list" } else { "command queue" };
        let n = c.streams.len() + 1;
        c.streams.insert(handle, id);
        let (pid, name) = (c.pid, format!("{what} {n}"));
        let name = self.strs.intern(out, &name);
        out.emit(&Record::Stream(
            StreamDef::default().id(id).device(dev).pid(pid).native_id(handle).name(name),
        ));
    }

    fn op(&mut self, conn: u64, op: wire::Op, out: &mut Emitter) {
        let c = self.conns.get_mut(&conn).expect("checked by the caller");
        let pid = c.pid;
        let converted = c.devices.get(&op.device).and_then(|(dev, clock)| {
            let (start, end) = (clock.to_raw(op.start)?, clock.to_raw(op.end)?);
            Some((*dev, start, end.max(start)))
        });
        let Some((device, start, end)) = converted else {
            self.stats.unconvertible += 1;
            return self.loss(pid, "levelzero device time without a device clock", 1, out);
        };
        let stream = c.streams.get(&op.queue).copied().unwrap_or(StreamId::NONE);
        let name = c.names.get(&op.name).copied();
        let (kind, name) = match op.kind {
            op_kind::KERNEL => (DeviceOpKind::Kernel, name.unwrap_or(StrId::NONE)),
            op_kind::COPY => (DeviceOpKind::Memcpy, self.strs.intern(out, "zeCommandListAppendMemoryCopy")),
            op_kind::FILL => (DeviceOpKind::Memset, self.strs.intern(out, "zeCommandListAppendMemoryFill")),
            _ => (DeviceOpKind::Sync, self.strs.intern(out, "zeCommandListAppendBarrier")),
        };
        let kernel = (op.kind == op_kind::KERNEL)
            .then_some(KernelInfo::default().grid(op.groups).block(op.group_size));
        let graph = (op.list != 0).then_some(GraphInfo::default().graph(op.list).node(op.recorded));
        out.emit(&Record::DeviceOp(
            DeviceOp::default()
                .kind(kind)
                .pid(pid)
                .device(device)
                .stream(stream)
                .start(start)
                .end(end)
                .clock(RAW)
                .name(name)
                .bytes(op.bytes)
                .copy(CopyKind::from_u8(op.copy))
                .correlation(Some(Correlation { backend: backend::LEVEL_ZERO, id: op.correlation }))
                .kernel(kernel)
                .graph(graph),
        ));
        self.stats.device_ops += 1;
        self.stats.kernels += u64::from(op.kind == op_kind::KERNEL);
    }

    fn loss(&mut self, pid: u32, cause: &str, count: u64, out: &mut Emitter) {
        let cause = self.strs.intern(out, cause);
        out.emit(&Record::Loss(
            Loss::default().pid(pid).time(xpuprof_sdk::clock::now_ns()).cause(cause).count(count),
        ));
    }

    /// Connection `conn` ended.
    pub fn finish(&mut self, conn: u64) {
        if let Some(c) = self.conns.remove(&conn) {
            if c.ok && !c.bye {
                self.stats.unfinished += 1;
                self.log.warn(&format!(
                    "the levelzero agent of process {} ended without flushing (killed?): its last work is missing",
                    c.pid
                ));
            }
        }
    }
}

/// The parent of a live process (0 when it is gone).
fn parent_of(pid: u32) -> u32 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // `pid (comm) state ppid ...`: comm may hold spaces and parentheses, so split after the last ')'.
    stat.rsplit_once(')').and_then(|(_, rest)| rest.split_whitespace().nth(1)?.parse().ok()).unwrap_or(0)
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
