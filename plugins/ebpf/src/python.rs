//! Python frames in CPU samples, user-space half (the BPF half is `src/bpf/python.h`): finds each
//! tracked process's CPython from what it maps, hands BPF the version's offsets (`py_procs`),
//! and turns the frames a sample carries (code object + instruction pointer, read in BPF at the
//! sample) into `function (file.py:line)` labels, resolved through `process_vm_readv` once per
//! (code object, instruction), merged into the native stack where the eval loop runs them.

use std::collections::HashMap;
use std::mem::size_of;
use std::time::{Duration, Instant};

use libbpf_rs::{MapCore, MapFlags};
use xpuprof_sdk::model::FrameId;
use xpuprof_sdk::{Emitter, Logger};
use xpuprof_toolbox::Interner;

use xpuprof_python::chain::RawFrame;
use xpuprof_python::cpython_offsets::{Frames, Layout};
use xpuprof_python::merge;
use xpuprof_python::target::{Labels, Target};

/// Entries of `xp_py_stack` (`PY_MAX_FRAMES`).
pub const PY_MAX_FRAMES: usize = 256;
/// `PY_NONE`: an offset the version does not have.
const NONE: u32 = u32::MAX;
/// `PY_ENTRY`: the frame is the first its eval-loop call ran.
const ENTRY: u64 = 1 << 63;

/// While a process has no interpreter found, its samples read its maps again at most this often
/// (libpython appears some milliseconds after exec, while the ring buffer may keep the host's
/// periodic scans waiting), for at most `LOOKS` times.
const LOOK_EVERY: Duration = Duration::from_millis(10);
const LOOKS: u32 = 300;

/// The label of a frame whose code object could not be read because its process had exited
/// before the host handled the sample.
const EXITED: &str = "[python frame: the process exited before it was read]";
/// The label of a frame whose code object was freed between the sample and the host's read.
const FREED: &str = "[python frame: its code was freed before it was read]";
/// `PY_IDENTITY`: where a frame's code identity sits in `xp_py_stack.instr` (bits 32..62).
const IDENTITY: u64 = 0x7fff_ffff << 32;

/// Mirror of `struct xp_py_offsets`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(C)]
pub struct PyOffsets {
    pub interpreters_head: u64,
    pub interp_threads_head: u32,
    pub tstate_next: u32,
    pub tstate_native_tid: u32,
    pub tstate_thread_id: u32,
    pub tstate_frame: u32,
    pub cframe_current: u32,
    pub objects: u32,
    pub frame_back: u32,
    pub frame_code: u32,
    pub frame_instr: u32,
    pub frame_owner: u32,
    pub frame_is_entry: u32,
    pub owner_cstack: u32,
    pub cframe_previous: u32,
    pub code_instructions: u32,
    pub code_identity: u32,
    pub identity_version: u32,
    pub pad: u32,
}

/// Mirror of `struct xp_py_stack`.
#[derive(Clone, Copy, Debug)]
#[repr(C)]
pub struct PyStack {
    pub frames: u32,
    pub status: i32,
    pub code: [u64; PY_MAX_FRAMES],
    pub instr: [u64; PY_MAX_FRAMES],
    pub cstack: [u64; PY_MAX_FRAMES],
}

// SAFETY: `repr(C)`, integers and arrays of integers only: every bit pattern is a valid value.
unsafe impl plain::Plain for PyStack {}

impl Default for PyStack {
    /// No Python frames (what BPF sends for a process without a known interpreter).
    fn default() -> Self {
        PyStack {
            frames: 0,
            status: 0,
            code: [0; PY_MAX_FRAMES],
            instr: [0; PY_MAX_FRAMES],
            cstack: [0; PY_MAX_FRAMES],
        }
    }
}

