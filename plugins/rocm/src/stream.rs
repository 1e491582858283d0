//! What each message of an agent's stream does: the rocm decoder as the toolbox's
//! [`KitDecoder`] (the kit reads its own messages first), the hello, the tracing library and
//! its clock, the agents (devices), the launches with their sites, the vendor records (handed to
//! [`crate::records`] or [`crate::activity`] by library), markers, drops and clock pairs; a
//! connection's end.

use xpuprof_rocm_wire::{self as rocm_wire, marker_op, Api};
use xpuprof_sdk::model::*;
use xpuprof_sdk::Emitter;
use xpuprof_toolbox::agent_host::{AgentDecoder, KitDecoder};
use xpuprof_wire::launches::Launch;
use xpuprof_wire::names;
use xpuprof_wire::{self as wire, Hello, Message, Reader};

use crate::decode::{Conn, Decoder, KernelSym, Stats, LOSS_DROPPED, ROCTRACER_CLOCK, SDK_CLOCK};

impl Decoder {
    fn define_clock(&mut self, api: Api, out: &mut Emitter) {
        let (i, domain, name) = match api {
            Api::RocprofilerSdk => (0, SDK_CLOCK, "rocprofiler-sdk CLOCK_BOOTTIME"),
            Api::Roctracer => (1, ROCTRACER_CLOCK, "roctracer ROCr system clock"),
        };
        if std::mem::replace(&mut self.clocks_defined[i], true) {
            return;
        }
        let name = self.kit.strs.string(out, name);
        out.emit(&Record::ClockDomain(ClockDomainDef::default().domain(domain).name(name)));
    }

    fn clock(&mut self, conn: u64, vendor: u64, session: u64, out: &mut Emitter) {
        let domain = self.domain(conn);
        out.emit(&Record::ClockSync(
            ClockSync::default().domain(domain).source_time(vendor).session_time(session),
        ));
    }

    fn dropped(&mut self, conn: u64, count: u64, out: &mut Emitter) {
        self.kit.counts.dropped += count;
        let pid = self.pid(conn);
        let cause = self.kit.strs.string(out, LOSS_DROPPED);
        let now = xpuprof_sdk::clock::now_ns();
        out.emit(&Record::Loss(Loss::default().pid(pid).time(now).cause(cause).count(count)));
    }

    fn agents(&mut self, conn: u64, agents: Vec<rocm_wire::Agent>, out: &mut Emitter) {
        let pid = self.pid(conn);
        for a in agents {
            if a.kind != 2 {
                self.kit.conns.entry(conn).or_default().agents.insert(a.handle, DeviceId::NONE);
                continue;
            }
            let id = DeviceId(self.next_device);
            self.next_device += 1;
            let name = self.kit.strs.string(out, if a.product.is_empty() { &a.arch } else { &a.product });
            let arch = self.kit.strs.string(out, &a.arch);
            let def = DeviceDef::default()
                .id(id)
                .vendor(Vendor::Amd)
                .index(a.index.max(0) as u32)
                .name(name)
                .compute_units(a.cus)
                .memory_bytes(a.memory)
                .kind(DeviceKind::Gpu)
                .native_id(a.handle)
                .arch(arch);
            out.emit(&Record::Device(def));
            let _ = pid;
            self.kit.conns.entry(conn).or_default().agents.insert(a.handle, id);
        }
    }

    fn records(&mut self, conn: u64, payload: &[u8], out: &mut Emitter) {
        let api = self.kit.conns.get(&conn).and_then(|c| c.api);
        for rec in wire::records::split(payload) {
            match api {
                Some(Api::RocprofilerSdk) => crate::records::record(self, conn, rec, out),
                Some(Api::Roctracer) => crate::activity::record(self, conn, rec, out),
                None => self.stats.skipped += 1,
            }
        }
    }

    fn markers(&mut self, conn: u64, markers: Vec<rocm_wire::Marker>, out: &mut Emitter) {
        let pid = self.pid(conn);
        for m in markers {
            match m.op {
                marker_op::MARK => {
                    let name = self.kit.strs.string(out, &m.text);
                    out.emit(&Record::Marker(
                        Annotation::default().pid(pid).tid(m.tid).start(m.time).end(m.time).name(name),
                    ));
                }
                marker_op::PUSH => {
                    let name = self.kit.strs.string(out, &m.text);
                    self.kit
                        .conns
                        .entry(conn)
                        .or_default()
                        .ranges
                        .entry(m.tid)
                        .or_default()
                        .push((m.time, name));
                }
                marker_op::POP => {
                    let open =
                        self.kit.conns.entry(conn).or_default().ranges.get_mut(&m.tid).and_then(Vec::pop);
                    if let Some((start, name)) = open {
                        out.emit(&Record::Range(
                            Annotation::default().pid(pid).tid(m.tid).start(start).end(m.time).name(name),
                        ));
                    }
                }
                _ => {}
            }
        }
    }
}

