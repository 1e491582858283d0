//! The definitions seen so far (strings, threads, devices, modules, frames, stacks), kept to
//! name things when the report is written. Events are aggregated by id; names are only looked
//! up at the end.

use xpuprof_toolbox::Definitions;

use xpuprof_sdk::model::*;

use crate::ranks::Ranks;

/// Session-wide definitions, by id (the toolbox's resolver), with the report's fallbacks.
#[derive(Debug, Default)]
pub struct Defs {
    defs: Definitions,
    ranks: Ranks,
}

impl Defs {
    /// Stores `record` if it is a definition; returns false for events.
    pub fn add(&mut self, record: &Record) -> bool {
        self.ranks.add(record);
        self.defs.add(record)
    }

    /// The ranks of the job the session's processes belong to.
    pub fn ranks(&self) -> &Ranks {
        &self.ranks
    }

    /// The name the host gave process `pid` when it is a rank of a job (`rank 1 (node-a,
    /// 4711)`), `None` otherwise (tables show its pid).
    pub fn process_name(&self, pid: u32) -> Option<String> {
        self.ranks.process_name(pid).map(|n| self.str(n).to_owned())
    }

    /// The text of string `id`, or `""`.
    pub fn str(&self, id: StrId) -> &str {
        self.defs.str(id).unwrap_or("")
    }

    /// The text of string `id`, or `fallback` when it is none or unknown.
    pub fn str_or<'a>(&'a self, id: StrId, fallback: &'a str) -> &'a str {
        self.defs.str_or(id, fallback)
    }

    /// Thread name (`comm`), or `""`.
    pub fn thread_name(&self, pid: u32, tid: u32) -> &str {
        self.defs.thread_name(pid, tid).unwrap_or("")
    }

    /// Process command, or `""`.
    pub fn process_command(&self, pid: u32) -> &str {
        self.defs.process_command(pid).unwrap_or("")
    }

    /// Device index and display name (`"GPU0"` style fallbacks when not defined); the name
    /// ends with the ranks that used it (`Acme X1 (rank 1)`) when the session has ranks, so the
    /// same index on two hosts or ranks reads apart.
    pub fn device(&self, id: DeviceId) -> (i64, String) {
        let (index, name) = match self.defs.device(id) {
            Some(d) => (i64::from(d.index), self.str(d.name).to_owned()),
            None => (-1, format!("[unknown device {}]", id.0)),
        };
        let ranks = self.ranks.of_device(id);
        if ranks.is_empty() {
            return (index, name);
        }
        let list: Vec<String> = ranks.iter().map(u32::to_string).collect();
        let which = if ranks.len() == 1 { "rank" } else { "ranks" };
        (index, format!("{name} ({which} {})", list.join(", ")).trim_start().to_owned())
    }

    /// Display label of a device: `"0 Acme X100"`.
    pub fn device_label(&self, id: DeviceId) -> String {
        match self.device(id) {
            (-1, name) => name,
            (i, name) if name.is_empty() => format!("{i}"),
            (i, name) => format!("{i} {name}"),
        }
    }

    /// The toolbox's resolver.
    pub fn definitions(&self) -> &Definitions {
        &self.defs
    }

    /// Frame `id`'s definition.
    pub fn frame_def(&self, id: FrameId) -> Option<&FrameDef> {
        self.defs.frame(id)
    }

    /// True when frame `id` is known by its name only (interpreted code, markers).
    pub fn is_named_frame(&self, id: FrameId) -> bool {
        self.defs.frame(id).is_some_and(|f| f.kind == FrameKind::Synthetic)
    }

    /// The frames of stack `id`, innermost first (none for an unknown stack).
    pub fn stack_frames(&self, id: StackId) -> &[FrameId] {
        self.defs.stack(id).unwrap_or(&[])
    }

    /// The function names of frame `id`, innermost last (inlined functions included).
    pub fn frame_names(&self, id: FrameId) -> Vec<String> {
        let Some(f) = self.defs.frame(id) else {
            return vec![format!("[unknown frame {}]", id.0)];
        };
        let mut names = Vec::with_capacity(1 + f.inlined.len());
        names.push(self.frame_base_name(f));
        names.extend(f.inlined.iter().map(|s| self.str(*s).to_owned()).filter(|s| !s.is_empty()));
        names
    }

    /// The symbol of a frame, or `module+0xoffset` when it has none.
    fn frame_base_name(&self, f: &FrameDef) -> String {
        if !f.name.is_none() && !self.str(f.name).is_empty() {
            return self.str(f.name).to_owned();
        }
        let module = self.defs.module_path(f.module).unwrap_or("");
        let base = module.rsplit('/').next().unwrap_or(module);
        if base.is_empty() {
            format!("0x{:x}", f.address)
        } else {
            format!("{base}+0x{:x}", f.address)
        }
    }

    /// The frames of a launch stack as function names, innermost first, starting at the
    /// caller of the launching API call `api`: the frames of the API function and below it (the
    /// runtime's and driver's inside the call) are dropped when the stack holds a frame of that
    /// name. The name comes from the record, never from a list of vendor libraries; a stack
    /// that already starts at the caller is returned whole.
    pub fn launch_stack_names(&self, id: StackId, api: StrId) -> Vec<String> {
        let mut names = self.stack_names(id);
        let api = self.str(api);
        if !api.is_empty() {
            if let Some(at) = names.iter().position(|n| n == api) {
                names.drain(..=at);
            }
        }
        names
    }

    /// The frames of a stack as function names, innermost first (inlined functions expanded,
    /// innermost first too). Empty for [`StackId::NONE`] or an unknown stack.
    pub fn stack_names(&self, id: StackId) -> Vec<String> {
        let Some(frames) = self.defs.stack(id) else {
            return Vec::new();
        };
        let mut out = Vec::with_capacity(frames.len());
        for f in frames {
            out.extend(self.frame_names(*f).into_iter().rev());
        }
        out
    }
}
