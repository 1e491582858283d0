//! Session-wide interning: sources number their definitions in their own id spaces; the host
//! maps them to one session-wide numbering, deduplicating identical definitions across sources
//! and processes, and symbolises each distinct frame once.

use std::path::Path;
use xpuprof_sdk::hash::IdMap;

use xpuprof_sdk::model::*;

use xpuprof_toolbox::normalise::{self, ModuleMap};

use super::symbolizer::Symbolizer;
use crate::host::bounded;

/// Maps one source's ids to session ids.
#[derive(Debug, Default)]
pub struct SourceIds {
    pub(crate) strs: IdMap<u32, StrId>,
    pub(crate) modules: IdMap<u32, ModuleId>,
    pub(crate) frames: IdMap<u32, FrameId>,
    pub(crate) stacks: IdMap<u32, StackId>,
    pub(crate) devices: IdMap<u32, DeviceId>,
    pub(crate) streams: IdMap<u32, StreamId>,
    /// References to ids the source never defined.
    pub dangling: u64,
}

macro_rules! lookup {
    ($fn:ident, $field:ident, $ty:ident) => {
        /// Maps a source id to the session id ([`$ty::NONE`] stays none; unknown ids are
        /// counted as dangling and become none).
        #[inline]
        pub fn $fn(&mut self, id: $ty) -> $ty {
            if id.is_none() {
                return id;
            }
            match self.$field.get(&id.0) {
                Some(g) => *g,
                None => {
                    self.dangling += 1;
                    $ty::NONE
                }
            }
        }
    };
}

impl SourceIds {
    lookup!(str, strs, StrId);
    lookup!(module, modules, ModuleId);
    lookup!(frame, frames, FrameId);
    lookup!(stack, stacks, StackId);
    lookup!(device, devices, DeviceId);
    lookup!(stream, streams, StreamId);
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct FrameKey {
    kind: FrameKind,
    module: ModuleId,
    address: u64,
    pid: u32,
    name: StrId,
    inlined: Vec<StrId>,
    file: StrId,
    line: u32,
    start_line: u32,
}

/// The session-wide definitions. Every new definition is pushed onto the output batch the
/// moment it is created, so it always precedes its first use.
#[derive(Debug, Default)]
pub struct Globals {
    strs: IdMap<Box<str>, StrId>,
    str_text: Vec<Box<str>>,
    modules: IdMap<(StrId, Vec<u8>), ModuleId>,
    module_paths: Vec<StrId>,
    frames: IdMap<FrameKey, FrameId>,
    /// Frame keys by session id (index = id - 1), for the agreement check.
    frame_keys: Vec<FrameKey>,
    stacks: IdMap<Vec<FrameId>, StackId>,
    /// Stack frames by session id (index = id - 1).
    stack_frames: Vec<Vec<FrameId>>,
    devices: IdMap<(u8, u32, [u8; 16], StrId), DeviceId>,
    streams: IdMap<(u32, DeviceId, u64), StreamId>,
    processes: IdMap<u32, StrId>,
    threads: IdMap<(u32, u32), StrId>,
    /// Processes' ranks, read from their environments (`crate::ranks`).
    pub ranks: crate::ranks::Ranks,
    /// Symbolizer for new frames.
    pub symbolizer: Symbolizer,
    /// Definitions pushed to the output so far (a batch without new ones holds only events).
    pub definitions_emitted: u64,
    /// Whether to symbolise (off in tests of the renumbering).
    pub symbolize: bool,
    /// Whether mangled names keep no display text (the session's `demangle = false`).
    pub keep_mangled: bool,
    /// Root-end frames cut because they lie outside every module (see `cut_outside_modules`).
    pub frames_cut: u64,
    /// Virtual-address frames turned into module + file offset here.
    pub virtual_normalised: u64,
    /// Virtual-address frames no file of their (live) process maps: JIT code, or the process
    /// had exited.
    pub virtual_unmapped: u64,
    /// Maps of the processes whose virtual frames were normalised, with when they were read
    /// (`None`: the process is gone).
    maps: IdMap<u32, (Option<ModuleMap>, std::time::Instant)>,
}

impl Globals {
    /// Interns a string, emitting its definition into `out` the first time.
    pub fn intern(&mut self, text: &str, out: &mut Vec<Record>) -> StrId {
        if let Some(id) = self.strs.get(text) {
            return *id;
        }
        let id = StrId(self.str_text.len() as u32 + 1);
        self.str_text.push(text.into());
        self.strs.insert(text.into(), id);
        let mut def = StrDef::new(id, text);
        xpuprof_toolbox::demangle::set_display(&mut def, !self.keep_mangled);
        out.push(Record::Str(def));
        self.definitions_emitted += 1;
        id
    }