impl PyOffsets {
    /// The offsets BPF needs for `target`.
    pub fn of(target: &Target) -> PyOffsets {
        let l = target.layout;
        let off = |o: Option<u64>| o.map_or(NONE, |v| v as u32);
        let mut o = PyOffsets {
            interpreters_head: target.runtime + l.runtime_interpreters_head,
            interp_threads_head: l.interp_threads_head as u32,
            tstate_next: l.tstate_next as u32,
            tstate_native_tid: off(l.tstate_native_thread_id),
            tstate_thread_id: l.tstate_thread_id as u32,
            tstate_frame: l.tstate_frame as u32,
            cframe_current: off(l.cframe_current_frame),
            owner_cstack: l.owner_cstack.map_or(NONE, u32::from),
            cframe_previous: off(l.cframe_previous),
            code_instructions: off(l.code_instructions),
            code_identity: l.code_version.unwrap_or(l.code_filename) as u32,
            identity_version: u32::from(l.code_version.is_some()),
            ..PyOffsets::default()
        };
        match l.frames {
            Frames::Objects { back, code, lasti, .. } => {
                (o.objects, o.frame_back, o.frame_code, o.frame_instr) =
                    (1, back as u32, code as u32, lasti as u32);
                (o.frame_owner, o.frame_is_entry) = (NONE, NONE);
            }
            Frames::Interpreter { code, previous, instr, owner, is_entry } => {
                (o.frame_back, o.frame_code, o.frame_instr) = (previous as u32, code as u32, instr as u32);
                (o.frame_owner, o.frame_is_entry) = (owner as u32, off(is_entry));
            }
        }
        o
    }
}

/// What happened to the Python part of samples.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct PyStats {
    /// Samples of Python processes with Python frames.
    pub with_frames: u64,
    /// Samples of Python processes on threads running no Python code (native frames only).
    pub without_frames: u64,
    /// Samples whose frame chain BPF or user space could not read to its end (cut there).
    pub unreadable: u64,
    /// Samples with frames not named because the process had exited when the host read them.
    pub exited: u64,
    /// Frames not named because their code object was freed before the host read it (another
    /// lives at its address: told apart by the identity BPF read at the sample).
    pub freed: u64,
    /// Python frames no eval-loop frame of the native stack stood for (the native walk ended
    /// before the interpreter): put at the outer end of their stack.
    pub unplaced: u64,
    /// Runs of Python frames (one per eval-loop call) put in the native frame that holds their
    /// call's marker on the C stack (exact).
    pub runs_placed: u64,
    /// Runs put in place of a native frame of the eval loop's symbol instead: their marker's
    /// address was not read (3.9, 3.10) or lies in no frame of the walk.
    pub runs_by_symbol: u64,
    /// Processes whose interpreter was found (and the version is read).
    pub processes: u64,
    /// Samples of processes running no CPython (native frames only).
    pub other_processes: u64,
}

#[derive(Debug, Default)]
struct Proc {
    target: Option<Target>,
    labels: Labels,
    /// Ids of its frames handed out, by (code object, identity and instruction offset as BPF
    /// sends them).
    ids: HashMap<(u64, u64), u64>,
    /// Files that could hold CPython already looked at (a `python3.X` executable that links
    /// `libpython3.X.so` holds none of its symbols).
    examined: Vec<String>,
    /// Its interpreter cannot be read (said in `problems`).
    failed: bool,
    /// Generation of the maps last looked at.
    generation: Option<u64>,
    /// When the maps were last read for a sample, and how many times.
    looked: Option<Instant>,
    looks: u32,
}

/// The Python interpreters of the tracked processes.
#[derive(Debug, Default)]
pub struct Interpreters {
    procs: HashMap<u32, Proc>,
    /// Labels by the tagged ids [`Interpreters::frames`] hands out (an id stands for one label
    /// for the whole session, so callers may cache what they make of it).
    labels: Vec<String>,
    /// Counters.
    pub stats: PyStats,
    /// Why interpreters could not be read (each said once).
    pub problems: Vec<String>,
    /// Changes for the BPF map `py_procs` not made yet: offsets to set, or `None` to remove.
    updates: Vec<(u32, Option<PyOffsets>)>,
    /// The ids of [`EXITED`] and [`FREED`], once needed.
    exited_id: Option<u64>,
    freed_id: Option<u64>,
    /// The first line of the function of each label that has one, by label index.
    first_lines: HashMap<usize, u32>,
    /// The interned frame of each label, made on first use.
    named: Vec<Option<FrameId>>,
    /// Scratch: a sample's Python frames, the C-stack marker of each entry frame, each run's
    /// place and the merged stack.
    py: Vec<(u64, bool)>,
    marks: Vec<u64>,
    places: Vec<Option<usize>>,
    merged: Vec<u64>,
}

