//! One Acme agent stream per connection, turned into records. The kit's messages are read by
//! the SDK's [`StreamReader`] (hello checked, launches read in the hello's protocol); this file
//! only says what each message means for the Acme backend, and reads the agent's own kernel
//! message. Ids are this source's own, numbered from 1 per kind (the host renumbers them).

use std::collections::{HashMap, HashSet};

use xpuprof_sdk::clock::now_ns;
use xpuprof_sdk::prelude::*;
use xpuprof_sdk::wire::launches::{Entry, Launch};
use xpuprof_sdk::wire::maps::Mapping;
use xpuprof_sdk::wire::stream::{call_site, AgentMessage, StreamReader};
use xpuprof_sdk::wire::Reader;

use crate::BACKEND;

/// The agent's own message: one kernel the device ran (`ACME_MSG_KERNEL` in acme_agent.c):
/// `correlation u32, name_len u32, start u64, end u64` (`CLOCK_MONOTONIC` ns), the name.
pub const MSG_KERNEL: u8 = 128;
/// The Acme runtime's API names by number (the agent's launch entries carry the number).
const API_NAMES: &[(u32, &str)] = &[(1, "acme_launch")];
/// The one (fictitious) device.
const DEVICE: DeviceId = DeviceId(1);

/// What the decoding saw, for the log line at `stop`.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Counts {
    /// Streams that started with a hello this source reads.
    pub processes: u64,
    /// Launch entries.
    pub launches: u64,
    /// Kernel messages.
    pub kernels: u64,
    /// Streams refused (not a hello first, or a protocol this SDK does not read).
    pub refused: u64,
}

/// One connection: its reader, and the process it speaks for once its hello came.
#[derive(Debug, Default)]
struct Conn {
    reader: StreamReader,
    process: Process,
}

/// A traced process: its pid, its module map and whether its agent said bye.
#[derive(Debug, Default)]
struct Process {
    pid: u32,
    maps: Vec<Mapping>,
    bye: bool,
}

/// Every connection's decoder, and the definitions they share.
#[derive(Debug)]
pub struct Decoder {
    conns: HashMap<u64, Conn>,
    out: Records,
}

/// The records side: the emitter and what was already defined.
#[derive(Debug)]
struct Records {
    emitter: Emitter,
    log: Logger,
    strings: StringInterner,
    modules: HashMap<String, ModuleId>,
    frames: HashMap<(ModuleId, u64, u32), FrameId>,
    stacks: HashMap<(u32, u64), StackId>,
    threads: HashSet<(u32, u32)>,
    streams: HashMap<u32, StreamId>,
    counts: Counts,
}

impl Decoder {
    /// A decoder emitting through `emitter`.
    pub fn new(emitter: Emitter, log: Logger) -> Self {
        let out = Records {
            emitter,
            log,
            strings: StringInterner::new(1),
            modules: HashMap::new(),
            frames: HashMap::new(),
            stacks: HashMap::new(),
            threads: HashSet::new(),
            streams: HashMap::new(),
            counts: Counts::default(),
        };
        Self { conns: HashMap::new(), out }
    }

    /// Decodes the next bytes of connection `conn`.
    pub fn feed(&mut self, conn: u64, bytes: &[u8]) {
        let Conn { reader, process } = self.conns.entry(conn).or_default();
        reader.push(bytes);
        while let Some(message) = reader.next_message() {
            match message {
                Ok(m) => self.out.message(process, m),
                Err(e) => {
                    self.out.counts.refused += 1;
                    self.out.log.warn(&format!("acme-agent: connection {conn} is not read: {e}"));
                }
            }
        }
        self.out.emitter.flush_if_due();
    }

    /// Connection `conn` ended: a stream cut short is a loss.
    pub fn end(&mut self, conn: u64) {
        let Some(c) = self.conns.remove(&conn) else { return };
        let (pid, cut) = (c.process.pid, c.reader.pending());
        if pid != 0 && (!c.process.bye || cut > 0) {
            self.out.loss(pid, "acme agent stream cut short", 1);
            self.out.log.warn(&format!(
                "acme-agent: the agent of process {pid} stopped without its bye ({cut} bytes of a message cut): \
                 the process was killed, or the agent could not flush"
            ));
        }
    }

    /// Flushes what was emitted and returns the counts.
    pub fn finish(mut self) -> Counts {
        let open: Vec<u64> = self.conns.keys().copied().collect();
        for conn in open {
            self.end(conn);
        }
        self.out.emitter.flush();
        self.out.counts
    }
}

impl Records {
    fn message(&mut self, p: &mut Process, m: AgentMessage<'_>) {
        match m {
            AgentMessage::Hello(h) => {
                p.pid = h.pid;
                self.counts.processes += 1;
                let command = self.strings.intern(&mut self.emitter, &h.command);
                self.emitter.emit(&Record::Process(ProcessDef::default().pid(h.pid).command(command)));
            }
            AgentMessage::Modules(maps) => p.maps = maps,
            AgentMessage::Launches { tid, entries } => self.launches(p, tid, entries),
            AgentMessage::Own { ty: MSG_KERNEL, payload } => self.kernel(p.pid, payload),
            AgentMessage::LostLaunches(n) => self.loss(p.pid, "acme agent dropped launches", n),
            AgentMessage::LostBytes { chunks, .. } => self.loss(p.pid, "acme agent output dropped", chunks),
            AgentMessage::Error(text) => self.log.warn(&format!("acme-agent: process {}: {text}", p.pid)),
            AgentMessage::Bye { .. } => p.bye = true,
            _ => {}
        }
    }