impl KitDecoder for Decoder {
    type Conn = Conn;
    type Own = Stats;

    fn kit(&mut self) -> &mut AgentDecoder<Conn> {
        &mut self.kit
    }

    /// An accepted hello: a process that found a tracing library counts as traced.
    fn hello(&mut self, _conn: u64, h: &Hello) {
        if h.runtime_version != 0 {
            self.kit.counts.processes += 1;
        }
    }

    fn launch(&mut self, conn: u64, pid: u32, tid: u32, l: &Launch, out: &mut Emitter) {
        let name =
            self.kit.conns.get(&conn).and_then(|c| c.names.get(&(u32::from(l.domain), l.api_id)).cloned());
        let (api, kind) = match name {
            Some(n) => (self.kit.strs.string(out, &n), crate::api_kind::classify(&n)),
            None => (StrId::NONE, ApiKind::Unknown),
        };
        let correlation = Correlation { backend: backend::ROCM, id: u64::from(l.correlation) };
        let end = l.end.max(l.time);
        out.emit(&Record::ApiCall(
            ApiCall::default()
                .pid(pid)
                .tid(tid)
                .start(l.time)
                .end(end)
                .name(api)
                .kind(kind)
                .correlation(Some(correlation))
                .result(i64::from(l.result as i32)),
        ));
        if let Some(site) = self.kit.launch_site(conn, tid, l, correlation, api) {
            out.emit(&Record::LaunchSite(site));
        }
    }

    fn message(&mut self, conn: u64, m: Message<'_>, out: &mut Emitter) {
        let mut r = Reader::new(m.payload);
        match m.ty {
            wire::MSG_RECORDS => self.records(conn, m.payload, out),
            wire::MSG_API_NAMES => {
                let c = self.kit.conns.entry(conn).or_default();
                c.names.extend(names::parse_api_names(m.payload).into_iter().map(|(d, id, n)| ((d, id), n)));
            }
            wire::MSG_CLOCK => self.clock(conn, r.u64(), r.u64(), out),
            wire::MSG_DROPPED => self.dropped(conn, r.u64(), out),
            rocm_wire::MSG_API => {
                let api = rocm_wire::get_api(m.payload);
                if let Some((api, _)) = api {
                    self.kit.conns.entry(conn).or_default().api = Some(api);
                    self.define_clock(api, out);
                }
            }
            rocm_wire::MSG_KERNELS => {
                for k in rocm_wire::get_kernels(m.payload) {
                    let name = self.kit.strs.string(out, &k.name);
                    self.kit
                        .conns
                        .entry(conn)
                        .or_default()
                        .kernels
                        .insert(k.kernel_id, KernelSym { name, sym: k });
                }
            }
            rocm_wire::MSG_AGENTS => self.agents(conn, rocm_wire::get_agents(m.payload), out),
            rocm_wire::MSG_MARKERS => self.markers(conn, rocm_wire::get_markers(m.payload), out),
            rocm_wire::MSG_STREAMS => {
                let c = self.kit.conns.entry(conn).or_default();
                for u in rocm_wire::get_streams(m.payload) {
                    c.stream_of.insert(u.correlation as u32, u.stream);
                }
            }
            _ => {}
        }
    }

    /// Closes the connection's open ranges and reports an agent that did not finish.
    fn end_conn(&mut self, conn: u64, out: &mut Emitter) {
        let Some(c) = self.kit.conns.remove(&conn) else { return };
        let (a, pid) = (&c.agent, c.agent.pid);
        if a.hello && !a.bye && !a.refused && c.api.is_some() {
            self.kit.counts.unfinished += 1;
            self.kit.log.warn(&format!(
                "process {} ended without flushing its ROCm buffers (killed, or exited through _exit); \
                 device work of its last moments may be missing",
                pid
            ));
        }
        for (tid, open) in c.ranges {
            for (start, name) in open {
                out.emit(&Record::Range(
                    Annotation::default().pid(pid).tid(tid).start(start).end(start).name(name),
                ));
            }
        }
    }

    fn into_own(self) -> Stats {
        self.stats
    }
}
