//! The part of a decoder that every agent built on the kit shares: the kit's messages (hello and
//! its protocol check, module map, strings, Python frames, errors, dropped messages, goodbye,
//! launch messages and their stacks) read once, per connection, before a backend sees the rest.
//!
//! A backend's decoder holds an [`AgentDecoder`] (definitions, launch stacks, connections,
//! counters) whose connections are its own per-process state with an [`AgentConn`] in it, and
//! reads the [`Step`]s the kit hands it: an accepted hello, the launches of a launch message (their
//! stacks already defined), and the messages the kit does not know (the vendor's records).
//!
//! ```no_run
//! # use xpuprof_sdk::Emitter;
//! # use xpuprof_toolbox::agent_host::{AgentConn, AgentDecoder, Conn, Step};
//! #[derive(Default)]
//! struct MyConn {
//!     agent: AgentConn,
//! }
//! impl Conn for MyConn {
//!     fn agent(&self) -> &AgentConn { &self.agent }
//!     fn agent_mut(&mut self) -> &mut AgentConn { &mut self.agent }
//! }
//! struct MyDecoder {
//!     kit: AgentDecoder<MyConn>,
//! }
//! impl MyDecoder {
//!     fn feed(&mut self, conn: u64, buf: &[u8], out: &mut Emitter) -> usize {
//!         AgentDecoder::feed(self, conn, buf, out, |d| &mut d.kit, Self::step)
//!     }
//!     fn step(&mut self, conn: u64, step: Step<'_>, out: &mut Emitter) {
//!         match step {
//!             Step::Hello(_) => self.kit.counts.processes += 1,
//!             Step::Launches { .. } => { /* API calls and launch sites */ }
//!             Step::Message(_) => { /* the vendor's records */ }
//!         }
//!     }
//! }
//! ```

use xpuprof_sdk::hash::IdMap;
use xpuprof_sdk::model::{
    CaptureWindow, Correlation, FrameId, LaunchSite, Loss, Record, StackId, StrId, WindowOpener,
};
use xpuprof_sdk::{Emitter, Logger};
use xpuprof_wire::launches::Launch;
use xpuprof_wire::{self as wire, Hello, Message, Reader};

use super::stacks::AgentStacks;
use crate::normalise::{self, ModuleMap};
use crate::python::{PyCounts, PyFrames};
use crate::Interner;

/// What the kit's messages say about one connection (one process of the session).
#[derive(Debug, Default)]
pub struct AgentConn {
    /// The process (from its hello).
    pub pid: u32,
    /// The hello arrived.
    pub hello: bool,
    /// The agent writes another wire protocol: the rest of its stream is ignored.
    pub refused: bool,
    /// The wire protocol the agent writes (its hello's; launch messages are read by it).
    pub protocol: u32,
    /// The agent's final message arrived (it flushed everything).
    pub bye: bool,
    /// The vendor library's version the hello named (0: the agent found none to trace with).
    pub runtime_version: u32,
    /// The hello's `FLAG_*` bits.
    pub flags: u32,
    /// The process's module map (`MSG_MODULES`).
    pub maps: ModuleMap,
    /// Strings behind the agent's pointers (`MSG_STRINGS`).
    pub strings: IdMap<u64, String>,
    /// The Python frames the agent named (`MSG_PY_FRAMES`).
    pub python: PyFrames,
    /// A window the program's markers opened and that is not closed yet: its start and opener
    /// (`MSG_WINDOW`).
    pub window: Option<(u64, WindowOpener)>,
}

impl AgentConn {
    /// True when the hello carried `flag` (`xpuprof_wire::FLAG_*`).
    pub fn has(&self, flag: u32) -> bool {
        self.flags & flag != 0
    }

    /// The frame of return address `ra`: a Python frame the agent named, else the module and
    /// offset it falls in.
    pub fn frame(&self, strs: &mut Interner, out: &mut Emitter, ra: u64) -> FrameId {
        match self.python.frame(strs, out, ra) {
            Some(f) => f,
            None => normalise::return_address_frame(strs, out, self.pid, &self.maps, ra),
        }
    }
}

