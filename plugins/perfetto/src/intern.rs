//! Interned names, frames, mappings and callstacks (definitions read through the toolbox's
//! resolver): one iid per thing for the whole trace,
//! emitted on each sequence the first time it is used there (see [`crate::sequence`]).
//!
//! Iids: event, annotation, function and mapping-path names are numbered in order of first
//! use; a callstack's iid is its xpuprof stack id and a mapping's its module id (both already
//! unique in the session); frames are numbered as stacks are first expanded. An xpuprof frame
//! with inlined functions becomes one Perfetto frame per function, outermost first, so the
//! flame graph shows the inlined calls. xpuprof's own code in the target (its agents:
//! [`xpuprof_toolbox::own_code`]) goes under one `[xpuprof]` frame above its outermost frame.

use xpuprof_sdk::hash::{IdMap, IdSet};
use xpuprof_sdk::model::*;
use xpuprof_toolbox::defs::Definitions;
use xpuprof_toolbox::own_code::{is_own_frame, OWN_FRAME};

use crate::interned::{self, Interned};
use crate::sequence::{Kind, Sequence};

/// Mapping iid of frames without a module.
const NO_MODULE: u64 = 1 << 40;

#[derive(Debug)]
struct PFrame {
    function: u64,
    mapping: u64,
    rel_pc: u64,
}

/// A table of texts numbered from 1.
#[derive(Debug, Default)]
struct Names {
    ids: IdMap<Box<str>, u64>,
    texts: Vec<Box<str>>,
}

impl Names {
    fn iid(&mut self, text: &str) -> u64 {
        if let Some(&i) = self.ids.get(text) {
            return i;
        }
        self.texts.push(text.into());
        let i = self.texts.len() as u64;
        self.ids.insert(text.into(), i);
        i
    }

    fn text(&self, iid: u64) -> &str {
        &self.texts[iid as usize - 1]
    }
}

/// Ids below this are looked up in flat tables (the host numbers strings from 1).
const FLAT: u32 = 1 << 22;

/// Event name iids by string id: a vector indexed by id (0 = none yet), a map beyond [`FLAT`].
/// Three lookups per launch (API call, launch, kernel names).
#[derive(Debug, Default)]
struct ByStr {
    flat: Vec<u64>,
    large: IdMap<StrId, u64>,
}

impl ByStr {
    #[inline]
    fn get(&self, id: StrId) -> Option<u64> {
        if id.0 >= FLAT {
            return self.large.get(&id).copied();
        }
        self.flat.get(id.0 as usize).copied().filter(|&i| i != 0)
    }

    fn insert(&mut self, id: StrId, iid: u64) {
        if id.0 >= FLAT {
            self.large.insert(id, iid);
            return;
        }
        let i = id.0 as usize;
        if i >= self.flat.len() {
            self.flat.resize((i + 1).next_power_of_two(), 0);
        }
        self.flat[i] = iid;
    }

    fn remove(&mut self, id: StrId) {
        if id.0 >= FLAT {
            self.large.remove(&id);
        } else if let Some(i) = self.flat.get_mut(id.0 as usize) {
            *i = 0;
        }
    }
}

/// Adds `text` as entry `iid` of `table` (once per sequence and name: kept out of the callers).
#[cold]
#[inline(never)]
fn add_name(out: &mut Interned, table: usize, iid: u64, text: &str) {
    out.name(table, iid, text.as_bytes());
}

/// Everything interned, and the definitions needed to render it.
#[derive(Debug, Default)]
pub struct Interner {
    /// The definitions, through the toolbox's resolver (display texts: names the host demangled).
    defs: Definitions,
    /// Build ids of modules (the resolver keeps only their paths).
    build_ids: IdMap<ModuleId, Vec<u8>>,
    /// Event name iid of each string used as an event name.
    by_str: ByStr,
    /// Event name iids of fixed names (`Memcpy HtoD`, ...), by the address of their text.
    statics: Vec<(usize, u64)>,
    event_names: Names,
    annotation_names: Names,
    annotation_values: Names,
    /// Annotation value iid of each launch dimension (`128x1x1`).
    dims: IdMap<[u32; 3], u64>,
    /// The last two dimensions looked up (a kernel's grid and block), with their iids.
    last_dims: [([u32; 3], u64); 2],
    functions: Names,
    paths: Names,
    /// Path component iids of each mapping that frames use.
    mapping_paths: IdMap<u64, Vec<u64>>,
    /// The Perfetto frames of each xpuprof frame, outermost first, once expanded.
    frames: IdMap<FrameId, Vec<u64>>,
    pframes: Vec<PFrame>,
    /// Stacks whose frames are expanded.
    expanded: IdSet<StackId>,
    /// The outermost frame of xpuprof's own code of each expanded stack that has one.
    own: IdMap<StackId, FrameId>,
    /// The Perfetto frame of `[xpuprof]`, once a stack needs it.
    own_pframe: Option<u64>,
}

