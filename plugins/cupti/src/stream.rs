//! What each message of an agent's stream does: the cupti decoder as the toolbox's
//! [`KitDecoder`] (the kit reads its own messages first), the hello, the API names, the launches
//! with their sites, the activity records (handed to [`crate::activity`]), drops and clock
//! pairs; a connection's end and the session's.

use xpuprof_sdk::model::*;
use xpuprof_sdk::Emitter;
use xpuprof_toolbox::agent_host::{AgentDecoder, KitDecoder};

use crate::decode::{api_display_name, ApiName, Conn, Decoder, Stats, LOSS_DROPPED, LOSS_UNKNOWN_VERSION};
use crate::wire::launches::Launch;
use crate::wire::{self, Hello, Message, Reader};

impl Decoder {
    fn api_names_msg(&mut self, conn: u64, payload: &[u8]) {
        let c = self.kit.conns.entry(conn).or_default();
        for (domain, cbid, name) in wire::names::parse_api_names(payload) {
            let name = api_display_name(&name).to_owned();
            c.api_names.insert((domain as u8, cbid), ApiName::Text(name));
        }
    }

    fn pc_message(&mut self, conn: u64, ty: u8, payload: &[u8], out: &mut Emitter) {
        let pid = self.kit.pid(conn);
        let AgentDecoder { strs, conns, log, .. } = &mut self.kit;
        let devices = conns.get(&conn).map(|c| &c.devices);
        let device = |d: u32| devices.and_then(|m| m.get(&d)).copied().unwrap_or(DeviceId::NONE);
        self.pc.message(conn, pid, ty, payload, strs, device, &mut |w| log.warn(&w), out);
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

    fn launch(&mut self, conn: u64, pid: u32, tid: u32, l: &Launch, out: &mut Emitter) {
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

    fn message(&mut self, conn: u64, m: Message<'_>, out: &mut Emitter) {
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
            xpuprof_cupti_wire::MSG_DEVICE => crate::devices::message(self, conn, m.payload, out),
            xpuprof_cupti_wire::MSG_COLLECTIVE_ARGS => {
                self.kit.conns.entry(conn).or_default().collectives.message(m.payload)
            }
            xpuprof_cupti_wire::MSG_GRAPH_NODE => {
                self.kit.conns.entry(conn).or_default().graphs.message(m.payload)
            }
            ty => self.pc_message(conn, ty, m.payload, out),
        }
    }

    /// A window of `conn` closed: its device work still waiting for a device description goes
    /// to this window's outputs now ([`crate::devices`]).
    fn window_closing(&mut self, conn: u64, out: &mut Emitter) {
        let waited = crate::devices::flush_pending(self, conn, out);
        if waited > 0 {
            self.kit.log.debug(&format!(
                "process {}: {waited} device operations of the closing window had no device description; emitted under the devices known",
                self.kit.pid(conn)
            ));
        }
    }

    /// Flushes device work still waiting for its device, reports an agent that did not
    /// finish cleanly and closes its open ranges.
    fn end_conn(&mut self, conn: u64, out: &mut Emitter) {
        crate::devices::flush_pending(self, conn, out);
        self.kit.end_window(conn, xpuprof_sdk::clock::now_ns(), out);
        let Some(c) = self.kit.conns.remove(&conn) else { return };
        let pid = c.agent.pid;
        if let Some(line) = c.collectives.losses(pid) {
            self.kit.log.warn(&line);
        }
        if c.graphs.forgotten > 0 || c.graphs.malformed > 0 {
            self.kit.log.warn(&format!(
                "process {}: {} CUDA graph nodes forgotten at the bound of {} (their replays show the replay stack only), {} malformed graph-node messages",
                pid,
                c.graphs.forgotten,
                crate::graphs::MAX_NODES,
                c.graphs.malformed
            ));
        }
        if c.graphs.joined_by_place > 0 {
            self.kit.log.info(&format!(
                "process {}: {} replayed kernels of child graphs (nodes CUPTI does not report, flattened at instantiation) joined to the call that added their child-graph node, by their place in the executable graph",
                pid, c.graphs.joined_by_place
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
        if let Some(line) = self.pc.finish(&mut self.kit.strs, out) {
            self.kit.log.info(&line);
        }
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