    /// A thread's stacks (each defined once per process) and launches (an API call and a launch
    /// site each).
    fn launches(&mut self, p: &Process, tid: u32, entries: Vec<Entry>) {
        if self.threads.insert((p.pid, tid)) {
            self.emitter.emit(&Record::Thread(ThreadDef::default().pid(p.pid).tid(tid)));
        }
        for e in entries {
            match e {
                Entry::Stack { hash, frames } => {
                    if !self.stacks.contains_key(&(p.pid, hash)) {
                        let frames = frames.iter().map(|&ra| self.frame(p, ra)).collect();
                        let id = StackId(self.stacks.len() as u32 + 1);
                        self.emitter.emit(&Record::Stack(StackDef::new(id, frames)));
                        self.stacks.insert((p.pid, hash), id);
                    }
                }
                Entry::Launch(l) => self.launch(p.pid, tid, &l),
            }
        }
    }

    /// The frame of return address `ra`: module + file offset of its call instruction, which the
    /// host symbolises; a virtual address where no file maps it.
    fn frame(&mut self, p: &Process, ra: u64) -> FrameId {
        let (module, address, pid, kind) = match call_site(&p.maps, ra) {
            Some((m, offset)) => (self.module(&m.path), offset, 0, FrameKind::FileOffset),
            None => (ModuleId::NONE, ra.saturating_sub(1), p.pid, FrameKind::Virtual),
        };
        let next = FrameId(self.frames.len() as u32 + 1);
        *self.frames.entry((module, address, pid)).or_insert_with(|| {
            let def = FrameDef::default().id(next).kind(kind).module(module).address(address).pid(pid);
            self.emitter.emit(&Record::Frame(def));
            next
        })
    }

    fn module(&mut self, path: &str) -> ModuleId {
        if let Some(id) = self.modules.get(path) {
            return *id;
        }
        let id = ModuleId(self.modules.len() as u32 + 1);
        let text = self.strings.intern(&mut self.emitter, path);
        self.emitter.emit(&Record::Module(ModuleDef::default().id(id).path(text)));
        self.modules.insert(path.to_owned(), id);
        id
    }

    fn launch(&mut self, pid: u32, tid: u32, l: &Launch) {
        self.counts.launches += 1;
        let api = API_NAMES.iter().find(|(n, _)| *n == l.api_id).map_or("acme api", |(_, name)| name);
        let api = self.strings.intern(&mut self.emitter, api);
        let corr = Correlation::new(BACKEND, u64::from(l.correlation));
        let stack = self.stacks.get(&(pid, l.stack)).copied().unwrap_or(StackId::NONE);
        // An exit time of 0: the call was still running when the agent's buffers were sent.
        let end = if l.end == 0 { l.time } else { l.end };
        let call = ApiCall::default()
            .pid(pid)
            .tid(tid)
            .start(l.time)
            .end(end)
            .name(api)
            .kind(ApiKind::Launch)
            .correlation(Some(corr))
            .result(i64::from(l.result));
        self.emitter.emit(&Record::ApiCall(call));
        let site =
            LaunchSite::default().pid(pid).tid(tid).time(l.time).correlation(corr).api(api).stack(stack);
        self.emitter.emit(&Record::LaunchSite(site));
    }

    /// The agent's kernel message: a kernel on the device, on the process's one queue.
    fn kernel(&mut self, pid: u32, payload: &[u8]) {
        let mut r = Reader::new(payload);
        let (correlation, len, start, end) = (r.u32(), r.u32(), r.u64(), r.u64());
        let name = String::from_utf8_lossy(r.bytes(len as usize)).into_owned();
        if r.short {
            self.loss(pid, "acme kernel message too short", 1);
            return;
        }
        self.counts.kernels += 1;
        if self.streams.is_empty() {
            let name = self.strings.intern(&mut self.emitter, "Acme device");
            let device = DeviceDef::default()
                .id(DEVICE)
                .vendor(Vendor(Vendor::FIRST_THIRD_PARTY + 0x42))
                .name(name)
                .kind(DeviceKind::Accelerator);
            self.emitter.emit(&Record::Device(device));
        }
        let next = StreamId(self.streams.len() as u32 + 1);
        let emitter = &mut self.emitter;
        let stream = *self.streams.entry(pid).or_insert_with(|| {
            emitter.emit(&Record::Stream(StreamDef::default().id(next).device(DEVICE).pid(pid)));
            next
        });
        let name = self.strings.intern(&mut self.emitter, &name);
        let op = DeviceOp::default()
            .kind(DeviceOpKind::Kernel)
            .pid(pid)
            .device(DEVICE)
            .stream(stream)
            .start(start)
            .end(end)
            .name(name)
            .correlation(Some(Correlation::new(BACKEND, u64::from(correlation))));
        self.emitter.emit(&Record::DeviceOp(op));
    }

    fn loss(&mut self, pid: u32, cause: &str, count: u64) {
        let cause = self.strings.intern(&mut self.emitter, cause);
        self.emitter.emit(&Record::Loss(Loss::default().pid(pid).time(now_ns()).cause(cause).count(count)));
    }
}
