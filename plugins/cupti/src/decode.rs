//! Decodes the agents' streams ([`crate::wire`]) into SDK records.
//!
//! One [`Decoder`] serves every connection of a session (one per CUDA process), so all
//! definitions share one id space. Launch stacks arrive as raw return addresses plus the
//! process's module map; they become `ModuleDef` + `FrameDef::default().kind(FileOffset)` (address =
//! return address − 1, the call instruction, − mapping start + mapping file offset) so the host
//! can symbolise them after the process is gone. Activity records are decoded in
//! [`crate::activity`].

use xpuprof_sdk::hash::IdMap;

use xpuprof_sdk::model::*;
use xpuprof_sdk::{Emitter, Logger};
use xpuprof_toolbox::agent_host::{AgentConn, AgentDecoder, Conn as KitConn, KitDecoder, Step};

use crate::wire::launches::Launch;
use crate::wire::{self, Hello, Reader};

/// Counters of this backend (the kit's, shared with every agent-backed decoder, are in
/// `AgentDecoder::counts`).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Stats {
    /// API calls emitted.
    pub api_calls: u64,
    /// Records of a kind this decoder does not use.
    pub skipped_kinds: u64,
    /// Records smaller than every known version of their kind.
    pub unknown_versions: u64,
}

/// An API name, interned on first use.
#[derive(Debug, Clone)]
pub(crate) enum ApiName {
    Text(String),
    Id(StrId, ApiKind),
}

/// A device op waiting for its device's definition: device ordinal, native stream, a peer
/// copy's source and destination ordinals, the op.
pub(crate) type Parked = (u32, Option<u32>, Option<(u32, u32)>, DeviceOp);

/// Per-connection (per-process) state.
#[derive(Debug, Default)]
pub struct Conn {
    /// What the kit's messages said (process, hello, module map, strings, Python frames).
    pub(crate) agent: AgentConn,
    pub(crate) monotonic: bool,
    api_from_callbacks: bool,
    pub(crate) api_names: IdMap<(u8, u32), ApiName>,
    pub(crate) devices: IdMap<u32, DeviceId>,
    pub(crate) ctx_device: IdMap<u32, u32>,
    pub(crate) streams: IdMap<(u32, u32), StreamId>,
    /// Device ops waiting for their device's definition.
    pub(crate) pending: Vec<Parked>,
    pub(crate) open_ranges: IdMap<u32, (u64, StrId, StrId, u32)>,
    /// CUDA graph nodes: which call built each one.
    pub(crate) graphs: crate::graphs::GraphNodes,
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
    pub(crate) devices_by_uuid: IdMap<[u8; 16], DeviceId>,
    pub(crate) next_device: u32,
    pub(crate) next_stream: u32,
    /// This backend's counters.
    pub stats: Stats,
}

/// Cause strings of the losses this plugin reports.
pub const LOSS_DROPPED: &str = "cupti dropped records";
/// Messages an agent's channel dropped (host gone or too slow).
pub const LOSS_AGENT_CHANNEL: &str = "cupti agent messages dropped";
/// Records of a version this decoder does not know.
pub const LOSS_UNKNOWN_VERSION: &str = "cupti records of an unknown version";

impl Decoder {
    /// A decoder logging through `log`.
    pub fn new(log: Logger) -> Self {
        Self {
            kit: AgentDecoder::new(log, LOSS_AGENT_CHANNEL),
            devices_by_uuid: IdMap::default(),
            next_device: 1,
            next_stream: 1,
            stats: Stats::default(),
        }
    }

    fn hello(&mut self, conn: u64, h: &Hello) {
        let c = self.kit.conns.entry(conn).or_default();
        c.monotonic = c.agent.has(wire::FLAG_MONOTONIC_TIMESTAMPS);
        c.api_from_callbacks = c.agent.has(wire::FLAG_API_FROM_CALLBACKS);
        self.kit.counts.processes += 1;
        if h.runtime_version != 0 && !c.monotonic {
            self.kit.log.info(&format!(
                "process {}: CUPTI timestamp callback unavailable; GPU times converted from paired clock samples",
                h.pid
            ));
        }
    }