    /// Text of a session string.
    pub fn text(&self, id: StrId) -> &str {
        if id.is_none() {
            return "";
        }
        self.str_text.get(id.0 as usize - 1).map_or("", |s| s)
    }

    /// Emits a session process definition.
    fn emit_process(&mut self, d: ProcessDef, out: &mut Vec<Record>) {
        self.processes.insert(d.pid, d.command);
        out.push(Record::Process(d));
        self.definitions_emitted += 1;
    }

    /// Defines again, with their rank, the processes that were defined in the middle of their
    /// `exec` (see [`crate::ranks::recheck`]).
    pub fn recheck_ranks(&mut self, out: &mut Vec<Record>) {
        for d in crate::ranks::recheck(self, out) {
            self.emit_process(d, out);
        }
    }

    /// Handles a definition from source `ids`, emitting session definitions into `out`. Its
    /// references to other definitions are renumbered by the schema's visitor
    /// ([`IdFields::map_ids`]); what makes two definitions the same one is decided here.
    pub fn define(&mut self, ids: &mut SourceIds, rec: &Record, out: &mut Vec<Record>) {
        match rec {
            Record::Str(d) => {
                let g = self.intern(&bounded::cap(&d.text, bounded::MAX_STRING_BYTES), out);
                ids.strs.insert(d.id.0, g);
            }
            Record::Process(d) => {
                let mut d = d.clone();
                d.map_ids(ids);
                let known = self.processes.get(&d.pid).copied();
                let fresh = known.is_none() || (known == Some(StrId::NONE) && !d.command.is_none());
                // The rank, from the process's environment (`ranks.rs`).
                if let Some(d) = crate::ranks::define(self, d, fresh, out) {
                    self.emit_process(d, out);
                }
            }
            Record::Thread(d) => {
                let mut d = d.clone();
                d.map_ids(ids);
                let known = self.threads.get(&(d.pid, d.tid)).copied();
                if known.is_none() || (known == Some(StrId::NONE) && !d.name.is_none()) {
                    self.threads.insert((d.pid, d.tid), d.name);
                    out.push(Record::Thread(d));
                    self.definitions_emitted += 1;
                }
            }
            Record::Device(d) => {
                let mut session = d.clone();
                session.map_ids(ids);
                let key = (d.vendor.0, d.index, d.uuid, session.name);
                let next = DeviceId(self.devices.len() as u32 + 1);
                let g = *self.devices.entry(key).or_insert_with(|| {
                    out.push(Record::Device(session.id(next)));
                    self.definitions_emitted += 1;
                    next
                });
                ids.devices.insert(d.id.0, g);
            }
            Record::Stream(d) => {
                let mut session = d.clone();
                session.map_ids(ids);
                let next = StreamId(self.streams.len() as u32 + 1);
                let g = *self.streams.entry((d.pid, session.device, d.native_id)).or_insert_with(|| {
                    out.push(Record::Stream(session.id(next)));
                    self.definitions_emitted += 1;
                    next
                });
                ids.streams.insert(d.id.0, g);
            }
            Record::Module(d) => {
                let path = ids.str(d.path);
                let g = self.module(path, &d.build_id, out);
                ids.modules.insert(d.id.0, g);
            }
            Record::Frame(d) => {
                let g = self.frame(ids, d, out);
                ids.frames.insert(d.id.0, g);
            }
            Record::Stack(d) => {
                let mut frames: Vec<FrameId> = d.frames.iter().map(|f| ids.frame(*f)).collect();
                self.cut_outside_modules(&mut frames);
                let next = StackId(self.stacks.len() as u32 + 1);
                let g = match self.stacks.get(&frames) {
                    Some(g) => *g,
                    None => {
                        out.push(Record::Stack(StackDef::default().id(next).frames(frames.clone())));
                        self.definitions_emitted += 1;
                        self.stack_frames.push(frames.clone());
                        self.stacks.insert(frames, next);
                        next
                    }
                };
                ids.stacks.insert(d.id.0, g);
            }
            _ => {}
        }
    }

    /// The session module of `path` + `build_id`, defined on first use.
    fn module(&mut self, path: StrId, build_id: &[u8], out: &mut Vec<Record>) -> ModuleId {
        if let Some(g) = self.modules.get(&(path, build_id.to_vec())) {
            return *g;
        }
        let id = ModuleId(self.module_paths.len() as u32 + 1);
        self.modules.insert((path, build_id.to_vec()), id);
        self.module_paths.push(path);
        out.push(Record::Module(ModuleDef::default().id(id).path(path).build_id(build_id.to_vec())));
        self.definitions_emitted += 1;
        id
    }