impl Interpreters {
    /// Looks for CPython in `pid` when `mapped` (the paths of the files it maps now) names a file
    /// that could hold it and was not looked at yet — so each new image (exec) and each library
    /// the dynamic loader adds is looked at once; returns the offsets to put in `py_procs` when
    /// the interpreter was just found.
    /// `generation` identifies the maps: the same maps are not looked through twice.
    pub fn discover<'a>(
        &mut self,
        pid: u32,
        generation: u64,
        mapped: impl IntoIterator<Item = &'a str>,
    ) -> Option<PyOffsets> {
        let p = self.procs.entry(pid).or_default();
        if p.target.is_some() || p.failed || p.generation == Some(generation) {
            return None;
        }
        p.generation = Some(generation);
        let mut new = false;
        for path in mapped {
            let name = path.rsplit('/').next().unwrap_or_default();
            let candidate = name.starts_with("libpython3.") || name.starts_with("python3");
            if candidate && !p.examined.iter().any(|e| e == path) {
                p.examined.push(path.to_owned());
                new = true;
            }
        }
        if !new {
            return None;
        }
        match Target::find(pid) {
            Ok(Some(t)) => {
                let o = PyOffsets::of(&t);
                p.target = Some(t);
                self.stats.processes += 1;
                self.updates.push((pid, Some(o)));
                Some(o)
            }
            Ok(None) => None,
            Err(e) => {
                p.failed = true;
                self.problems.push(format!("process {pid}: {e}"));
                None
            }
        }
    }

    /// True when a sample of `pid` should read its maps again to look for an interpreter (none
    /// found yet; rate-limited by `LOOK_EVERY` and `LOOKS`).
    pub fn wants_look(&mut self, pid: u32, now: Instant) -> bool {
        let p = self.procs.entry(pid).or_default();
        let due = p.looked.is_none_or(|t| now.duration_since(t) >= LOOK_EVERY);
        if p.target.is_some() || p.failed || p.looks >= LOOKS || !due {
            return false;
        }
        p.looked = Some(now);
        p.looks += 1;
        true
    }

    /// Forgets a process that exited or exec'd (a new image is looked at afresh).
    pub fn forget(&mut self, pid: u32) {
        if self.procs.remove(&pid).is_some_and(|p| p.target.is_some()) {
            self.updates.push((pid, None));
        }
    }

    /// The `py_procs` changes made since the last call, oldest first.
    pub fn take_updates(&mut self) -> Vec<(u32, Option<PyOffsets>)> {
        std::mem::take(&mut self.updates)
    }

    /// Replaces each eval-loop frame of `native` (a sample of `pid`: innermost first, return
    /// addresses already moved back into their call instruction) by the Python frames of `py`
    /// it runs, as tagged ids whose text [`Interpreters::label`] gives until the next sample.
    /// `sp[i]` is the stack pointer of `native[i]`'s frame (as far as it goes): each run of
    /// Python frames goes in the frame whose stack range holds its eval-loop call's marker.
    pub fn merge_into(&mut self, pid: u32, py: &PyStack, native: &mut Vec<u64>, sp: &[u64]) {
        let mut frames = std::mem::take(&mut self.py);
        let mut marks = std::mem::take(&mut self.marks);
        self.frames(pid, py, &mut frames, &mut marks);
        let eval = self.procs.get(&pid).and_then(|p| p.target.as_ref()).map_or((0, 0), |t| t.eval);
        if !frames.is_empty() {
            // Run k ends at the k-th entry frame: the native frame whose [SP, next SP) holds
            // its marker (the last frame's top is not known: left to the fallback).
            let sp = &sp[..sp.len().min(native.len())];
            self.places.clear();
            self.places.extend(marks.iter().map(|&a| merge::frame_holding(sp, a)));
            self.places.resize(merge::runs(&frames), None);
            self.merged.clear();
            self.merged.resize(native.len() + frames.len(), 0);
            let m = merge::merge_placed(
                native,
                |a| a >= eval.0 && a < eval.1,
                &frames,
                &mut self.places,
                &mut self.merged,
            );
            self.stats.unplaced += m.unplaced as u64;
            self.stats.runs_by_symbol += m.by_symbol as u64;
            let placed = self.places.iter().flatten().count();
            self.stats.runs_placed += placed.saturating_sub(m.by_symbol) as u64;
            native.clear();
            native.extend_from_slice(&self.merged[..m.len]);
        }
        self.py = frames;
        self.marks = marks;
    }

    /// True when `addr` (a code address, not a return address) lies in `pid`'s eval loop.
    pub fn is_eval(&self, pid: u32, addr: u64) -> bool {
        self.procs
            .get(&pid)
            .and_then(|p| p.target.as_ref())
            .is_some_and(|t| addr >= t.eval.0 && addr < t.eval.1)
    }

    /// The Python frames of a sample of `pid` as (tagged index into [`Interpreters::label`],
    /// entry) pairs, innermost first, for [`xpuprof_python::merge`]; `marks` receives, per entry
    /// frame, the address of its eval-loop call's marker on the C stack (0: not known).
    pub fn frames(&mut self, pid: u32, py: &PyStack, out: &mut Vec<(u64, bool)>, marks: &mut Vec<u64>) {
        out.clear();
        marks.clear();
        let Some(p) = self.procs.get_mut(&pid) else {
            self.stats.other_processes += 1;
            return;
        };
        let Some(t) = p.target.as_ref() else {
            self.stats.other_processes += 1;
            return;
        };
        let n = (py.frames as usize).min(PY_MAX_FRAMES);
        // -2: a read failed in BPF; 1: more than PY_MAX_FRAMES frames.
        let mut cut = py.status == -2 || py.status == 1;
        let mut exited = false;
        for i in 0..n {
            let raw = raw_frame(t.layout, py.code[i], py.instr[i]);
            let key = (raw.code, py.instr[i] & !ENTRY);
            let identity = Some(((py.instr[i] & IDENTITY) >> 32) as u32);
            let id = match p.ids.get(&key) {
                Some(&id) => id,
                None => match p.labels.label_of(t, &raw, identity) {
                    Ok(l) => {
                        let l = l.to_owned();
                        let id = xpuprof_python::PY_FRAME_TAG | self.labels.len() as u64;
                        let first_line = p.labels.first_line(raw.code, identity);
                        if first_line > 0 {
                            self.first_lines.insert(self.labels.len(), first_line);
                        }
                        self.labels.push(l);
                        p.ids.insert(key, id);
                        id
                    }
                    // Its memory is gone with it (a sample handled after the exit), or its code
                    // object with it: the frame keeps its place, unnamed.
                    Err(_) if exited_process(pid) => {
                        exited = true;
                        placeholder(&mut self.labels, &mut self.exited_id, EXITED)
                    }
                    Err(xpuprof_python::Error::Freed { .. }) => {
                        self.stats.freed += 1;
                        placeholder(&mut self.labels, &mut self.freed_id, FREED)
                    }
                    Err(_) => {
                        cut = true;
                        break;
                    }
                },
            };
            out.push((id, raw.entry));
            if raw.entry {
                marks.push(py.cstack[i]);
            }
        }
        self.stats.exited += u64::from(exited);
        let s = &mut self.stats;
        match (cut, out.is_empty()) {
            (true, _) => s.unreadable += 1,
            (false, true) => s.without_frames += 1,
            (false, false) => s.with_frames += 1,
        }
    }

    /// The named frame of a tagged id [`Interpreters::frames`] handed out (interned once).
    pub fn named_frame(&mut self, tagged: u64, int: &mut Interner, em: &mut Emitter) -> FrameId {
        let i = (tagged & !xpuprof_python::PY_FRAME_TAG) as usize;
        if self.named.len() <= i {
            self.named.resize(i + 1, None);
        }
        let label = self.labels.get(i).map_or("[python frame]", String::as_str);
        let first_line = self.first_lines.get(&i).copied().unwrap_or(0);
        *self.named[i].get_or_insert_with(|| int.python_frame(em, label, first_line))
    }

    /// The label of a tagged id [`Interpreters::frames`] handed out (the same for the session).
    pub fn label(&self, tagged: u64) -> &str {
        let i = (tagged & !xpuprof_python::PY_FRAME_TAG) as usize;
        self.labels.get(i).map_or("[python frame]", String::as_str)
    }
}

