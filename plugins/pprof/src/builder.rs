//! Interns the strings, functions, locations and mappings of a `Profile` as samples reference
//! them, and completes them once every sample is in: function names (which depend on all the
//! names in the profile), mapping ranges and the main executable's mapping first.
//!
//! - Python frames (`function (file.py:line)`) become `Function{name: function, filename:
//!   file, start_line}` and `Line{line}`: `pprof -list` finds the source, a function's lines are
//!   one function. Their `system_name` is `function (file.py)`; `start_line` is the frame's
//!   (0 where the source did not say).
//! - Native frames: one `Line` per function, innermost inlined function first. `name` is the
//!   readable name ([`Readable`]), `system_name` the full (mangled, when the source sent it
//!   mangled) name. The innermost function has the frame's source file (`filename`) and line
//!   where the module's debug information gave them (the host's symbolizer); the functions it
//!   is inlined into have line 0 (the records carry one place per frame).
//! - `name` differs from `system_name` wherever pprof would rewrite it otherwise: pprof
//!   "simplifies" a function whose two names are equal by cutting everything in `(...)` and
//!   `<...>`, which blanked `<module>` and merged template instantiations.

use std::collections::HashMap;

use xpuprof_sdk::hash::IdMap;
use xpuprof_sdk::model::*;
use xpuprof_toolbox::own_code::OWN_FRAME;
use xpuprof_toolbox::python_frame::PyFrameName;

use crate::defs::Defs;
use crate::names::{self, Readable};
use crate::proto::{self, Profile};

/// What a function is, before its names are chosen.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum FnKey {
    /// A name shown as it is (launch API, `[GPU_Memcpy]HtoD`, `[unknown launch site]`).
    Plain(String),
    /// A native function or kernel: a prefix (`[GPU_Kernel]` or none), its display text and its
    /// text as the source sent it.
    Native { prefix: &'static str, full: String, raw: String, file: String },
    /// A Python function, with its first line (0 when not known).
    Python { function: String, file: String, start_line: u32 },
}

/// Builds the `Profile` message.
#[derive(Debug)]
pub struct Builder<'d> {
    defs: &'d Defs,
    pub p: Profile,
    strings: HashMap<String, i64>,
    functions: HashMap<FnKey, u64>,
    function_keys: Vec<FnKey>,
    mappings: IdMap<ModuleId, u64>,
    /// Lowest and highest address seen in each mapping, by mapping index.
    spans: Vec<(u64, u64)>,
    frames: IdMap<FrameId, u64>,
    synthetic: HashMap<String, u64>,
    /// Processes seen, for the main executable.
    pids: Vec<u32>,
}

impl<'d> Builder<'d> {
    pub fn new(defs: &'d Defs) -> Self {
        let mut b = Self {
            defs,
            p: Profile::default(),
            strings: HashMap::new(),
            functions: HashMap::new(),
            function_keys: Vec::new(),
            mappings: IdMap::default(),
            spans: Vec::new(),
            frames: IdMap::default(),
            synthetic: HashMap::new(),
            pids: Vec::new(),
        };
        b.s("");
        b
    }