    fn api_names_msg(&mut self, conn: u64, payload: &[u8]) {
        let c = self.kit.conns.entry(conn).or_default();
        for (domain, cbid, name) in wire::names::parse_api_names(payload) {
            let name = api_display_name(&name).to_owned();
            c.api_names.insert((domain as u8, cbid), ApiName::Text(name));
        }
    }

    /// The interned name of API `cbid` of `domain` and what the call does, or none (and
    /// [`ApiKind::Unknown`]) if the agent never named it.
    pub(crate) fn api_name(
        &mut self,
        conn: u64,
        domain: u8,
        cbid: u32,
        out: &mut Emitter,
    ) -> (StrId, ApiKind) {
        let Some(c) = self.kit.conns.get_mut(&conn) else { return (StrId::NONE, ApiKind::Unknown) };
        match c.api_names.get(&(domain, cbid)) {
            Some(ApiName::Id(id, kind)) => (*id, *kind),
            Some(ApiName::Text(t)) => {
                let t = t.clone();
                let kind = crate::api_kind::classify(&t);
                let id = self.kit.strs.string(out, &t);
                if let Some(c) = self.kit.conns.get_mut(&conn) {
                    c.api_names.insert((domain, cbid), ApiName::Id(id, kind));
                }
                (id, kind)
            }
            None => (StrId::NONE, ApiKind::Unknown),
        }
    }

    pub(crate) fn thread(&mut self, pid: u32, tid: u32, out: &mut Emitter) {
        if tid != 0 {
            self.kit.strs.thread(out, pid, tid, "");
        }
    }

    fn launch_entry(&mut self, conn: u64, pid: u32, tid: u32, l: &Launch, out: &mut Emitter) {
        let Launch { domain, api_id: cbid, correlation: corr, result, time, end, .. } = *l;
        let (api, kind) = self.api_name(conn, domain, cbid, out);
        let correlation = Correlation { backend: backend::CUDA, id: corr as u64 };
        let (calls, recording) = self
            .kit
            .conns
            .get_mut(&conn)
            .map(|c| (c.api_from_callbacks, c.graphs.take_recording(corr)))
            .unwrap_or((false, false));
        if calls {
            let end = if end < time { time } else { end };
            out.emit(&Record::ApiCall(
                ApiCall::default()
                    .pid(pid)
                    .tid(tid)
                    .start(time)
                    .end(end)
                    .name(api)
                    .kind(kind)
                    .correlation(Some(correlation))
                    .result(result as i64),
            ));
            self.stats.api_calls += 1;
        }
        if let Some(site) = self.kit.launch_site(conn, tid, l, correlation, api) {
            out.emit(&Record::LaunchSite(site.recording(recording)));
        }
    }

    fn activity(&mut self, conn: u64, payload: &[u8], out: &mut Emitter) {
        for rec in wire::records::split(payload) {
            crate::activity::record(self, conn, rec, out);
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
            Step::Hello(h) => return self.hello(conn, &h),
            Step::Launches { pid, tid, launches } => {
                for l in &launches {
                    self.launch_entry(conn, pid, tid, l, out);
                }
                return;
            }
            Step::Message(m) => m,
        };
        let mut r = Reader::new(m.payload);
        match m.ty {
            wire::MSG_RECORDS => self.activity(conn, m.payload, out),
            wire::MSG_API_NAMES => self.api_names_msg(conn, m.payload),
            wire::MSG_DROPPED => {
                let (count, time) = (r.u64(), r.u64());
                let pid = self.kit.pid(conn);
                self.kit.counts.dropped += count;
                let cause = self.kit.strs.string(out, LOSS_DROPPED);
                out.emit(&Record::Loss(Loss::default().pid(pid).time(time).cause(cause).count(count)));
            }
            wire::MSG_CLOCK => {
                let (cupti, session) = (r.u64(), r.u64());
                out.emit(&Record::ClockSync(
                    ClockSync::default()
                        .domain(crate::activity::CUPTI_CLOCK)
                        .source_time(cupti)
                        .session_time(session),
                ));
            }
            wire::MSG_GRAPH_NODE => self.kit.conns.entry(conn).or_default().graphs.message(m.payload),
            _ => {}
        }
    }