/// Makes `updates` (from [`Interpreters::take_updates`]) in BPF's `py_procs` map.
pub fn publish(map: &dyn MapCore, updates: Vec<(u32, Option<PyOffsets>)>, log: &Logger) {
    for (pid, offsets) in updates {
        let key = pid.to_ne_bytes();
        let done = match offsets {
            Some(o) => {
                // SAFETY: `PyOffsets` is `repr(C)` plain data without padding (8 + 18 * 4 bytes,
                // pinned by a test); its bytes are the value BPF reads.
                let value = unsafe {
                    std::slice::from_raw_parts((&o as *const PyOffsets).cast::<u8>(), size_of::<PyOffsets>())
                };
                map.update(&key, value, MapFlags::ANY)
            }
            None => map.delete(&key).or(Ok(())),
        };
        if let Err(e) = done {
            log.warn(&format!("process {pid}: Python frames off, the BPF table py_procs refused it: {e}"));
        }
    }
}

/// Logs what the Python part of the samples did and returns its losses (cause, count).
pub fn report(py: &Interpreters, log: &Logger) -> Vec<(&'static str, u64)> {
    let s = py.stats;
    for p in &py.problems {
        log.warn(&format!("Python frames off for {p}"));
    }
    let total = s.with_frames + s.without_frames + s.unreadable;
    if total > 0 {
        log.info(&format!(
            "python frames on {} of {total} stacks of Python processes; native frames only on {} of threads \
             running no Python code and {} of processes without CPython; {} Python stacks cut short; \
             runs of Python frames placed by their eval call's frame on the C stack: {}, by the eval \
             loop's symbol (no C-stack address): {}",
            s.with_frames, s.without_frames, s.other_processes, s.unreadable, s.runs_placed, s.runs_by_symbol
        ));
    }
    vec![
        ("Python stacks cut short: frame chain unreadable or deeper than 256 frames", s.unreadable),
        (
            "Python frames put at the stack's outer end: the native walk ended before the interpreter",
            s.unplaced,
        ),
        ("Python frames not named: their code object was freed before it was read", s.freed),
    ]
}

