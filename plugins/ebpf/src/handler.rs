//! Turning decoded ring-buffer events into SDK records.

use std::collections::{HashMap, HashSet, VecDeque};
use std::time::{Duration, Instant};

use xpuprof_sdk::model::{backend, Correlation, CpuSample, LaunchSite, Record, SampleKind, StrId};
use xpuprof_sdk::{Emitter, Logger};

use crate::decode::{self, Event, MappingEvent, ProcEvent, StackEvent};
use crate::procmaps::{Mapping, MapsCache};
use crate::python::Interpreters;
use xpuprof_toolbox::Interner;

/// `vm_pgoff` unit (4 KiB pages on x86-64).
const PAGE_SIZE: u64 = 4096;
/// How long an exited process's maps and names are kept for events still in flight (samples
/// taken on other CPUs just before the exit) before they are forgotten.
const EXIT_GRACE: Duration = Duration::from_secs(1);
/// Most events of one exited process held back until its final mappings arrive.
const MAX_PARKED_PER_PROCESS: usize = 4096;
use crate::stacks::{StackBuilder, Unwound};

/// What is known about a process of the tree.
#[derive(Debug, Clone, Default)]
struct ProcInfo {
    ppid: u32,
    command: String,
}

/// State of one recording: the process tree, maps, interned definitions.
#[derive(Debug)]
pub struct Handler {
    /// Emits the records.
    pub emitter: Emitter,
    /// Logs.
    pub log: Logger,
    /// Processes of the tree still alive.
    pub live: HashSet<u32>,
    /// Maps snapshots.
    pub maps: MapsCache,
    /// Processes that exec'd since the last call to [`Handler::take_execs`].
    execs: Vec<u32>,
    /// Processes whose exit was seen.
    exited: HashSet<u32>,
    /// Events of exited processes waiting for their final mappings.
    parked: HashMap<u32, Vec<(StackEvent, Vec<u8>)>>,
    /// Exited processes, oldest exit first, to forget once [`EXIT_GRACE`] has passed: the
    /// handler's memory is bounded by the processes alive (and just exited), not by every
    /// process the target ever started.
    retiring: VecDeque<(Instant, u32)>,
    procs: HashMap<u32, ProcInfo>,
    interner: Interner,
    stacks: StackBuilder,
    /// The tracked processes' Python interpreters (`None`: `python = "off"`).
    python: Option<Interpreters>,
    /// BPF's `py_procs`, written as soon as an interpreter is found or goes (not after the ring
    /// buffer's poll returns: a busy ring buffer would delay it by the whole backlog).
    py_procs: Option<libbpf_rs::MapHandle>,
    launch_symbols: Vec<String>,
    next_uncorrelated: u64,
    /// A correlated launch site was emitted since the last flush: the backend's device work
    /// may be waiting for it (see [`Handler::flush_launch_sites`]).
    launch_sites_unflushed: bool,
    /// Records that could not be decoded.
    pub bad_records: u64,
}

impl Handler {
    /// A handler for the tree rooted at `pid`, started by `command` (Python frames in its stacks
    /// when `python`).
    pub fn new(
        emitter: Emitter,
        log: Logger,
        pid: u32,
        command: &[String],
        launch_symbols: Vec<String>,
        python: bool,
    ) -> Self {
        let mut h = Self {
            emitter,
            log,
            live: HashSet::from([pid]),
            maps: MapsCache::default(),
            execs: Vec::new(),
            exited: HashSet::new(),
            parked: HashMap::new(),
            retiring: VecDeque::new(),
            procs: HashMap::new(),
            interner: Interner::default(),
            stacks: StackBuilder::default(),
            python: python.then(Interpreters::default),
            py_procs: None,
            launch_symbols,
            next_uncorrelated: 1,
            launch_sites_unflushed: false,
            bad_records: 0,
        };
        let info = ProcInfo { ppid: std::process::id(), command: command.join(" ") };
        h.procs.insert(pid, info);
        h
    }

    /// Adds `pid`, a descendant of the root already running (`xpuprof attach --tree`), child
    /// of `ppid`.
    pub fn adopt(&mut self, pid: u32, ppid: u32) {
        self.live.insert(pid);
        self.procs.insert(pid, ProcInfo { ppid, command: crate::proctree::command_of(pid) });
        self.maps.refresh(pid);
        self.discover_python(pid);
    }