    fn frame(&mut self, ids: &mut SourceIds, d: &FrameDef, out: &mut Vec<Record>) -> FrameId {
        let mut key = FrameKey {
            kind: d.kind,
            module: ids.module(d.module),
            address: d.address,
            pid: if d.kind == FrameKind::Virtual { d.pid } else { 0 },
            name: ids.str(d.name),
            inlined: d.inlined.iter().map(|s| ids.str(*s)).collect(),
            file: ids.str(d.file),
            line: d.line,
            start_line: d.start_line,
        };
        if key.kind == FrameKind::Virtual && key.name.is_none() {
            self.normalise_virtual(&mut key, out);
        }
        if let Some(g) = self.frames.get(&key) {
            return *g;
        }
        let id = FrameId(self.frames.len() as u32 + 1);
        let place = Place { file: key.file, line: key.line, start_line: key.start_line };
        let (name, inlined, place) =
            if key.name.is_none() { self.resolve(&key, out) } else { (key.name, key.inlined.clone(), place) };
        let def = FrameDef::default()
            .id(id)
            .kind(key.kind)
            .module(key.module)
            .address(key.address)
            .pid(key.pid)
            .name(name)
            .inlined(inlined)
            .file(place.file)
            .line(place.line)
            .start_line(place.start_line);
        out.push(Record::Frame(def));
        self.definitions_emitted += 1;
        self.frame_keys.push(key.clone());
        self.frames.insert(key, id);
        id
    }

    /// Turns a virtual-address frame into module + file offset when a file of its process maps
    /// the address (the model's promise to sources that cannot normalise, e.g. third-party ones).
    /// The process's maps are read once, and again at most every 100 ms on a miss (code mapped
    /// later); an exited process's frames stay virtual. Counted either way.
    fn normalise_virtual(&mut self, key: &mut FrameKey, out: &mut Vec<Record>) {
        const REREAD: std::time::Duration = std::time::Duration::from_millis(100);
        let pid = key.pid;
        let stale = self.maps.get(&pid).is_none_or(|(m, at)| {
            m.as_ref().is_some_and(|m| m.file_offset(key.address).is_none()) && at.elapsed() >= REREAD
        });
        if stale {
            self.maps.insert(pid, (ModuleMap::read(pid).ok(), std::time::Instant::now()));
        }
        let hit = self.maps.get(&pid).and_then(|(m, _)| m.as_ref()?.file_offset(key.address));
        let Some((mapping, offset)) = hit else {
            self.virtual_unmapped += 1;
            return;
        };
        let (path, offset) = (mapping.path.clone(), offset);
        let build_id = normalise::build_id(&normalise::openable_path(pid, &path));
        let path = self.intern(&path, out);
        key.module = self.module(path, &build_id, out);
        key.kind = FrameKind::FileOffset;
        key.address = offset;
        key.pid = 0;
        self.virtual_normalised += 1;
    }

    /// Removes frames at the root end of a stack that lie outside every mapped module and have
    /// no name: a frame-pointer walk that climbs into code built without frame pointers ends on
    /// such addresses, which are noise (and would split flame graph roots). Counted.
    fn cut_outside_modules(&mut self, frames: &mut Vec<FrameId>) {
        while let Some(&last) = frames.last() {
            let Some(k) = (last.0 as usize).checked_sub(1).and_then(|i| self.frame_keys.get(i)) else {
                break;
            };
            let address_only = k.module.is_none() && k.name.is_none() && k.kind != FrameKind::Synthetic;
            if !address_only || frames.len() == 1 {
                break;
            }
            frames.pop();
            self.frames_cut += 1;
        }
    }

    /// The native frames of `stack` as comparable identities (module path + file offset, or
    /// name), innermost first, up to its first interpreter frame (a Python
    /// `function (file.py:line)`, see [`is_interpreter_frame`]), and whether there was one. Interpreter frames replace the interpreter's own native frames in the
    /// stacks that carry them, so only the native frames before them compare like with like.
    pub fn comparable_stack(&self, stack: StackId) -> (Vec<String>, bool) {
        let Some(frames) = stack.0.checked_sub(1).and_then(|i| self.stack_frames.get(i as usize)) else {
            return (Vec::new(), false);
        };
        let mut out = Vec::with_capacity(frames.len());
        for k in frames.iter().filter_map(|f| self.frame_keys.get((f.0 as usize).checked_sub(1)?)) {
            if k.kind == FrameKind::Synthetic && is_interpreter_frame(self.text(k.name)) {
                return (out, true);
            }
            out.push(if k.module.is_none() {
                self.text(k.name).to_owned()
            } else {
                format!("{}+{:#x}", self.text(self.module_paths[k.module.0 as usize - 1]), k.address)
            });
        }
        (out, false)
    }

