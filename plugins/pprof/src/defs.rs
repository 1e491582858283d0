//! The definitions a profile needs: strings, modules, frames, stacks, and the names of
//! processes, threads, devices and streams. Kept for the whole run (they are interned, so they
//! grow with distinct things, not with time).

use std::collections::HashMap;

use xpuprof_sdk::hash::IdMap;
use xpuprof_sdk::model::*;

/// One frame as the profile needs it.
#[derive(Debug, Clone)]
pub struct Frame {
    /// Function, or none when not symbolized.
    pub name: StrId,
    /// Functions inlined at this address, outermost first.
    pub inlined: Vec<StrId>,
    /// Module.
    pub module: ModuleId,
    /// File offset (or address) in the module.
    pub address: u64,
}

/// Definitions seen so far.
#[derive(Debug, Default)]
pub struct Defs {
    demangle: bool,
    strings: IdMap<StrId, String>,
    /// Path and build id of each module.
    pub modules: IdMap<ModuleId, (StrId, Vec<u8>)>,
    /// Frames by id.
    pub frames: IdMap<FrameId, Frame>,
    /// Stacks by id, innermost first.
    pub stacks: IdMap<StackId, Vec<FrameId>>,
    processes: IdMap<u32, StrId>,
    threads: HashMap<(u32, u32), StrId>,
    devices: IdMap<DeviceId, (u32, StrId)>,
    streams: IdMap<StreamId, (u64, StrId)>,
}

impl Defs {
    /// Empty tables; `demangle` demangles `_Z...` strings as they are defined.
    pub fn new(demangle: bool) -> Self {
        Self { demangle, ..Self::default() }
    }

    /// Records a definition.
    pub fn define(&mut self, r: &Record) {
        match r {
            Record::Str(d) => {
                let text = self.demangle.then(|| crate::names::demangle(&d.text)).flatten();
                self.strings.insert(d.id, text.unwrap_or_else(|| d.text.clone()));
            }
            Record::Process(d) => {
                self.processes.insert(d.pid, d.command);
            }
            Record::Thread(d) => {
                self.threads.insert((d.pid, d.tid), d.name);
            }
            Record::Device(d) => {
                self.devices.insert(d.id, (d.index, d.name));
            }
            Record::Stream(d) => {
                self.streams.insert(d.id, (d.native_id, d.name));
            }
            Record::Module(d) => {
                self.modules.insert(d.id, (d.path, d.build_id.clone()));
            }
            Record::Frame(d) => {
                let f =
                    Frame { name: d.name, inlined: d.inlined.clone(), module: d.module, address: d.address };
                self.frames.insert(d.id, f);
            }
            Record::Stack(d) => {
                self.stacks.insert(d.id, d.frames.clone());
            }
            _ => {}
        }
    }

    /// The text of string `id`.
    pub fn text(&self, id: StrId) -> Option<&str> {
        self.strings.get(&id).map(String::as_str)
    }

    /// The process's executable name (`python3`), or `process <pid>`.
    pub fn process(&self, pid: u32) -> String {
        match self.processes.get(&pid).and_then(|c| self.text(*c)) {
            Some(cmd) => {
                crate::names::basename(cmd.split_whitespace().next().unwrap_or("process")).to_owned()
            }
            None => format!("process {pid}"),
        }
    }

    /// The thread's name, or `thread <tid>`.
    pub fn thread(&self, pid: u32, tid: u32) -> String {
        self.threads
            .get(&(pid, tid))
            .and_then(|n| self.text(*n))
            .map_or_else(|| format!("thread {tid}"), str::to_owned)
    }

    /// `GPU <index> (<name>)`, or `device <id>`.
    pub fn device(&self, id: DeviceId) -> String {
        match self.devices.get(&id) {
            Some((index, name)) => format!("GPU {index} ({})", self.text(*name).unwrap_or("device")),
            None => format!("device {}", id.0),
        }
    }

    /// The stream's name, or `stream <native id>`.
    pub fn stream(&self, id: StreamId) -> String {
        match self.streams.get(&id) {
            Some((native, name)) => {
                self.text(*name).map_or_else(|| format!("stream {native}"), str::to_owned)
            }
            None if id.is_none() => "no stream".to_owned(),
            None => format!("stream #{}", id.0),
        }
    }

    /// A frame's display name when it has no symbol: `module+0xoffset`.
    pub fn unsymbolized(&self, f: &Frame) -> String {
        let path = self.modules.get(&f.module).and_then(|m| self.text(m.0)).unwrap_or("[unknown module]");
        format!("{}+{:#x}", crate::names::basename(path), f.address)
    }
}