    /// Handles one ring-buffer record.
    pub fn handle(&mut self, data: &[u8]) {
        match decode::decode(data) {
            Some(Event::Proc(p)) => self.on_proc(p),
            Some(Event::Mapping(m)) => self.on_mapping(m),
            Some(Event::Stack(e, ustack)) => self.on_stack(e, ustack),
            None => self.bad_records += 1,
        }
    }

    /// Processes that exec'd since the last call: their new libraries need scanning.
    pub fn take_execs(&mut self) -> Vec<u32> {
        std::mem::take(&mut self.execs)
    }

    /// The id of `text` (emitting its definition the first time).
    pub fn intern_string(&mut self, text: &str) -> StrId {
        self.interner.string(&mut self.emitter, text)
    }

    /// Counts of frames and stacks that could not be normalised.
    pub fn stack_stats(&self) -> crate::stacks::StackStats {
        self.stacks.stats
    }

    /// Where the interpreters' offsets go (BPF's `py_procs` map).
    pub fn set_python_map(&mut self, map: libbpf_rs::MapHandle) {
        self.py_procs = Some(map);
    }

    /// Looks for CPython in `pid` when its maps (as last read) show a file not looked at yet.
    pub fn discover_python(&mut self, pid: u32) {
        if let (Some(py), Some((generation, maps))) = (&mut self.python, self.maps.get_versioned(pid)) {
            if py.discover(pid, generation, maps.iter().map(|m| &*m.path)).is_some() {
                self.publish_python();
            }
        }
    }

    /// Forgets `pid`'s interpreter (exit, exec) in the host and in BPF.
    fn forget_python(&mut self, pid: u32) {
        if let Some(py) = &mut self.python {
            py.forget(pid);
        }
        self.publish_python();
    }

    /// Makes the pending `py_procs` changes.
    fn publish_python(&mut self) {
        if let (Some(py), Some(map)) = (&mut self.python, &self.py_procs) {
            crate::python::publish(map, py.take_updates(), &self.log);
        }
    }

    /// The Python part of the samples, when Python frames are on.
    pub fn python(&self) -> Option<&Interpreters> {
        self.python.as_ref()
    }

    fn on_proc(&mut self, p: &ProcEvent) {
        match p.kind {
            decode::EV_FORK => {
                self.live.insert(p.pid);
                self.exited.remove(&p.pid);
                self.procs.insert(p.pid, ProcInfo { ppid: p.ppid, command: p.comm().to_owned() });
                // Until it execs, the child runs its parent's image (and its interpreter).
                self.maps.refresh(p.pid);
                self.discover_python(p.pid);
            }
            decode::EV_EXEC => {
                let command = read_cmdline(p.pid).unwrap_or_else(|| p.comm().to_owned());
                self.procs.entry(p.pid).or_default().command = command;
                self.maps.exec(p.pid, p.time);
                self.execs.push(p.pid);
                self.forget_python(p.pid);
                self.discover_python(p.pid);
            }
            decode::EV_EXIT => {
                self.live.remove(&p.pid);
                self.exited.insert(p.pid);
                // Its final mappings arrived just before: the parked events normalise now.
                for (e, ustack) in self.parked.remove(&p.pid).unwrap_or_default() {
                    self.emit_stack_event(&e, &ustack);
                }
                self.retiring.push_back((Instant::now(), p.pid));
            }
            _ => self.bad_records += 1,
        }
    }

    fn define_task(&mut self, e: &StackEvent) {
        if !self.interner.has_process(e.pid) {
            let info = self.procs.get(&e.pid).cloned().unwrap_or_default();
            let command = if info.command.is_empty() { e.comm() } else { info.command.as_str() };
            self.interner.process(&mut self.emitter, e.pid, info.ppid, command);
        }
        self.interner.thread(&mut self.emitter, e.pid, e.tid, e.comm());
    }

    fn on_mapping(&mut self, m: &MappingEvent) {
        let Some(path) = m.path() else { return };
        let offset = m.pgoff.saturating_mul(PAGE_SIZE);
        let mapping = Mapping { start: m.start, end: m.end, offset, exec: true, path: path.as_str().into() };
        self.maps.add_final(m.pid, mapping);
    }