impl Interner {
    /// Records a definition.
    pub fn define(&mut self, r: &Record) {
        match r {
            Record::Str(d) => {
                self.by_str.remove(d.id);
            }
            Record::Module(d) => {
                self.build_ids.insert(d.id, d.build_id.clone());
            }
            Record::Frame(d) => {
                self.frames.remove(&d.id);
            }
            Record::Stack(d) => {
                self.expanded.remove(&d.id);
                self.own.remove(&d.id);
            }
            _ => {}
        }
        self.defs.add(r);
    }

    /// The definitions seen so far.
    pub fn defs(&self) -> &Definitions {
        &self.defs
    }

    /// The display text of string `id`.
    pub fn text(&self, id: StrId) -> Option<&str> {
        self.defs.str(id)
    }

    /// The event name iid of string `id` (`fallback` when it is none or unknown).
    pub fn event_name_of(&mut self, id: StrId, fallback: &str) -> u64 {
        if let Some(i) = self.by_str.get(id) {
            return i;
        }
        let text = self.defs.str(id);
        let known = text.is_some();
        let i = self.event_names.iid(text.unwrap_or(fallback));
        if known {
            self.by_str.insert(id, i);
        }
        i
    }

    /// The event name iid of `text`.
    pub fn event_name(&mut self, text: &str) -> u64 {
        self.event_names.iid(text)
    }

    /// The event name iid of fixed name `text`, without hashing the text each time.
    pub fn static_event_name(&mut self, text: &'static str) -> u64 {
        let at = text.as_ptr() as usize;
        if let Some(&(_, i)) = self.statics.iter().find(|(p, _)| *p == at) {
            return i;
        }
        let i = self.event_names.iid(text);
        self.statics.push((at, i));
        i
    }

    /// The debug annotation name iid of `text`.
    pub fn annotation_name(&mut self, text: &str) -> u64 {
        self.annotation_names.iid(text)
    }

    /// The annotation value iid of launch dimensions `d`, rendered `XxYxZ`.
    pub fn dims(&mut self, d: [u32; 3]) -> u64 {
        if let Some(&(_, i)) = self.last_dims.iter().find(|(l, i)| *l == d && *i != 0) {
            return i;
        }
        let i = match self.dims.get(&d) {
            Some(&i) => i,
            None => {
                let i = self.annotation_values.iid(&format!("{}x{}x{}", d[0], d[1], d[2]));
                self.dims.insert(d, i);
                i
            }
        };
        self.last_dims = [self.last_dims[1], (d, i)];
        i
    }

    /// Adds annotation value `iid` to `out` unless `seq` has it.
    #[inline(always)]
    pub fn emit_annotation_value(&self, seq: &mut Sequence, iid: u64, out: &mut Interned) {
        if seq.needs(Kind::AnnotationValue, iid) {
            add_name(out, interned::ANNOTATION_VALUES, iid, self.annotation_values.text(iid));
        }
    }

    /// Adds event name `iid` to `out` unless `seq` has it.
    #[inline(always)]
    pub fn emit_event_name(&self, seq: &mut Sequence, iid: u64, out: &mut Interned) {
        if seq.needs(Kind::EventName, iid) {
            add_name(out, interned::EVENT_NAMES, iid, self.event_names.text(iid));
        }
    }

    /// Adds annotation name `iid` to `out` unless `seq` has it.
    #[inline(always)]
    pub fn emit_annotation_name(&self, seq: &mut Sequence, iid: u64, out: &mut Interned) {
        if seq.needs(Kind::AnnotationName, iid) {
            add_name(out, interned::ANNOTATION_NAMES, iid, self.annotation_names.text(iid));
        }
    }

    /// The name of the innermost function of `stack`: what an off-CPU slice is called.
    pub fn leaf_name(&mut self, stack: StackId) -> String {
        let Some(&leaf) = self.defs.stack(stack).and_then(|f| f.first()) else {
            return "[unknown stack]".into();
        };
        let Some(f) = self.defs.frame(leaf) else { return "[unknown frame]".into() };
        let innermost = f.inlined.last().copied().unwrap_or(f.name);
        match self.text(innermost) {
            Some(t) => t.to_owned(),
            None => self.unsymbolized(f.module, f.address),
        }
    }

    fn unsymbolized(&self, module: ModuleId, address: u64) -> String {
        let path = self.defs.module_path(module).unwrap_or("[unknown module]");
        format!("{}+{address:#x}", crate::names::basename(path))
    }