/// A backend's per-connection state, with the kit's part in it.
pub trait Conn: Default + Send + 'static {
    /// The kit's part.
    fn agent(&self) -> &AgentConn;
    /// The kit's part, to change.
    fn agent_mut(&mut self) -> &mut AgentConn;
}

/// The connection of a backend that keeps nothing of its own per connection: the kit's part.
impl Conn for AgentConn {
    fn agent(&self) -> &AgentConn {
        self
    }
    fn agent_mut(&mut self) -> &mut AgentConn {
        self
    }
}

/// Counters every agent-backed decoder keeps (the kit moves some, the backend the others).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct AgentCounts {
    /// Processes that connected (and traced: the backend decides).
    pub processes: u64,
    /// Device operations emitted.
    pub device_ops: u64,
    /// Kernels among them.
    pub kernels: u64,
    /// Launch sites emitted with the agent's stack.
    pub launch_sites: u64,
    /// Records the vendor library dropped.
    pub dropped: u64,
    /// Agents that reported an error instead of tracing.
    pub agent_errors: u64,
    /// Agents refused for writing another wire protocol.
    pub refused: u64,
    /// Connections that ended without the agent's final message.
    pub unfinished: u64,
    /// Messages the agents' channels dropped.
    pub lost_chunks: u64,
    /// Python frames in the launch stacks.
    pub python: PyCounts,
}

impl AgentCounts {
    /// `label: N process(es), N device operations (N kernels), N launch sites`, the start of a
    /// backend's end-of-session line.
    pub fn summary(&self, label: &str) -> String {
        format!(
            "{label}: {} process(es), {} device operations ({} kernels), {} launch sites",
            self.processes, self.device_ops, self.kernels, self.launch_sites
        )
    }
}

/// What the kit hands the backend, message by message, after its own part.
#[derive(Debug)]
pub enum Step<'a> {
    /// An accepted hello (the connection's [`AgentConn`] is filled in, its process defined).
    Hello(Hello),
    /// The launches of a launch message, in order, by thread `tid` of `pid` (the thread and every
    /// new stack already defined: [`AgentDecoder::launch_site`] gives each its site).
    Launches {
        /// The process.
        pid: u32,
        /// The launching thread (0: not known).
        tid: u32,
        /// The launches.
        launches: Vec<Launch>,
    },
    /// A message the kit does not read: the backend's own.
    Message(Message<'a>),
}

/// The kit's side of a decoder: definitions, launch stacks, connections and counters, shared by
/// every connection of the session (one id space).
#[derive(Debug)]
pub struct AgentDecoder<C> {
    /// Definitions (strings, processes, threads, modules, frames, stacks), each emitted once.
    pub strs: Interner,
    /// Stacks by (process, the agent's stack hash).
    pub stacks: AgentStacks,
    /// Per-connection (per-process) state.
    pub conns: IdMap<u64, C>,
    /// Counters.
    pub counts: AgentCounts,
    /// Logs.
    pub log: Logger,
    /// The loss cause of messages an agent's channel dropped (`cupti agent messages dropped`).
    channel_loss: &'static str,
}

impl<C: Conn> AgentDecoder<C> {
    /// The kit's side of a decoder logging through `log`; `channel_loss` names the loss of
    /// messages an agent's channel dropped.
    pub fn new(log: Logger, channel_loss: &'static str) -> Self {
        Self {
            strs: Interner::default(),
            stacks: AgentStacks::default(),
            conns: IdMap::default(),
            counts: AgentCounts::default(),
            log,
            channel_loss,
        }
    }