    /// Forgets processes that exited more than `EXIT_GRACE` before `now` (unless their pid
    /// was reused by a process now alive): their frames are all normalised by then.
    pub fn forget_exited(&mut self, now: Instant) {
        while let Some(&(at, pid)) = self.retiring.front() {
            if now.duration_since(at) < EXIT_GRACE {
                break;
            }
            self.retiring.pop_front();
            if self.live.contains(&pid) || !self.exited.remove(&pid) {
                continue;
            }
            if let Some(events) = self.parked.remove(&pid) {
                for (e, ustack) in events {
                    self.emit_stack_event(&e, &ustack);
                }
            }
            self.maps.forget(pid);
            self.stacks.forget(pid);
            self.procs.remove(&pid);
            self.forget_python(pid);
        }
    }

    /// Processes the handler holds state for (maps cached): bounded by those alive.
    pub fn tracked_processes(&self) -> usize {
        self.maps.len().max(self.procs.len())
    }

    /// Emits the events still parked (their processes' exits were not seen).
    pub fn flush_parked(&mut self) {
        let parked: Vec<(StackEvent, Vec<u8>)> = self.parked.drain().flat_map(|(_, v)| v).collect();
        for (e, ustack) in parked {
            self.emit_stack_event(&e, &ustack);
        }
    }

    /// True when the events of `pid` whose frames the maps do not cover should wait for its
    /// final mappings: its maps can no longer be read (it is exiting or gone), and the
    /// mappings the kernel sends at its exit have not arrived yet (they come just before the
    /// exit event). The snapshot it was seen with may predate libraries the dynamic loader mapped
    /// after it (a process that lives a millisecond is read once, mid-load).
    fn waits_for_final_maps(&self, pid: u32) -> bool {
        !self.exited.contains(&pid)
            && self.maps.is_gone(pid)
            && self.parked.get(&pid).map_or(0, Vec::len) < MAX_PARKED_PER_PROCESS
    }

    /// Flushes when correlated launch sites were emitted since the last flush: the backend's
    /// device work for those launches waits for them in the host (a bounded time), so they go
    /// out at once instead of within the emitter's flush interval.
    pub fn flush_launch_sites(&mut self) {
        if std::mem::take(&mut self.launch_sites_unflushed) {
            self.emitter.flush();
        }
    }

    fn on_stack(&mut self, e: &StackEvent, ustack: &[u8]) {
        // Decided by the whole walk, not its first frame: any frame outside the known mappings
        // of a process whose maps are gone may lie in a library its final mappings show.
        let unwound = self.stacks.unwind(e, ustack, &mut self.maps);
        if unwound == Unwound::Unmapped && self.waits_for_final_maps(e.pid) {
            self.parked.entry(e.pid).or_default().push((*e, ustack.to_vec()));
            return;
        }
        self.emit_unwound(e);
    }

    /// Emits `e` (a parked event: walked again, now with its process's final mappings).
    fn emit_stack_event(&mut self, e: &StackEvent, ustack: &[u8]) {
        self.stacks.unwind(e, ustack, &mut self.maps);
        self.emit_unwound(e);
    }

    /// Emits `e`, whose user stack [`StackBuilder::unwind`] just walked.
    fn emit_unwound(&mut self, e: &StackEvent) {
        self.define_task(e);
        let python = self.python.as_mut();
        let stack = self.stacks.intern(e, &mut self.maps, python, &mut self.interner, &mut self.emitter);
        // libpython is mapped by the dynamic loader after exec, and the periodic scans wait while
        // the ring buffer is busy: a sample of a process without an interpreter yet looks again.
        if self.python.as_mut().is_some_and(|py| py.wants_look(e.pid, Instant::now()))
            && self.maps.refresh(e.pid)
        {
            self.discover_python(e.pid);
        }
        let record = match e.kind {
            decode::EV_SAMPLE | decode::EV_OFFCPU => {
                let kind = if e.kind == decode::EV_SAMPLE { SampleKind::OnCpu } else { SampleKind::OffCpu };
                Record::CpuSample(
                    CpuSample::default()
                        .pid(e.pid)
                        .tid(e.tid)
                        .time(e.time)
                        .kind(kind)
                        .weight(e.weight)
                        .stack(stack),
                )
            }
            kind => {
                // A plain launch uprobe names its symbol and gets an id of its own; a trampoline
                // hit carries the agent's backend and correlation id.
                let (correlation, api) = if kind == decode::EV_LAUNCH {
                    let api = match self.launch_symbols.get(e.cookie as usize) {
                        Some(sym) => self.interner.string(&mut self.emitter, sym),
                        None => StrId::NONE,
                    };
                    let id = self.next_uncorrelated;
                    self.next_uncorrelated += 1;
                    (Correlation { backend: backend::UNCORRELATED, id }, api)
                } else {
                    self.launch_sites_unflushed = true;
                    (Correlation { backend: e.backend, id: e.correlation }, StrId::NONE)
                };
                Record::LaunchSite(
                    LaunchSite::default()
                        .pid(e.pid)
                        .tid(e.tid)
                        .time(e.time)
                        .correlation(correlation)
                        .api(api)
                        .stack(stack),
                )
            }
        };
        self.emitter.emit(&record);
    }
}

