//! Decodes the ROCm agents' streams into SDK records.
//!
//! One [`Decoder`] serves every connection of a session (one per process), so all definitions
//! share one id space. The common messages (hello, modules, launch sites, clock pairs, drops,
//! losses, names) are read here; the vendor records in [`crate::records`] (rocprofiler-sdk) and
//! [`crate::activity`] (roctracer); the agent's own messages through `xpuprof-rocm-wire`.
//!
//! Correlation: the key is (process, the tracing library's internal correlation id), as
//! `backend::ROCM`; the agent's launch entries carry its low 32 bits, and so do the device
//! records here, so both sides agree. Device timestamps stay in the library's clock domain
//! ([`SDK_CLOCK`]: CLOCK_BOOTTIME; [`ROCTRACER_CLOCK`]: ROCr's system clock) and are converted
//! by the host through the agent's clock pairs.

use xpuprof_rocm_wire::{self as rocm_wire, marker_op, Api};
use xpuprof_sdk::hash::IdMap;
use xpuprof_sdk::model::*;
use xpuprof_sdk::{Emitter, Logger};
use xpuprof_toolbox::agent_host::{AgentConn, AgentDecoder, Conn as KitConn, KitDecoder, Step};
use xpuprof_wire::launches;
use xpuprof_wire::names;
use xpuprof_wire::{self as wire, Hello, Reader};

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
    ranges: IdMap<u32, Vec<(u64, StrId)>>,
}

impl KitConn for Conn {
    fn agent(&self) -> &AgentConn {
        &self.agent
    }

    fn agent_mut(&mut self) -> &mut AgentConn {
        &mut self.agent
    }
}

/// Decoder state shared by all connections.
#[derive(Debug)]
pub struct Decoder {
    /// The kit's part: definitions, launch stacks, connections, the shared counters.
    pub kit: AgentDecoder<Conn>,
    next_device: u32,
    next_stream: u32,
    clocks_defined: [bool; 2],
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

    /// An accepted hello: a process that found a tracing library counts as traced.
    fn hello(&mut self, h: &Hello) {
        if h.runtime_version != 0 {
            self.kit.counts.processes += 1;
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
        let id = StreamId(self.next_stream);
        self.next_stream += 1;
        let def = StreamDef::default()
            .id(id)
            .device(device)
            .pid(self.pid(conn))
            .native_id(queue)
            .kind(QueueKind::HsaQueue);
        out.emit(&Record::Stream(def));
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
        let id = StreamId(self.next_stream);
        self.next_stream += 1;
        let def = StreamDef::default()
            .id(id)
            .device(device)
            .pid(self.pid(conn))
            .native_id(hip)
            .kind(QueueKind::HipStream)
            .parent(parent);
        out.emit(&Record::Stream(def));
        self.kit.conns.entry(conn).or_default().hip_streams.insert(hip, id);
        Some(id)
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

    fn launch(&mut self, conn: u64, pid: u32, tid: u32, l: launches::Launch, out: &mut Emitter) {
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
        if let Some(site) = self.kit.launch_site(conn, tid, &l, correlation, api) {
            out.emit(&Record::LaunchSite(site));
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

    fn step(&mut self, conn: u64, step: Step<'_>, out: &mut Emitter) {
        let m = match step {
            Step::Hello(h) => return self.hello(&h),
            Step::Launches { pid, tid, launches } => {
                for l in launches {
                    self.launch(conn, pid, tid, l, out);
                }
                return;
            }
            Step::Message(m) => m,
        };
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