    /// A decoder's `feed`: decodes the complete messages at the front of `buf` from connection
    /// `conn`, the kit's part in `kit(d)`, the rest by `step`; returns the bytes consumed (a
    /// partial message at the end is offered again with what follows it).
    pub fn feed<D>(
        d: &mut D,
        conn: u64,
        buf: &[u8],
        out: &mut Emitter,
        kit: fn(&mut D) -> &mut Self,
        step: fn(&mut D, u64, Step<'_>, &mut Emitter),
    ) -> usize {
        Self::feed_with(d, conn, buf, out, kit, step, |_, _, _| {})
    }

    /// [`feed`](Self::feed), calling `closing` when a closing window edge of `conn` arrives,
    /// before the kit reads it: the window's records are all in, and what the backend still
    /// holds of them (work waiting for a definition) goes to this window's outputs.
    pub fn feed_with<D>(
        d: &mut D,
        conn: u64,
        buf: &[u8],
        out: &mut Emitter,
        kit: fn(&mut D) -> &mut Self,
        step: fn(&mut D, u64, Step<'_>, &mut Emitter),
        closing: fn(&mut D, u64, &mut Emitter),
    ) -> usize {
        let (msgs, used) = wire::split_messages(buf);
        for m in msgs {
            if m.ty == wire::MSG_WINDOW
                && wire::control::WindowEdge::decode(m.payload).is_some_and(|e| !e.open)
            {
                closing(d, conn, out);
            }
            if let Some(s) = kit(d).take(conn, m, out) {
                step(d, conn, s, out);
            }
        }
        used
    }

    /// The kit's part of message `m` of connection `conn`; what is left for the backend.
    fn take<'a>(&mut self, conn: u64, m: Message<'a>, out: &mut Emitter) -> Option<Step<'a>> {
        let a = self.conns.entry(conn).or_default().agent_mut();
        if m.ty != wire::MSG_HELLO && a.refused {
            return None;
        }
        let pid = a.pid;
        match m.ty {
            wire::MSG_HELLO => {
                let h = Hello::decode(m.payload);
                a.pid = h.pid;
                a.hello = true;
                a.protocol = h.protocol;
                if let Err(e) = h.check() {
                    // Another build's agent: its records would decode wrongly.
                    a.refused = true;
                    self.counts.refused += 1;
                    self.log.error(&e.to_string());
                    return None;
                }
                a.runtime_version = h.runtime_version;
                a.flags = h.flags;
                self.strs.process(out, h.pid, parent_of(h.pid), &h.command);
                return Some(Step::Hello(h));
            }
            wire::MSG_MODULES => a.maps = ModuleMap::new(wire::maps::decode_modules(m.payload)),
            wire::MSG_STRINGS => a.strings.extend(wire::names::parse_strings(m.payload)),
            wire::MSG_PY_FRAMES => a.python.define(m.payload),
            wire::MSG_PY_FIRST_LINES => a.python.define_first_lines(m.payload),
            wire::MSG_PY_COUNTS => self.counts.python.add(m.payload),
            wire::MSG_BYE => a.bye = true,
            wire::MSG_WINDOW => {
                let e = wire::control::WindowEdge::decode(m.payload)?;
                let opener = match e.cause {
                    wire::control::CAUSE_PROFILER_API => Some(WindowOpener::CudaProfilerApi),
                    wire::control::CAUSE_NVTX => Some(WindowOpener::Nvtx),
                    _ => None,
                };
                // Windows the host opened are the host's to write; the program's markers' are
                // written here, one per process: with `end` 0 when it opens (the host follows it
                // in the other sources at once: flushed now), complete when it closes.
                let w = |start: u64, end: u64, o| {
                    CaptureWindow::default().start(start).end(end).opener(o).pid(pid)
                };
                match (e.open, opener) {
                    (true, Some(o)) => {
                        a.window = Some((e.time, o));
                        out.emit(&Record::Window(w(e.time, 0, o)));
                        out.flush();
                    }
                    (false, _) => {
                        if let Some((start, o)) = a.window.take() {
                            out.emit(&Record::Window(w(start, e.time.max(start), o)));
                        }
                        // The agent sends a window's records before its closing edge: once they
                        // are in the session, a host waiting for the close may go on.
                        out.flush();
                        super::control::window_closed();
                    }
                    _ => {}
                }
            }
            wire::MSG_ERROR => {
                self.counts.agent_errors += 1;
                self.log.error(&format!("process {pid}: {}", String::from_utf8_lossy(m.payload)));
            }
            wire::MSG_LOST_BYTES => {
                let mut r = Reader::new(m.payload);
                let (chunks, bytes) = (r.u64(), r.u64());
                self.counts.lost_chunks += chunks;
                self.log.warn(&format!(
                    "process {pid}: the agent dropped {chunks} messages ({bytes} bytes) because the host was gone or too slow"
                ));
                let cause = self.strs.string(out, self.channel_loss);
                let now = xpuprof_sdk::clock::now_ns();
                out.emit(&Record::Loss(Loss::default().pid(pid).time(now).cause(cause).count(chunks)));
            }
            wire::MSG_LAUNCHES => {
                let frame = |strs: &mut Interner, out: &mut Emitter, ra| a.frame(strs, out, ra);
                let name = |ra| a.python.name(ra);
                let who = (pid, a.protocol);
                let (tid, launches) = self.stacks.read(&mut self.strs, out, who, m.payload, frame, name);
                return Some(Step::Launches { pid, tid, launches });
            }
            _ => return Some(Step::Message(m)),
        }
        None
    }