/// The tagged id of a placeholder label (made once).
fn placeholder(labels: &mut Vec<String>, id: &mut Option<u64>, text: &str) -> u64 {
    *id.get_or_insert_with(|| {
        labels.push(text.to_owned());
        xpuprof_python::PY_FRAME_TAG | (labels.len() - 1) as u64
    })
}

/// True when `pid` has exited or is exiting: its address space is gone (its maps read empty).
fn exited_process(pid: u32) -> bool {
    std::fs::read(format!("/proc/{pid}/maps")).map_or(true, |m| m.is_empty())
}

/// A frame as BPF read it -> code object + byte offset + entry flag.
fn raw_frame(layout: &Layout, code: u64, instr: u64) -> RawFrame {
    let entry = instr & ENTRY != 0;
    let low = instr as u32;
    let offset = match layout.frames {
        Frames::Objects { lasti_in_units, .. } => match low as i32 {
            l if l < 0 => u64::MAX,
            l if lasti_in_units => l as u64 * 2,
            l => l as u64,
        },
        Frames::Interpreter { .. } if low == u32::MAX => u64::MAX,
        Frames::Interpreter { .. } => u64::from(low),
    };
    RawFrame { code, offset, entry, marker: 0 }
}

#[cfg(test)]
mod tests {
    use super::*;
    use xpuprof_python::cpython_offsets::Version;

    #[test]
    fn offsets_follow_the_layout_of_each_version() {
        let t = |v| Target {
            pid: 1,
            binary: String::new(),
            layout: Layout::of(v).unwrap(),
            runtime: 0x1000,
            code_type: 0,
            eval: (0, 1),
        };
        let o = PyOffsets::of(&t(Version::new(3, 11)));
        assert_eq!((o.interpreters_head, o.tstate_native_tid, o.cframe_current), (0x1000 + 40, 160, 8));
        assert_eq!(
            (o.objects, o.frame_code, o.frame_back, o.frame_is_entry, o.owner_cstack),
            (0, 32, 48, 68, NONE)
        );
        assert_eq!(
            (o.cframe_previous, o.code_instructions, o.code_identity, o.identity_version),
            (16, 184, 112, 0)
        );
        let o = PyOffsets::of(&t(Version::new(3, 12)));
        assert_eq!((o.frame_code, o.frame_back, o.frame_is_entry, o.owner_cstack), (0, 8, NONE, 3));
        assert_eq!((o.code_instructions, o.code_identity, o.identity_version), (192, 92, 1));
        let o = PyOffsets::of(&t(Version::new(3, 10)));
        assert_eq!((o.objects, o.tstate_native_tid, o.cframe_current, o.frame_owner), (1, NONE, NONE, NONE));
    }