/// `/proc/<pid>/cmdline` with arguments joined by spaces.
fn read_cmdline(pid: u32) -> Option<String> {
    let raw = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
    let parts: Vec<String> = raw
        .split(|&b| b == 0)
        .filter(|s| !s.is_empty())
        .map(|s| String::from_utf8_lossy(s).into_owned())
        .collect();
    (!parts.is_empty()).then(|| parts.join(" "))
}

#[cfg(test)]
mod tests {
    use std::mem::size_of;

    use super::*;
    use crate::decode::{ProcEvent, NAME_LEN, PATH_DEPTH};
    use crate::procmaps::ProcMaps;
    use xpuprof_unwind::{Cut, Registers};

    /// The ring-buffer bytes of a process event (8-byte aligned, as the ring buffer hands them).
    fn proc_event(kind: u32, pid: u32) -> Vec<u64> {
        let ev = ProcEvent { kind, pid, ppid: 1, tid: pid, time: 1, comm: *b"short-lived\0\0\0\0\0" };
        let mut words = vec![0u64; size_of::<ProcEvent>().div_ceil(8)];
        // SAFETY: `words` holds at least size_of::<ProcEvent>() initialised, writable bytes, and
        // ProcEvent is plain old data (`plain::Plain`).
        unsafe { std::ptr::write_unaligned(words.as_mut_ptr().cast::<ProcEvent>(), ev) };
        words
    }

    fn handle(h: &mut Handler, words: &[u64]) {
        // SAFETY: viewing initialised u64s as bytes; same memory, same length.
        let bytes =
            unsafe { std::slice::from_raw_parts(words.as_ptr().cast::<u8>(), size_of::<ProcEvent>()) };
        h.handle(bytes);
    }

    /// An on-CPU sample of this thread as the BPF program records it (registers here, up to
    /// 64 KiB of the stack above them), attributed to `pid`.
    #[inline(never)]
    fn sample_here(pid: u32) -> (StackEvent, Vec<u8>) {
        let regs = Registers::here();
        let own = ProcMaps::read(std::process::id()).unwrap();
        let top = own.find(regs.sp).expect("the stack is mapped").end;
        let len = (top - regs.sp).min(64 << 10) as usize;
        // SAFETY: `[sp, sp + len)` lies in this thread's stack mapping, below its end.
        let ustack = unsafe { std::slice::from_raw_parts(regs.sp as *const u8, len) }.to_vec();
        let event =
            StackEvent { comm: *b"short-lived\0\0\0\0\0", ..StackEvent::sample(pid, pid, &regs, len) };
        (event, ustack)
    }

    /// The record the BPF program sends at `pid`'s exit for its executable mapping `m`.
    fn final_mapping(pid: u32, m: &Mapping) -> MappingEvent {
        let mut e = MappingEvent {
            kind: decode::EV_MAPPING,
            pid,
            time: 2,
            start: m.start,
            end: m.end,
            pgoff: m.offset / PAGE_SIZE,
            depth: 0,
            complete: 1,
            names: [0; PATH_DEPTH * NAME_LEN],
        };
        // Components from the file up, as the BPF path walk writes them.
        for (i, name) in m.path.rsplit('/').filter(|c| !c.is_empty()).enumerate() {
            e.names[i * NAME_LEN..i * NAME_LEN + name.len()].copy_from_slice(name.as_bytes());
            e.depth += 1;
        }
        e
    }