    /// The site of launch `l` by thread `tid` of connection `conn`'s process, as its agent's hello
    /// decided: with the agent's stack (`FLAG_AGENT_STACKS`, counted), stack-less when only the
    /// eBPF source sends the stack (`FLAG_TRAMPOLINE_STACKS`: the host waits for that source's
    /// site of this launch), else none.
    pub fn launch_site(
        &mut self,
        conn: u64,
        tid: u32,
        l: &Launch,
        correlation: Correlation,
        api: StrId,
    ) -> Option<LaunchSite> {
        let a = self.conns.get(&conn)?.agent();
        let pid = a.pid;
        let stack = if a.has(wire::FLAG_AGENT_STACKS) {
            self.counts.launch_sites += 1;
            self.stacks.get(pid, l.stack)
        } else if a.has(wire::FLAG_TRAMPOLINE_STACKS) {
            StackId::NONE
        } else {
            return None;
        };
        Some(
            LaunchSite::default()
                .pid(pid)
                .tid(tid)
                .time(l.time)
                .correlation(correlation)
                .api(api)
                .stack(stack),
        )
    }

    /// Ends the window the program's markers opened in connection `conn`'s process, if one is
    /// still open (its process ended), at `end`.
    pub fn end_window(&mut self, conn: u64, end: u64, out: &mut Emitter) {
        let Some(a) = self.conns.get_mut(&conn).map(|c| c.agent_mut()) else { return };
        if let Some((start, o)) = a.window.take() {
            let pid = a.pid;
            out.emit(&Record::Window(
                CaptureWindow::default().start(start).end(end.max(start)).opener(o).pid(pid),
            ));
        }
    }

    /// The process of connection `conn` (0 before its hello).
    pub fn pid(&self, conn: u64) -> u32 {
        self.conns.get(&conn).map_or(0, |c| c.agent().pid)
    }

    /// The text connection `conn`'s agent defined for `ptr` (its strings message: a name the
    /// vendor's records point to), if it did.
    pub fn agent_string(&self, conn: u64, ptr: u64) -> Option<&str> {
        self.conns.get(&conn).and_then(|c| c.agent().strings.get(&ptr)).map(String::as_str)
    }

    /// [`agent_string`](Self::agent_string) interned, or `placeholder` where the agent defined
    /// no text for `ptr`.
    pub fn agent_text(&mut self, conn: u64, ptr: u64, placeholder: &str, out: &mut Emitter) -> StrId {
        let text = self.conns.get(&conn).and_then(|c| c.agent().strings.get(&ptr));
        self.strs.string(out, text.map_or(placeholder, String::as_str))
    }

    /// The connections still open, to end at the session's end.
    pub fn open(&self) -> Vec<u64> {
        self.conns.keys().copied().collect()
    }
}

/// The parent of process `pid` (0 when it is gone or unreadable).
pub fn parent_of(pid: u32) -> u32 {
    crate::procfs::parent_of(pid).unwrap_or(0)
}

#[cfg(test)]
pub(super) mod tests {
    use xpuprof_sdk::codec::decode_all;

    use super::*;

    /// A backend that notes what the kit hands it.
    struct Steps {
        kit: AgentDecoder<AgentConn>,
        seen: Vec<(u64, String)>,
    }

    impl Steps {
        fn step(&mut self, conn: u64, step: Step<'_>, _: &mut Emitter) {
            let what = match step {
                Step::Hello(h) => format!("hello {}", h.pid),
                Step::Launches { pid, tid, launches } => format!("launches {pid}/{tid}: {}", launches.len()),
                Step::Message(m) => format!("message {:#x}", m.ty),
            };
            self.seen.push((conn, what));
        }
    }

