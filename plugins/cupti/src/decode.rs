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
use xpuprof_toolbox::normalise::{self, ModuleMap};
use xpuprof_toolbox::python::{PyCounts, PyFrames};
use xpuprof_toolbox::Interner;

use crate::wire::launches::Launch;
use crate::wire::{self, Reader};
use xpuprof_toolbox::agent_host::AgentStacks;

/// The frame of return address `ra` in connection `c`'s process: a Python frame the agent
/// named, else the module and offset it falls in.
fn conn_frame(c: &mut Conn, strs: &mut Interner, out: &mut Emitter, ra: u64) -> FrameId {
    if let Some(f) = c.python.frame(strs, out, ra) {
        return f;
    }
    normalise::return_address_frame(strs, out, c.pid, &c.maps, ra)
}

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
    /// Records of a kind this decoder does not use.
    pub skipped_kinds: u64,
    /// Records smaller than every known version of their kind.
    pub unknown_versions: u64,
    /// Records CUPTI dropped.
    pub dropped: u64,
    /// Connections that ended without the agent's final message.
    pub unfinished: u64,
    /// Agents that reported an error instead of tracing.
    pub agent_errors: u64,
    /// Agents refused for speaking another wire protocol.
    pub refused: u64,
    /// Messages the agents' channels dropped.
    pub lost_chunks: u64,
    /// Python frames in the launch stacks.
    pub python: PyCounts,
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
pub(crate) struct Conn {
    pub(crate) pid: u32,
    pub(crate) cupti_version: u32,
    pub(crate) monotonic: bool,
    agent_stacks: bool,
    /// The agent calls the trampoline: the eBPF source sends the launch stacks.
    trampoline_stacks: bool,
    api_from_callbacks: bool,
    maps: ModuleMap,
    python: PyFrames,
    pub(crate) strings: IdMap<u64, String>,
    pub(crate) api_names: IdMap<(u8, u32), ApiName>,
    pub(crate) devices: IdMap<u32, DeviceId>,
    pub(crate) ctx_device: IdMap<u32, u32>,
    pub(crate) streams: IdMap<(u32, u32), StreamId>,
    /// Device ops waiting for their device's definition.
    pub(crate) pending: Vec<Parked>,
    pub(crate) open_ranges: IdMap<u32, (u64, StrId, StrId, u32)>,
    /// CUDA graph nodes: which call built each one.
    pub(crate) graphs: crate::graphs::GraphNodes,
    bye: bool,
    hello: bool,
    /// The agent speaks another wire protocol: the rest of its stream is ignored.
    refused: bool,
}