    /// A handler that saw `pid` (an exited process) only through a maps snapshot taken before
    /// the C library was mapped, and one of its samples whose deeper frames (the thread's
    /// start) lie in the C library; its final mappings (the C library's) as the kernel sends
    /// them at exit.
    fn sampled_mid_load(pid: u32) -> (Handler, Vec<MappingEvent>) {
        let own = ProcMaps::read(std::process::id()).unwrap();
        let is_libc = |m: &Mapping| m.path.rsplit('/').next().is_some_and(|f| f.starts_with("libc.so"));
        let before: Vec<String> = own
            .iter()
            .filter(|m| !is_libc(m))
            .map(|m| {
                let perms = if m.exec { "r-xp" } else { "r--p" };
                format!("{:x}-{:x} {perms} {:08x} 00:00 0 {}", m.start, m.end, m.offset, m.path)
            })
            .collect();
        let finals: Vec<MappingEvent> =
            own.iter().filter(|m| m.exec && is_libc(m)).map(|m| final_mapping(pid, m)).collect();
        assert!(!finals.is_empty(), "this test process maps the C library");
        let mut h =
            Handler::new(Emitter::detached(), Logger::stderr(), pid, &["t".into()], Vec::new(), false);
        h.maps.set_snapshot(pid, ProcMaps::parse(&before.join("\n")));
        let (event, ustack) = sample_here(pid);
        h.on_stack(&event, &ustack);
        (h, finals)
    }

    #[test]
    fn a_sample_whose_deeper_frames_the_snapshot_misses_waits_for_the_final_mappings() {
        let pid = 4_100_000; // above pid_max: never a real process, its maps are gone
        let (mut h, finals) = sampled_mid_load(pid);
        // The leaf (this test binary) is mapped; the thread's start (libc) is not: it waits.
        assert_eq!(h.parked.get(&pid).map(Vec::len), Some(1), "the sample was not parked");
        assert_eq!(h.stack_stats().cut, [0; Cut::COUNT], "a parked sample is not counted yet");
        for m in &finals {
            h.on_mapping(m);
        }
        handle(&mut h, &proc_event(decode::EV_EXIT, pid));
        let s = h.stack_stats();
        assert!(h.parked.is_empty());
        assert_eq!(s.unmapped_frames, 0, "frames left unnormalised");
        assert_eq!(s.cut, [0; Cut::COUNT], "walk cut: {:?}", s.cut);
        assert_eq!(s.root_bytes.iter().sum::<u64>(), 1, "the walk reaches the thread's root");
    }

    #[test]
    fn without_its_final_mappings_a_parked_sample_counts_what_it_lost() {
        let pid = 4_100_001;
        let (mut h, _) = sampled_mid_load(pid);
        // The exit's records were lost (ring buffer full): the session's end emits it as it is.
        h.flush_parked();
        let s = h.stack_stats();
        assert!(s.unmapped_frames + s.cut[Cut::OutsideModules as usize] > 0, "nothing counted: {s:?}");
    }

    #[test]
    fn a_live_process_is_read_again_instead_of_waiting() {
        let pid = std::process::id();
        let (h, _) = sampled_mid_load(pid);
        let s = h.stack_stats();
        assert!(h.parked.is_empty(), "a live process's sample waited");
        assert_eq!((s.unmapped_frames, s.cut), (0, [0; Cut::COUNT]));
    }

    #[test]
    fn exited_processes_are_forgotten_so_memory_follows_what_is_alive() {
        let root = 4_000_000; // above pid_max: never a real process
        let mut h =
            Handler::new(Emitter::detached(), Logger::stderr(), root, &["sh".into()], Vec::new(), true);
        for pid in root + 1..root + 2001 {
            handle(&mut h, &proc_event(decode::EV_FORK, pid));
            handle(&mut h, &proc_event(decode::EV_EXIT, pid));
        }
        assert!(h.tracked_processes() > 2000, "state kept during the grace period");
        h.forget_exited(Instant::now() + EXIT_GRACE);
        assert!(h.tracked_processes() <= 1, "{} processes still tracked", h.tracked_processes());
        assert!(h.exited.is_empty() && h.retiring.is_empty());
        assert_eq!(h.bad_records, 0);
    }
}
