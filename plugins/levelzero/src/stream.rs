//! What each message of an agent's stream does: the levelzero decoder as the toolbox's
//! [`KitDecoder`] (the kit reads its own messages first: hello, modules, Python frames, errors,
//! drops, bye, and the launch entries with their stacks), the launch sites, then the Level Zero
//! messages (their version, names, devices, queues, API calls, device work, clock pairs,
//! losses); a connection's end.

use xpuprof_levelzero_wire::{self as wire, api_kind, launch_domain, op_kind, Msg};
use xpuprof_sdk::model::*;
use xpuprof_sdk::Emitter;
use xpuprof_toolbox::agent_host::{AgentDecoder, KitDecoder};
use xpuprof_wire::launches::Launch;
use xpuprof_wire::{Hello, Message};

use crate::decode::{loss_cause, Conn, Decoder, Stats};
use crate::devices::{Described, Device};

impl KitDecoder for Decoder {
    type Conn = Conn;
    type Own = Stats;

    fn kit(&mut self) -> &mut AgentDecoder<Conn> {
        &mut self.kit
    }

    fn hello(&mut self, _conn: u64, _hello: &Hello) {
        self.kit.counts.processes += 1;
    }

    /// The site of a launch-class call (an append or an execute) with the agent's stack.
    fn launch(&mut self, conn: u64, _pid: u32, tid: u32, l: &Launch, out: &mut Emitter) {
        let Some(c) = self.kit.conns.get(&conn).filter(|c| !c.refused) else { return };
        let api = c.names.get(&l.api_id).copied().unwrap_or(StrId::NONE);
        let correlation = Correlation { backend: backend::LEVEL_ZERO, id: u64::from(l.correlation) };
        if let Some(site) = self.kit.launch_site(conn, tid, l, correlation, api) {
            out.emit(&Record::LaunchSite(site.recording(l.domain == launch_domain::RECORDING)));
        }
    }

    /// The Level Zero messages of an agent whose version this plugin reads.
    fn message(&mut self, conn: u64, m: Message<'_>, out: &mut Emitter) {
        if self.kit.conns.get(&conn).is_none_or(|c| c.refused) {
            return;
        }
        match wire::decode(m.ty, m.payload) {
            Some(Msg::Version(v)) if v != wire::VERSION => self.refuse(conn, v),
            Some(m) => self.ze_message(conn, m, out),
            None => {}
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