    /// The definitions the profile is built from.
    pub fn defs(&self) -> &'d Defs {
        self.defs
    }

    /// The string table index of `text`.
    pub fn s(&mut self, text: &str) -> i64 {
        if let Some(&i) = self.strings.get(text) {
            return i;
        }
        let i = self.p.string_table.len() as i64;
        self.p.string_table.push(text.to_owned());
        self.strings.insert(text.to_owned(), i);
        i
    }

    /// Notes that process `pid` has samples.
    pub fn process(&mut self, pid: u32) {
        if self.pids.last() != Some(&pid) && !self.pids.contains(&pid) {
            self.pids.push(pid);
        }
    }

    fn function(&mut self, key: FnKey) -> u64 {
        if let Some(&id) = self.functions.get(&key) {
            return id;
        }
        let id = self.function_keys.len() as u64 + 1;
        self.function_keys.push(key.clone());
        self.functions.insert(key, id);
        id
    }

    /// The function of native name `name` (display text, raw text), after `prefix`, in source
    /// file `file` (none when [`StrId::NONE`]).
    fn native(&mut self, prefix: &'static str, name: StrId, file: StrId) -> Option<u64> {
        let full = self.defs.text(name)?.to_owned();
        let raw = self.defs.raw(name).unwrap_or(&full).to_owned();
        let file = self.defs.text(file).unwrap_or_default().to_owned();
        Some(self.function(FnKey::Native { prefix, full, raw, file }))
    }

    fn mapping(&mut self, module: ModuleId, address: u64) -> u64 {
        if module.is_none() {
            return 0;
        }
        let id = match self.mappings.get(&module) {
            Some(&id) => id,
            None => self.new_mapping(module),
        };
        let span = &mut self.spans[id as usize - 1];
        *span = (span.0.min(address), span.1.max(address));
        id
    }

    fn new_mapping(&mut self, module: ModuleId) -> u64 {
        let id = self.p.mapping.len() as u64 + 1;
        let (path, build_id) = match self.defs.module(module) {
            Some((p, b)) => (p.to_owned(), hex(b)),
            None => ("[unknown module]".to_owned(), String::new()),
        };
        let (filename, build_id) = (self.s(&path), self.s(&build_id));
        self.p.mapping.push(proto::Mapping {
            id,
            filename,
            build_id,
            has_functions: true,
            ..Default::default()
        });
        self.spans.push((u64::MAX, 0));
        self.mappings.insert(module, id);
        id
    }

    /// The location of frame `f`: its function and the functions inlined into it.
    fn frame(&mut self, f: FrameId) -> u64 {
        if let Some(&id) = self.frames.get(&f) {
            return id;
        }
        let id = self.p.location.len() as u64 + 1;
        let loc = match self.defs.frame(f) {
            None => proto::Location { id, line: vec![self.line("[unknown frame]")], ..Default::default() },
            Some(fr) => self.location(id, fr),
        };
        self.p.location.push(loc);
        self.frames.insert(f, id);
        id
    }

    fn location(&mut self, id: u64, fr: &FrameDef) -> proto::Location {
        if fr.kind == FrameKind::Synthetic {
            if let Some((py, line)) = self.defs.text(fr.name).and_then(python_frame) {
                let (function, file) = (py.function.to_owned(), py.file.to_owned());
                let key = FnKey::Python { function, file, start_line: fr.start_line };
                let line = vec![proto::Line { function_id: self.function(key), line }];
                return proto::Location { id, line, ..Default::default() };
            }
        }
        // Innermost first: the last inlined function, ..., the function it is all in. The
        // frame's place is the innermost function's.
        let mut line = Vec::with_capacity(fr.inlined.len() + 1);
        let mut place = Some((fr.file, i64::from(fr.line)));
        for &s in fr.inlined.iter().rev() {
            let (file, at) = place.take().unwrap_or((StrId::NONE, 0));
            let function_id = match self.native("", s, file) {
                Some(f) => f,
                None => self.function(FnKey::Plain("[unknown inlined]".to_owned())),
            };
            line.push(proto::Line { function_id, line: at });
        }
        let (file, at) = place.unwrap_or((StrId::NONE, 0));
        let function_id = match self.native("", fr.name, file) {
            Some(f) => f,
            None => self.function(FnKey::Plain(self.defs.unsymbolized(fr))),
        };
        line.push(proto::Line { function_id, line: at });
        proto::Location { id, mapping_id: self.mapping(fr.module, fr.address), address: fr.address, line }
    }

    fn line(&mut self, name: &str) -> proto::Line {
        proto::Line { function_id: self.function(FnKey::Plain(name.to_owned())), line: 0 }
    }

    /// A location that is just a name (launch API, GPU leaf, unknown launch site).
    pub fn synthetic(&mut self, name: &str) -> u64 {
        if let Some(&id) = self.synthetic.get(name) {
            return id;
        }
        let id = self.p.location.len() as u64 + 1;
        let line = vec![self.line(name)];
        self.p.location.push(proto::Location { id, line, ..Default::default() });
        self.synthetic.insert(name.to_owned(), id);
        id
    }

    /// The GPU leaf of kernel `name`: `[GPU_Kernel]<readable name>`.
    pub fn kernel(&mut self, name: StrId) -> u64 {
        let key = format!("\0kernel {}", name.0);
        if let Some(&id) = self.synthetic.get(&key) {
            return id;
        }
        let function_id = match self.native("[GPU_Kernel]", name, StrId::NONE) {
            Some(f) => f,
            None => self.function(FnKey::Plain("[GPU_Kernel]kernel".to_owned())),
        };
        let id = self.p.location.len() as u64 + 1;
        let line = vec![proto::Line { function_id, line: 0 }];
        self.p.location.push(proto::Location { id, line, ..Default::default() });
        self.synthetic.insert(key, id);
        id
    }

    /// Stack `stack`, leaf first; xpuprof's own code in the target under one `[xpuprof]`
    /// location, above its outermost frame, so its samples read as the profiler's.
    pub fn stack(&mut self, stack: StackId, out: &mut Vec<u64>) {
        match self.defs.stack(stack) {
            Some(frames) => {
                let own = frames.iter().rposition(|&f| self.defs.is_own(f));
                for (i, &f) in frames.iter().enumerate() {
                    let id = self.frame(f);
                    out.push(id);
                    if own == Some(i) {
                        out.push(self.synthetic(OWN_FRAME));
                    }
                }
            }
            None => out.push(self.synthetic("[unknown launch site]")),
        }
    }

    /// Completes the profile: function names, mapping ranges, the main executable first.
    pub fn finish(mut self) -> Profile {
        self.functions_named();
        self.ranges();
        self.main_mapping_first();
        self.p
    }

    fn functions_named(&mut self) {
        // Kernels apart from functions: a kernel reads as in the folded output and the summary.
        let (mut kernels, mut functions) = (Readable::default(), Readable::default());
        for k in &self.function_keys {
            if let FnKey::Native { prefix, full, .. } = k {
                if prefix.is_empty() { &mut functions } else { &mut kernels }.add(full);
            }
        }
        for (i, k) in std::mem::take(&mut self.function_keys).into_iter().enumerate() {
            let (name, system, file, start_line) = match k {
                FnKey::Plain(n) => (n.clone(), n, String::new(), 0),
                FnKey::Native { prefix, full, raw, file } => {
                    let readable = if prefix.is_empty() { &functions } else { &kernels };
                    let name = format!("{prefix}{}", readable.name(&full));
                    (name, format!("{prefix}{}", if raw.is_empty() { &full } else { &raw }), file, 0)
                }
                FnKey::Python { function, file, start_line } => {
                    (function.clone(), format!("{function} ({file})"), file, start_line)
                }
            };
            // Equal names with brackets would be cut by pprof (`<unknown>`): no system name then.
            let system = if name == system && name.contains(['(', '<']) { String::new() } else { system };
            let f = proto::Function {
                id: i as u64 + 1,
                name: self.s(&name),
                system_name: self.s(&system),
                filename: self.s(&file),
                start_line: i64::from(start_line),
            };
            self.p.function.push(f);
        }
    }

    /// Each mapping covers the file offsets its frames' addresses are (pages around them), so
    /// an address reads the same as a file offset (`memory_start` = `file_offset`).
    fn ranges(&mut self) {
        for (m, &(lo, hi)) in self.p.mapping.iter_mut().zip(&self.spans) {
            if lo <= hi {
                m.memory_start = lo & !0xfff;
                m.memory_limit = (hi | 0xfff).saturating_add(1);
                m.file_offset = m.memory_start;
            }
        }
    }

    /// pprof names a profile after its first mapping ("File: ..."): the executable of the
    /// first defined process with samples (the command's, before the children it started; by
    /// name, else the first mapping that is not a library), or, when no frame is in an
    /// executable, a mapping of that process's executable without locations.
    fn main_mapping_first(&mut self) {
        let mut pids = self.pids.clone();
        pids.sort_by_key(|&p| self.defs.defined_at(p));
        let exes: Vec<String> =
            pids.iter().filter_map(|&p| self.defs.executable(p)).map(str::to_owned).collect();
        let file = |m: &proto::Mapping| self.p.string_table[m.filename as usize].as_str();
        let executable = |m: &proto::Mapping| !names::is_library(file(m)) && !file(m).starts_with('[');
        // The first process's executable by name: the same file name, else one the command's
        // name starts (`python3` runs `/usr/bin/python3.12`).
        let named = |e: &str, exact: bool| {
            let e = names::basename(e);
            self.p.mapping.iter().position(|m| {
                let f = names::basename(file(m));
                executable(m) && if exact { f == e } else { f.starts_with(e) }
            })
        };
        let by_name = exes.iter().find_map(|e| named(e, true).or_else(|| named(e, false)));
        match by_name.or_else(|| self.p.mapping.iter().position(executable)) {
            Some(i) => self.p.mapping.swap(0, i),
            None => {
                let Some(exe) = exes.first() else { return };
                let id = self.p.mapping.len() as u64 + 1;
                let filename = self.s(exe);
                self.p.mapping.insert(0, proto::Mapping { id, filename, ..Default::default() });
            }
        }
    }
}

/// Lowercase hex of `bytes`.
fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// `text` as a Python frame pprof shows as one: it names a function and its line fits pprof's
/// `int64`.
fn python_frame(text: &str) -> Option<(PyFrameName<'_>, i64)> {
    let py = PyFrameName::parse(text).filter(|py| !py.function.is_empty())?;
    Some((py, py.line.parse().ok()?))
}