    #[test]
    fn raw_frames_become_offsets() {
        let l311 = Layout::of(Version::new(3, 11)).unwrap();
        let f = raw_frame(l311, 0x1000, 10 | (0x1234 << 32) | ENTRY);
        assert_eq!((f.offset, f.entry), (10, true), "the identity bits are not part of the offset");
        assert_eq!(raw_frame(l311, 0x1000, 0xffff_ffff).offset, u64::MAX, "not started");
        let l310 = Layout::of(Version::new(3, 10)).unwrap();
        assert_eq!(raw_frame(l310, 0x1000, 7 | ENTRY).offset, 14);
        assert_eq!(raw_frame(l310, 0x1000, 0xffff_ffff | ENTRY).offset, u64::MAX);
    }

    #[test]
    fn looks_for_an_interpreter_only_in_new_candidate_files_and_at_a_bounded_rate() {
        let mut py = Interpreters::default();
        let me = std::process::id();
        // This test binary maps no CPython: nothing found, the candidate noted once.
        assert_eq!(py.discover(me, 1, ["/usr/lib/libc.so.6"]), None);
        assert!(py.procs[&me].examined.is_empty());
        assert_eq!(py.discover(me, 2, ["/usr/lib/libpython3.99.so.1.0"]), None);
        assert_eq!(py.procs[&me].examined, ["/usr/lib/libpython3.99.so.1.0"]);
        assert_eq!(py.discover(me, 2, ["/usr/lib/libpython3.99.so.1.0", "/x/python3"]), None, "same maps");
        assert_eq!(py.procs[&me].examined.len(), 1);
        let t = Instant::now();
        assert!(py.wants_look(me, t));
        assert!(!py.wants_look(me, t + LOOK_EVERY / 2));
        assert!(py.wants_look(me, t + LOOK_EVERY));
        py.forget(me);
        assert!(py.take_updates().is_empty(), "nothing was published for it");
        assert_eq!(py.stats.processes, 0);
    }

    #[test]
    fn frames_of_an_exited_process_keep_their_place_unnamed() {
        let python = "/usr/bin/python3.11";
        assert!(std::path::Path::new(python).exists(), "{python} is missing: run scripts/install-deps.sh");
        let mut child = std::process::Command::new(python)
            .args(["-c", "import sys; print('ready', flush=True); sys.stdin.readline()"])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        std::io::BufRead::read_line(&mut std::io::BufReader::new(child.stdout.as_mut().unwrap()), &mut line)
            .unwrap();
        let pid = child.id();
        let mut py = Interpreters::default();
        let maps = std::fs::read_to_string(format!("/proc/{pid}/maps")).unwrap();
        let paths = xpuprof_wire::maps::parse(&maps);
        assert!(py.discover(pid, 1, paths.iter().map(|m| m.path.as_str())).is_some());
        drop(child.stdin.take());
        child.wait().unwrap();
        // Two frames as BPF would have sent them just before the exit.
        let stack = PyStack {
            frames: 2,
            code: [0x1000; PY_MAX_FRAMES],
            instr: [0x1100 | ENTRY; PY_MAX_FRAMES],
            ..PyStack::default()
        };
        let (mut out, mut marks) = (Vec::new(), Vec::new());
        py.frames(pid, &stack, &mut out, &mut marks);
        assert_eq!(out.len(), 2, "the frames keep their place");
        assert!(out.iter().all(|&(id, entry)| py.label(id) == EXITED && entry));
        assert_eq!((py.stats.exited, py.stats.unreadable), (1, 0));
    }

    #[test]
    fn plain_mirrors_match_the_header_sizes() {
        assert_eq!(std::mem::size_of::<PyOffsets>(), 8 + 18 * 4);
        assert_eq!(std::mem::size_of::<PyStack>(), 8 + 3 * 8 * PY_MAX_FRAMES);
    }
}