    fn hello(pid: u32, protocol: u32, flags: u32) -> Vec<u8> {
        let mut h = Hello::new(1, flags);
        (h.pid, h.protocol) = (pid, protocol);
        let mut out = Vec::new();
        h.encode(&mut out);
        out
    }

    #[test]
    fn the_kit_reads_its_messages_and_hands_on_the_rest_and_ignores_a_refused_agent() {
        let mut d = Steps {
            kit: AgentDecoder::new(Logger::stderr(), "test agent messages dropped"),
            seen: Vec::new(),
        };
        let mut out = Emitter::detached();
        let mut good = hello(4_000_001, wire::PROTOCOL, 0);
        wire::put_message(&mut good, wire::MSG_LOST_BYTES, &[&3u64.to_le_bytes(), &300u64.to_le_bytes()]);
        wire::put_message(&mut good, wire::MSG_BACKEND_FIRST, &[b"vendor"]);
        wire::put_message(&mut good, wire::MSG_BYE, &[]);
        let mut bad = hello(4_000_002, wire::PROTOCOL + 1, 0);
        wire::put_message(&mut bad, wire::MSG_BACKEND_FIRST, &[b"ignored"]);
        let half = good.len() - 3;
        // A message cut at the end of a read waits for the rest.
        let used = AgentDecoder::feed(&mut d, 1, &good[..half], &mut out, |d| &mut d.kit, Steps::step);
        assert!(used < half, "the cut message waits");
        let rest = AgentDecoder::feed(&mut d, 1, &good[used..], &mut out, |d| &mut d.kit, Steps::step);
        assert_eq!(used + rest, good.len());
        AgentDecoder::feed(&mut d, 2, &bad, &mut out, |d| &mut d.kit, Steps::step);
        assert_eq!(d.seen, [(1, "hello 4000001".to_string()), (1, "message 0x80".into())]);
        let c = &d.kit.counts;
        assert_eq!((c.refused, c.lost_chunks), (1, 3));
        assert!(d.kit.conns[&1].bye && d.kit.conns[&2].refused);
        let records = decode_all(&out.take_buffer()).unwrap();
        assert!(records.iter().any(|r| matches!(r, Record::Process(p) if p.pid == 4_000_001)));
        assert!(!records.iter().any(|r| matches!(r, Record::Process(p) if p.pid == 4_000_002)));
        assert!(records.iter().any(|r| matches!(r, Record::Loss(l) if l.count == 3 && l.pid == 4_000_001)));
    }

    #[test]
    fn windows_of_the_programs_markers_become_window_records_and_the_hosts_do_not() {
        use wire::control::{WindowEdge, CAUSE_HOST, CAUSE_NVTX, CAUSE_PROFILER_API};
        let mut d = Steps { kit: AgentDecoder::new(Logger::stderr(), "lost"), seen: Vec::new() };
        let mut out = Emitter::detached();
        let mut b = hello(4_000_003, wire::PROTOCOL, 0);
        for (open, cause, time) in [
            (true, CAUSE_HOST, 5),
            (false, CAUSE_HOST, 6),
            (true, CAUSE_PROFILER_API, 10),
            (false, CAUSE_PROFILER_API, 20),
            (true, CAUSE_NVTX, 30),
        ] {
            WindowEdge { open, cause, time, marker: "step".into() }.encode(&mut b);
        }
        AgentDecoder::feed(&mut d, 1, &b, &mut out, |d| &mut d.kit, Steps::step);
        d.kit.end_window(1, 45, &mut out);
        assert_eq!(d.seen.len(), 1, "the backend sees only the hello");
        let windows: Vec<CaptureWindow> = decode_all(&out.take_buffer())
            .unwrap()
            .into_iter()
            .filter_map(|r| if let Record::Window(w) = r { Some(w) } else { None })
            .collect();
        let w =
            |start, end, opener| CaptureWindow::default().start(start).end(end).opener(opener).pid(4_000_003);
        assert_eq!(
            windows,
            [
                w(10, 0, WindowOpener::CudaProfilerApi),
                w(10, 20, WindowOpener::CudaProfilerApi),
                w(30, 0, WindowOpener::Nvtx),
                w(30, 45, WindowOpener::Nvtx),
            ],
            "an open window first (end 0), then the complete one"
        );
    }