    fn resolve(&mut self, key: &FrameKey, out: &mut Vec<Record>) -> (StrId, Vec<StrId>, Place) {
        if !self.symbolize {
            return (StrId::NONE, Vec::new(), Place::default());
        }
        let resolved = match key.kind {
            FrameKind::FileOffset if !key.module.is_none() => {
                let path = self.module_paths[key.module.0 as usize - 1];
                let path = self.text(path).to_owned();
                self.symbolizer.file_offset(Path::new(&path), key.address)
            }
            FrameKind::Kernel => self.symbolizer.kernel(key.address),
            // Still virtual after normalisation: anonymous memory, JIT code named in its perf map.
            FrameKind::Virtual => self.symbolizer.jit(key.pid, key.address),
            _ => None,
        };
        match resolved {
            Some(r) => {
                let name = self.intern(&r.name, out);
                let inlined = r.inlined.iter().map(|n| self.intern(n, out)).collect();
                let file = match &r.file {
                    Some(f) => self.intern(f, out),
                    None => StrId::NONE,
                };
                (name, inlined, Place { file, line: r.line, start_line: 0 })
            }
            None => (StrId::NONE, Vec::new(), Place::default()),
        }
    }
}

/// Where a frame's code is in its source: [`FrameDef`]'s `file`, `line` and `start_line`.
#[derive(Debug, Clone, Copy, Default)]
struct Place {
    file: StrId,
    line: u32,
    start_line: u32,
}

/// True for a named frame of interpreted code, as the sources name them: `function (file:line)`.
pub fn is_interpreter_frame(name: &str) -> bool {
    let Some(inner) = name.strip_suffix(')') else { return false };
    let Some((_, place)) = inner.rsplit_once(" (") else { return false };
    place.rsplit_once(':').is_some_and(|(file, line)| {
        !file.is_empty() && !line.is_empty() && line.bytes().all(|b| b.is_ascii_digit())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(kind: FrameKind, address: u64, pid: u32) -> Record {
        Record::Frame(FrameDef::default().id(FrameId(1)).kind(kind).address(address).pid(pid))
    }

    #[test]
    fn interpreter_frames_are_told_by_their_name() {
        assert!(is_interpreter_frame("worker (/w/workload.py:52)"));
        assert!(is_interpreter_frame("Module.to.<locals>.convert (module.py:1370)"));
        assert!(is_interpreter_frame("<module> (<frozen importlib._bootstrap>:1360)"));
        assert!(!is_interpreter_frame("main"));
        assert!(!is_interpreter_frame("[vdso]"));
        assert!(!is_interpreter_frame("operator() (x)"));
        assert!(!is_interpreter_frame("f (file.py:)"));
    }

    #[test]
    fn virtual_frames_of_a_live_process_become_file_offsets() {
        let mut g = Globals::default();
        let mut out = Vec::new();
        let here = virtual_frames_of_a_live_process_become_file_offsets as *const () as u64;
        g.define(&mut SourceIds::default(), &frame(FrameKind::Virtual, here, std::process::id()), &mut out);
        g.define(&mut SourceIds::default(), &frame(FrameKind::Virtual, 0x10, std::process::id()), &mut out);
        let records = out;
        let frames: Vec<&FrameDef> =
            records.iter().filter_map(|r| if let Record::Frame(f) = r { Some(f) } else { None }).collect();
        assert_eq!(frames[0].kind, FrameKind::FileOffset);
        assert!(!frames[0].module.is_none());
        assert_eq!(
            (frames[0].pid, frames[1].kind),
            (0, FrameKind::Virtual),
            "an unmapped address stays virtual"
        );
        let module =
            records.iter().find_map(|r| if let Record::Module(m) = r { Some(m) } else { None }).unwrap();
        let exe = std::fs::canonicalize(std::env::current_exe().unwrap()).unwrap();
        assert_eq!(std::fs::canonicalize(g.text(module.path)).unwrap(), exe);
        assert!(!module.build_id.is_empty());
        assert_eq!((g.virtual_normalised, g.virtual_unmapped), (1, 1));
    }
}
