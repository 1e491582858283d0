//! The definitions a profile needs, through the toolbox's definitions resolver
//! ([`xpuprof_toolbox::defs::Definitions`]), plus the modules' build ids (which it does not
//! keep) and the display names of processes, threads, devices and streams. Kept for the whole
//! run: they grow with distinct things, not with time.

use xpuprof_sdk::hash::IdMap;
use xpuprof_sdk::model::*;
use xpuprof_toolbox::defs::Definitions;

/// Definitions seen so far.
#[derive(Debug, Default)]
pub struct Defs {
    defs: Definitions,
    build_ids: IdMap<ModuleId, Vec<u8>>,
    /// Each process's place in definition order (the host defines the command's process
    /// before the children it starts).
    defined: IdMap<u32, usize>,
}

impl Defs {
    /// Records `r` if it is a definition.
    pub fn define(&mut self, r: &Record) {
        match r {
            Record::Module(d) if !d.build_id.is_empty() => {
                self.build_ids.insert(d.id, d.build_id.clone());
            }
            Record::Process(d) => {
                let next = self.defined.len();
                self.defined.entry(d.pid).or_insert(next);
            }
            _ => {}
        }
        self.defs.add(r);
    }

    /// Process `pid`'s place in definition order (undefined ones last).
    pub fn defined_at(&self, pid: u32) -> usize {
        self.defined.get(&pid).copied().unwrap_or(usize::MAX)
    }

    /// The display text of string `id` (a name the host demangled, or the text itself).
    pub fn text(&self, id: StrId) -> Option<&str> {
        self.defs.str(id)
    }

    /// Path and build id of module `id`.
    pub fn module(&self, id: ModuleId) -> Option<(&str, &[u8])> {
        let path = self.defs.module_path(id)?;
        Some((path, self.build_ids.get(&id).map_or(&[][..], Vec::as_slice)))
    }

    /// True when frame `id` is xpuprof's own code in the target ([`xpuprof_toolbox::own_code`]).
    pub fn is_own(&self, id: FrameId) -> bool {
        self.defs.frame(id).is_some_and(|f| xpuprof_toolbox::own_code::is_own_frame(&self.defs, f))
    }

    /// Frame `id`.
    pub fn frame(&self, id: FrameId) -> Option<&FrameDef> {
        self.defs.frame(id)
    }

    /// The frames of stack `id`, innermost first.
    pub fn stack(&self, id: StackId) -> Option<&[FrameId]> {
        self.defs.stack(id)
    }

    /// The text of string `id` as the source sent it (a mangled name stays mangled).
    pub fn raw(&self, id: StrId) -> Option<&str> {
        self.defs.raw(id)
    }

    /// The executable of process `pid` as its command line names it (`python3`,
    /// `/usr/bin/python3.12`).
    pub fn executable(&self, pid: u32) -> Option<&str> {
        self.defs.process_command(pid)?.split_whitespace().next()
    }

    /// The name the host gave the process (`rank 3 (node-2, 4711)`), else its executable name
    /// (`python3`), or `process <pid>`.
    pub fn process(&self, pid: u32) -> String {
        if let Some(name) = self.defs.process_name(pid) {
            return name.to_owned();
        }
        match self.defs.process_command(pid) {
            Some(cmd) => xpuprof_toolbox::defs::exe_name(cmd).to_owned(),
            None => format!("process {pid}"),
        }
    }

    /// The thread's name, or `thread <tid>`.
    pub fn thread(&self, pid: u32, tid: u32) -> String {
        self.defs.thread_name(pid, tid).map_or_else(|| format!("thread {tid}"), str::to_owned)
    }

    /// `GPU <index> (<name>)`, or `device <id>`.
    pub fn device(&self, id: DeviceId) -> String {
        match self.defs.device(id) {
            Some(d) => format!("GPU {} ({})", d.index, self.defs.str_or(d.name, "device")),
            None => format!("device {}", id.0),
        }
    }

    /// The stream's name, or `stream <native id>`.
    pub fn stream(&self, id: StreamId) -> String {
        match self.defs.stream(id) {
            Some(s) => self.defs.str(s.name).map_or_else(|| format!("stream {}", s.native_id), str::to_owned),
            None if id.is_none() => "no stream".to_owned(),
            None => format!("stream #{}", id.0),
        }
    }

    /// A frame's display name when it has no symbol: `module+0xoffset`.
    pub fn unsymbolized(&self, f: &FrameDef) -> String {
        let path = self.defs.module_path(f.module).unwrap_or("[unknown module]");
        format!("{}+{:#x}", crate::names::basename(path), f.address)
    }
}