    /// A launch message of thread 3: one stack entry (`stack`, already framed), then a launch of
    /// correlation 11 naming stack hash 0x99.
    fn launch_message(out: &mut Vec<u8>, stack: &[u8]) {
        let at = wire::begin_message(out, wire::MSG_LAUNCHES);
        out.extend_from_slice(&[3, 0, 0, 0, 0, 0, 0, 0]);
        out.extend_from_slice(stack);
        let mut e = [0u8; wire::LAUNCH_ENTRY_BYTES];
        e[0] = wire::ENTRY_LAUNCH;
        e[8..12].copy_from_slice(&11u32.to_le_bytes());
        e[24..32].copy_from_slice(&0x99u64.to_le_bytes());
        out.extend_from_slice(&e);
        wire::end_message(out, at);
    }

    #[test]
    fn launch_stacks_are_read_in_the_framing_of_the_agents_protocol() {
        let mut d = Steps { kit: AgentDecoder::new(Logger::stderr(), "lost"), seen: Vec::new() };
        let mut out = Emitter::detached();
        // An agent of protocol 1: a 3-frame stack, its count in byte 1.
        let mut old = hello(4_000_004, 1, wire::FLAG_AGENT_STACKS);
        let mut stack = vec![wire::ENTRY_STACK, 3, 0, 0, 0, 0, 0, 0];
        stack.extend_from_slice(&0x99u64.to_le_bytes());
        for ra in [0x1000u64, 0x2000, 0x3000] {
            stack.extend_from_slice(&ra.to_le_bytes());
        }
        launch_message(&mut old, &stack);
        // An agent of this protocol: 300 frames.
        let mut new = hello(4_000_005, wire::PROTOCOL, wire::FLAG_AGENT_STACKS);
        let mut stack = Vec::new();
        wire::launches::put_stack(&mut stack, 0x99, &(1..=300u64).map(|i| i * 0x10).collect::<Vec<_>>());
        launch_message(&mut new, &stack);
        AgentDecoder::feed(&mut d, 1, &old, &mut out, |d| &mut d.kit, Steps::step);
        AgentDecoder::feed(&mut d, 2, &new, &mut out, |d| &mut d.kit, Steps::step);
        assert_eq!(d.kit.counts.refused, 0, "protocol 1 is still read");
        let launches: Vec<&String> =
            d.seen.iter().map(|(_, s)| s).filter(|s| s.starts_with("launches")).collect();
        assert_eq!(launches, ["launches 4000004/3: 1", "launches 4000005/3: 1"]);
        let depths: Vec<usize> = decode_all(&out.take_buffer())
            .unwrap()
            .into_iter()
            .filter_map(|r| if let Record::Stack(s) = r { Some(s.frames.len()) } else { None })
            .collect();
        assert_eq!(depths, [3, 300]);
        assert!(!d.kit.stacks.get(4_000_004, 0x99).is_none() && !d.kit.stacks.get(4_000_005, 0x99).is_none());
    }

    #[test]
    fn a_launch_site_follows_the_agents_stack_flags() {
        let mut kit = AgentDecoder::<AgentConn>::new(Logger::stderr(), "lost");
        let l = Launch { time: 5, stack: 9, ..Default::default() };
        let corr = Correlation { backend: 7, id: 1 };
        for (conn, flags) in [(1, 0), (2, wire::FLAG_TRAMPOLINE_STACKS), (3, wire::FLAG_AGENT_STACKS)] {
            kit.conns.entry(conn).or_default().flags = flags;
        }
        assert!(kit.launch_site(1, 0, &l, corr, StrId::NONE).is_none(), "no stacks: no site");
        let site = kit.launch_site(2, 0, &l, corr, StrId::NONE).unwrap();
        assert_eq!((site.stack, site.time), (StackId::NONE, 5), "the eBPF source sends the stack");
        assert_eq!(kit.counts.launch_sites, 0);
        assert!(kit.launch_site(3, 0, &l, corr, StrId::NONE).is_some());
        assert_eq!(kit.counts.launch_sites, 1);
        assert!(kit.launch_site(4, 0, &l, corr, StrId::NONE).is_none(), "no such connection");
    }
}