/// Decoder state shared by all connections.
#[derive(Debug)]
pub struct Decoder {
    /// Definitions (strings, threads, modules, frames, stacks), each emitted once.
    pub(crate) strs: Interner,
    /// Stacks by (process, the agent's stack hash).
    stacks: AgentStacks,
    pub(crate) devices_by_uuid: IdMap<[u8; 16], DeviceId>,
    pub(crate) next_device: u32,
    pub(crate) next_stream: u32,
    pub(crate) conns: IdMap<u64, Conn>,
    /// Counters.
    pub stats: Stats,
    pub(crate) log: Logger,
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
            strs: Interner::default(),
            stacks: AgentStacks::default(),
            devices_by_uuid: IdMap::default(),
            next_device: 1,
            next_stream: 1,
            conns: IdMap::default(),
            stats: Stats::default(),
            log,
        }
    }

    /// Decodes every complete message at the front of `buf` for connection `conn`; returns the
    /// number of bytes consumed (a partial message at the end is left for the next call).
    pub fn feed(&mut self, conn: u64, buf: &[u8], out: &mut Emitter) -> usize {
        let (msgs, used) = wire::split_messages(buf);
        for m in msgs {
            self.message(conn, m, out);
        }
        used
    }

    fn message(&mut self, conn: u64, m: wire::Message<'_>, out: &mut Emitter) {
        let mut r = Reader::new(m.payload);
        if m.ty != wire::MSG_HELLO && self.conns.get(&conn).is_some_and(|c| c.refused) {
            return;
        }
        match m.ty {
            wire::MSG_HELLO => self.hello(conn, m.payload, out),
            wire::MSG_MODULES => self.modules_msg(conn, m.payload),
            wire::MSG_LAUNCHES => self.launches(conn, m.payload, out),
            wire::MSG_RECORDS => self.activity(conn, m.payload, out),
            wire::MSG_STRINGS => self.strings_msg(conn, m.payload),
            wire::MSG_API_NAMES => self.api_names_msg(conn, m.payload),
            wire::MSG_DROPPED => {
                let (count, time) = (r.u64(), r.u64());
                let c = self.conns.entry(conn).or_default();
                let pid = c.pid;
                self.stats.dropped += count;
                let cause = self.strs.string(out, LOSS_DROPPED);
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
            wire::MSG_ERROR => {
                self.stats.agent_errors += 1;
                let pid = self.conns.get(&conn).map(|c| c.pid).unwrap_or(0);
                self.log.error(&format!("process {pid}: {}", String::from_utf8_lossy(m.payload)));
            }
            wire::MSG_LOST_BYTES => {
                let (chunks, bytes) = (r.u64(), r.u64());
                let pid = self.conns.get(&conn).map(|c| c.pid).unwrap_or(0);
                self.stats.lost_chunks += chunks;
                self.log.warn(&format!(
                    "process {pid}: the agent dropped {chunks} messages ({bytes} bytes) because the host was gone or too slow"
                ));
                let cause = self.strs.string(out, LOSS_AGENT_CHANNEL);
                out.emit(&Record::Loss(
                    Loss::default().pid(pid).time(xpuprof_sdk::clock::now_ns()).cause(cause).count(chunks),
                ));
            }
            wire::MSG_GRAPH_NODE => self.conns.entry(conn).or_default().graphs.message(m.payload),
            wire::MSG_PY_FRAMES => self.conns.entry(conn).or_default().python.define(m.payload),
            wire::MSG_PY_COUNTS => self.stats.python.add(m.payload),
            wire::MSG_BYE => {
                self.conns.entry(conn).or_default().bye = true;
            }
            _ => {}
        }
    }

    fn hello(&mut self, conn: u64, payload: &[u8], out: &mut Emitter) {
        let h = wire::Hello::decode(payload);
        let c = self.conns.entry(conn).or_default();
        c.pid = h.pid;
        c.hello = true;
        if let Err(e) = h.check() {
            // Another build's agent: its records would decode wrongly. Refuse the connection.
            c.refused = true;
            self.stats.refused += 1;
            self.log.error(&e.to_string());
            return;
        }
        c.cupti_version = h.runtime_version;
        c.monotonic = h.has(wire::FLAG_MONOTONIC_TIMESTAMPS);
        c.agent_stacks = h.has(wire::FLAG_AGENT_STACKS);
        c.trampoline_stacks = h.has(wire::FLAG_TRAMPOLINE_STACKS);
        c.api_from_callbacks = h.has(wire::FLAG_API_FROM_CALLBACKS);
        self.stats.processes += 1;
        let (pid, version, monotonic) = (h.pid, h.runtime_version, c.monotonic);
        let command = self.strs.string(out, &h.command);
        out.emit(&Record::Process(ProcessDef::default().pid(pid).ppid(parent_of(pid)).command(command)));
        if version != 0 && !monotonic {
            self.log.info(&format!(
                "process {pid}: CUPTI timestamp callback unavailable; GPU times converted from paired clock samples"
            ));
        }
    }

    fn modules_msg(&mut self, conn: u64, payload: &[u8]) {
        self.conns.entry(conn).or_default().maps = ModuleMap::new(wire::maps::decode_modules(payload));
    }

    fn strings_msg(&mut self, conn: u64, payload: &[u8]) {
        let c = self.conns.entry(conn).or_default();
        c.strings.extend(wire::names::parse_strings(payload));
    }

    fn api_names_msg(&mut self, conn: u64, payload: &[u8]) {
        let c = self.conns.entry(conn).or_default();
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
        let Some(c) = self.conns.get_mut(&conn) else { return (StrId::NONE, ApiKind::Unknown) };
        match c.api_names.get(&(domain, cbid)) {
            Some(ApiName::Id(id, kind)) => (*id, *kind),
            Some(ApiName::Text(t)) => {
                let t = t.clone();
                let kind = crate::api_kind::classify(&t);
                let id = self.strs.string(out, &t);
                if let Some(c) = self.conns.get_mut(&conn) {
                    c.api_names.insert((domain, cbid), ApiName::Id(id, kind));
                }
                (id, kind)
            }
            None => (StrId::NONE, ApiKind::Unknown),
        }
    }

    pub(crate) fn thread(&mut self, pid: u32, tid: u32, out: &mut Emitter) {
        if tid != 0 {
            self.strs.thread(out, pid, tid, "");
        }
    }

    fn launches(&mut self, conn: u64, payload: &[u8], out: &mut Emitter) {
        let c = self.conns.entry(conn).or_default();
        let pid = c.pid;
        let frame = |strs: &mut Interner, out: &mut Emitter, ra| conn_frame(c, strs, out, ra);
        let (tid, calls) = self.stacks.read(&mut self.strs, out, pid, payload, frame);
        for l in &calls {
            self.launch_entry(conn, pid, tid, l, out);
        }
    }

    fn launch_entry(&mut self, conn: u64, pid: u32, tid: u32, l: &Launch, out: &mut Emitter) {
        let Launch { domain, api_id: cbid, correlation: corr, result, time, stack: hash, end, .. } = *l;
        let (api, kind) = self.api_name(conn, domain, cbid, out);
        let correlation = Correlation { backend: backend::CUDA, id: corr as u64 };
        let (stacks, elsewhere, calls, recording) = self
            .conns
            .get_mut(&conn)
            .map(|c| {
                (c.agent_stacks, c.trampoline_stacks, c.api_from_callbacks, c.graphs.take_recording(corr))
            })
            .unwrap_or((true, false, false, false));
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
        // With stacks only from the eBPF source, the site carries no stack: it tells the host
        // to wait for that source's stack of this launch.
        if stacks || elsewhere {
            let stack = match stacks {
                true => self.stacks.get(pid, hash),
                false => StackId::NONE,
            };
            out.emit(&Record::LaunchSite(
                LaunchSite::default()
                    .pid(pid)
                    .tid(tid)
                    .time(time)
                    .correlation(correlation)
                    .api(api)
                    .stack(stack)
                    .recording(recording),
            ));
            if stacks {
                self.stats.launch_sites += 1;
            }
        }
    }

    fn activity(&mut self, conn: u64, payload: &[u8], out: &mut Emitter) {
        for rec in wire::records::split(payload) {
            crate::activity::record(self, conn, rec, out);
        }
    }

    /// Ends connection `conn`: flushes device work still waiting for its device and reports
    /// an agent that did not finish cleanly.
    pub fn finish(&mut self, conn: u64, out: &mut Emitter) {
        crate::activity::flush_pending(self, conn, out);
        let Some(c) = self.conns.remove(&conn) else { return };
        if c.graphs.forgotten > 0 || c.graphs.malformed > 0 {
            self.log.warn(&format!(
                "process {}: {} CUDA graph nodes forgotten at the bound of {} (their replays show the replay stack only), {} malformed graph-node messages",
                c.pid,
                c.graphs.forgotten,
                crate::graphs::MAX_NODES,
                c.graphs.malformed
            ));
        }
        if c.graphs.joined_by_kernel > 0 {
            self.log.info(&format!(
                "process {}: {} replayed kernels of child graphs (nodes CUPTI does not report, flattened at instantiation) joined to the launch that captured their kernel, by its name",
                c.pid, c.graphs.joined_by_kernel
            ));
        }
        if c.graphs.ambiguous_kernel > 0 {
            self.log.warn(&format!(
                "process {}: {} replayed kernels of child graphs show no capture stack: CUPTI does not report their nodes (flattened at instantiation), and their kernel was captured by several calls",
                c.pid, c.graphs.ambiguous_kernel
            ));
        }
        if c.hello && !c.bye && !c.refused && c.cupti_version != 0 {
            self.stats.unfinished += 1;
            self.log.warn(&format!(
                "process {} ended without flushing its CUPTI buffers (killed, or exited through _exit); \
                 device work of its last moments may be missing",
                c.pid
            ));
        }
        for (_, (start, name, domain, tid)) in c.open_ranges {
            out.emit(&Record::Range(
                Annotation::default().pid(c.pid).tid(tid).start(start).end(start).name(name).domain(domain),
            ));
        }
    }

    /// Emits the end-of-session losses (unknown record versions).
    pub fn finish_all(&mut self, out: &mut Emitter) {
        let conns: Vec<u64> = self.conns.keys().copied().collect();
        for c in conns {
            self.finish(c, out);
        }
        if self.stats.unknown_versions > 0 {
            let cause = self.strs.string(out, LOSS_UNKNOWN_VERSION);
            let time = xpuprof_sdk::clock::now_ns();
            out.emit(&Record::Loss(
                Loss::default().time(time).cause(cause).count(self.stats.unknown_versions),
            ));
            self.stats.unknown_versions = 0;
        }
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

fn parent_of(pid: u32) -> u32 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    stat.rsplit_once(')')
        .and_then(|(_, rest)| rest.split_whitespace().nth(1))
        .and_then(|p| p.parse().ok())
        .unwrap_or(0)
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