    /// The callstack iid of `stack`, expanding its frames the first time; `None` when the stack
    /// was never defined.
    pub fn callstack(&mut self, stack: StackId) -> Option<u64> {
        if !self.expanded.contains(&stack) {
            let frames = self.defs.stack(stack)?.to_vec();
            let own = frames
                .iter()
                .rev()
                .find(|&&f| self.defs.frame(f).is_some_and(|d| is_own_frame(&self.defs, d)));
            if let Some(&f) = own {
                self.own.insert(stack, f);
                if self.own_pframe.is_none() {
                    self.number_path(NO_MODULE);
                    let function = self.functions.iid(OWN_FRAME);
                    self.pframes.push(PFrame { function, mapping: NO_MODULE, rel_pc: 0 });
                    self.own_pframe = Some(self.pframes.len() as u64);
                }
            }
            for f in frames {
                self.expand(f);
            }
            self.expanded.insert(stack);
        }
        Some(stack.0 as u64)
    }

    fn expand(&mut self, id: FrameId) {
        if self.frames.contains_key(&id) {
            return;
        }
        let Some(f) = self.defs.frame(id) else { return };
        let mapping = if f.module.is_none() { NO_MODULE } else { f.module.0 as u64 };
        let (module, address, name, inlined) = (f.module, f.address, f.name, f.inlined.clone());
        self.number_path(mapping);
        let mut names: Vec<String> = Vec::with_capacity(1 + inlined.len());
        let outer = self.text(name).map(str::to_owned);
        names.push(outer.unwrap_or_else(|| self.unsymbolized(module, address)));
        names.extend(inlined.iter().map(|s| self.text(*s).unwrap_or("[unknown inlined]").to_owned()));
        let mut expanded = Vec::with_capacity(names.len());
        for n in &names {
            let function = self.functions.iid(n);
            self.pframes.push(PFrame { function, mapping, rel_pc: address });
            expanded.push(self.pframes.len() as u64);
        }
        self.frames.insert(id, expanded);
    }

    /// Numbers the path components of mapping `iid` (Perfetto joins them with '/').
    fn number_path(&mut self, iid: u64) {
        if self.mapping_paths.contains_key(&iid) {
            return;
        }
        let path =
            Some(ModuleId(iid as u32)).filter(|_| iid != NO_MODULE).and_then(|m| self.defs.module_path(m));
        let path = path.unwrap_or("[unknown module]").to_owned();
        let parts = path.split('/').filter(|p| !p.is_empty()).map(|p| self.paths.iid(p)).collect();
        self.mapping_paths.insert(iid, parts);
    }

    /// Adds callstack `iid` (from [`Interner::callstack`]) and everything it refers to that `seq`
    /// does not have yet to `out`.
    pub fn emit_callstack(&self, seq: &mut Sequence, iid: u64, out: &mut Interned) {
        if !seq.needs(Kind::Callstack, iid) {
            return;
        }
        let at = out.begin_callstack(iid);
        let own = self.own.get(&StackId(iid as u32)).copied();
        for f in self.defs.stack(StackId(iid as u32)).into_iter().flatten().rev() {
            if own == Some(*f) {
                if let Some(pf) = self.own_pframe {
                    out.callstack_frame(pf);
                    self.emit_frame(seq, pf, out);
                }
            }
            for &pf in self.frames.get(f).map(Vec::as_slice).unwrap_or_default() {
                out.callstack_frame(pf);
                self.emit_frame(seq, pf, out);
            }
        }
        out.end_callstack(at);
    }

    fn emit_frame(&self, seq: &mut Sequence, iid: u64, out: &mut Interned) {
        if !seq.needs(Kind::Frame, iid) {
            return;
        }
        let f = &self.pframes[iid as usize - 1];
        if seq.needs(Kind::FunctionName, f.function) {
            out.name(interned::FUNCTION_NAMES, f.function, self.functions.text(f.function).as_bytes());
        }
        self.emit_mapping(seq, f.mapping, out);
        out.frame(iid, f.function, f.mapping, f.rel_pc);
    }

    fn emit_mapping(&self, seq: &mut Sequence, iid: u64, out: &mut Interned) {
        if !seq.needs(Kind::Mapping, iid) {
            return;
        }
        let build_id = match self.build_ids.get(&ModuleId(iid as u32)) {
            Some(b) if iid != NO_MODULE => b.as_slice(),
            _ => &[][..],
        };
        let has_build_id = !build_id.is_empty();
        if has_build_id && seq.needs(Kind::BuildId, iid) {
            out.name(interned::BUILD_IDS, iid, build_id);
        }
        let paths = self.mapping_paths.get(&iid).map(Vec::as_slice).unwrap_or_default();
        for &i in paths {
            if seq.needs(Kind::MappingPath, i) {
                out.name(interned::MAPPING_PATHS, i, self.paths.text(i).as_bytes());
            }
        }
        out.mapping(iid, has_build_id.then_some(iid), paths);
    }
}