    /// Flushes device work still waiting for its device, reports an agent that did not
    /// finish cleanly and closes its open ranges.
    fn end_conn(&mut self, conn: u64, out: &mut Emitter) {
        crate::activity::flush_pending(self, conn, out);
        let Some(c) = self.kit.conns.remove(&conn) else { return };
        let pid = c.agent.pid;
        if c.graphs.forgotten > 0 || c.graphs.malformed > 0 {
            self.kit.log.warn(&format!(
                "process {}: {} CUDA graph nodes forgotten at the bound of {} (their replays show the replay stack only), {} malformed graph-node messages",
                pid,
                c.graphs.forgotten,
                crate::graphs::MAX_NODES,
                c.graphs.malformed
            ));
        }
        if c.graphs.joined_by_kernel > 0 {
            self.kit.log.info(&format!(
                "process {}: {} replayed kernels of child graphs (nodes CUPTI does not report, flattened at instantiation) joined to the launch that captured their kernel, by its name",
                pid, c.graphs.joined_by_kernel
            ));
        }
        if c.graphs.ambiguous_kernel > 0 {
            self.kit.log.warn(&format!(
                "process {}: {} replayed kernels of child graphs show no capture stack: CUPTI does not report their nodes (flattened at instantiation), and their kernel was captured by several calls",
                pid, c.graphs.ambiguous_kernel
            ));
        }
        let a = &c.agent;
        if a.hello && !a.bye && !a.refused && a.runtime_version != 0 {
            self.kit.counts.unfinished += 1;
            self.kit.log.warn(&format!(
                "process {} ended without flushing its CUPTI buffers (killed, or exited through _exit); \
                 device work of its last moments may be missing",
                pid
            ));
        }
        for (_, (start, name, domain, tid)) in c.open_ranges {
            out.emit(&Record::Range(
                Annotation::default().pid(pid).tid(tid).start(start).end(start).name(name).domain(domain),
            ));
        }
    }

    /// The loss of the records of unknown versions.
    fn end_session(&mut self, out: &mut Emitter) {
        if self.stats.unknown_versions > 0 {
            let cause = self.kit.strs.string(out, LOSS_UNKNOWN_VERSION);
            let time = xpuprof_sdk::clock::now_ns();
            out.emit(&Record::Loss(
                Loss::default().time(time).cause(cause).count(self.stats.unknown_versions),
            ));
        }
    }

    fn into_own(self) -> Stats {
        self.stats
    }
}

/// `cudaLaunchKernel_v7000` → `cudaLaunchKernel` (CUPTI's callback names carry a version).
pub fn api_display_name(name: &str) -> &str {
    match name.rfind("_v") {
        Some(i) if i > 0 && name[i + 2..].bytes().all(|b| b.is_ascii_digit()) && name.len() > i + 2 => {
            &name[..i]
        }
        _ => name,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strips_cupti_version_suffix() {
        assert_eq!(api_display_name("cudaLaunchKernel_v7000"), "cudaLaunchKernel");
        assert_eq!(api_display_name("cudaLaunchKernel_ptsz_v7000"), "cudaLaunchKernel_ptsz");
        assert_eq!(api_display_name("cuLaunchKernel"), "cuLaunchKernel");
        assert_eq!(api_display_name("cuMemcpyHtoD_v2"), "cuMemcpyHtoD");
        assert_eq!(api_display_name("x_v"), "x_v");
    }
}
