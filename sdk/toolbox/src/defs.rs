//! The definitions resolver for sinks: keeps every definition record (strings, processes,
//! threads, devices, streams, modules, frames, stacks) and answers what an id in an event refers
//! to. Sinks feed it every record ([`Definitions::add`] says whether it was a definition) and
//! look names up when they write.

use xpuprof_sdk::hash;
use xpuprof_sdk::model::*;

/// Ids below this are stored in a vector; the host numbers definitions densely from 1.
const DENSE_LIMIT: u32 = 1 << 24;

/// A map from `u32` ids to values: a vector for dense ids, a hash map for stray large ones.
#[derive(Debug)]
struct Table<T> {
    dense: Vec<Option<T>>,
    sparse: hash::IdMap<u32, T>,
}

impl<T> Default for Table<T> {
    fn default() -> Self {
        Self { dense: Vec::new(), sparse: hash::IdMap::default() }
    }
}

impl<T> Table<T> {
    fn insert(&mut self, id: u32, value: T) {
        if id < DENSE_LIMIT {
            let i = id as usize;
            if i >= self.dense.len() {
                self.dense.resize_with(i + 1, || None);
            }
            self.dense[i] = Some(value);
        } else {
            self.sparse.insert(id, value);
        }
    }

    fn get(&self, id: u32) -> Option<&T> {
        if id == 0 {
            None
        } else if id < DENSE_LIMIT {
            self.dense.get(id as usize).and_then(Option::as_ref)
        } else {
            self.sparse.get(&id)
        }
    }
}

/// A string's raw text and, when the host gave it one, its display text.
#[derive(Debug)]
struct Text {
    raw: Box<str>,
    display: Option<Box<str>>,
}

/// Every definition seen so far, by id.
#[derive(Debug, Default)]
pub struct Definitions {
    strings: Table<Text>,
    processes: hash::IdMap<u32, StrId>,
    /// Names the host gave processes (`rank N (host, pid)`).
    process_names: hash::IdMap<u32, StrId>,
    /// Ranks in the job of the processes that are ranks of one.
    world_sizes: hash::IdMap<u32, u32>,
    threads: hash::IdMap<(u32, u32), StrId>,
    devices: Table<DeviceDef>,
    streams: Table<StreamDef>,
    modules: Table<StrId>,
    frames: Table<FrameDef>,
    stacks: Table<Vec<FrameId>>,
}

impl Definitions {
    /// Stores `record` if it is a definition; returns false for events.
    pub fn add(&mut self, record: &Record) -> bool {
        match record {
            Record::Str(d) => self.strings.insert(
                d.id.0,
                Text {
                    raw: d.text.as_str().into(),
                    display: (!d.display.is_empty()).then(|| d.display.as_str().into()),
                },
            ),
            Record::Process(d) => {
                self.processes.insert(d.pid, d.command);
                if !d.name.is_none() {
                    self.process_names.insert(d.pid, d.name);
                }
                if let Some(n) = d.world_size {
                    self.world_sizes.insert(d.pid, n);
                }
            }
            Record::Thread(d) => drop(self.threads.insert((d.pid, d.tid), d.name)),
            Record::Device(d) => self.devices.insert(d.id.0, d.clone()),
            Record::Stream(d) => self.streams.insert(d.id.0, d.clone()),
            Record::Module(d) => self.modules.insert(d.id.0, d.path),
            Record::Frame(d) => self.frames.insert(d.id.0, d.clone()),
            Record::Stack(d) => self.stacks.insert(d.id.0, d.frames.clone()),
            _ => return false,
        }
        true
    }

    /// The text of string `id` for people: its display text (a demangled kernel name) when the
    /// host gave it one, else its text; `None` for [`StrId::NONE`] and unknown ids.
    pub fn str(&self, id: StrId) -> Option<&str> {
        self.strings.get(id.0).map(|t| t.display.as_deref().unwrap_or(&t.raw))
    }

    /// The text of string `id` as the source sent it (a kernel's mangled name).
    pub fn raw(&self, id: StrId) -> Option<&str> {
        self.strings.get(id.0).map(|t| &*t.raw)
    }

    /// The text of string `id`, or `fallback` when it is none, unknown or empty.
    pub fn str_or<'a>(&'a self, id: StrId, fallback: &'a str) -> &'a str {
        self.str(id).filter(|s| !s.is_empty()).unwrap_or(fallback)
    }

    /// The command line of process `pid`.
    pub fn process_command(&self, pid: u32) -> Option<&str> {
        self.processes.get(&pid).and_then(|c| self.str(*c))
    }

    /// The name the host gave process `pid` (`rank 3 (node-2, 4711)` for a rank of a job), or
    /// `None`: outputs then name it by its command.
    pub fn process_name(&self, pid: u32) -> Option<&str> {
        self.process_names.get(&pid).and_then(|n| self.str(*n))
    }

    /// Ranks in the job of process `pid`, when it is a rank of one.
    pub fn world_size(&self, pid: u32) -> Option<u32> {
        self.world_sizes.get(&pid).copied()
    }

    /// The name of thread `tid` of `pid`.
    pub fn thread_name(&self, pid: u32, tid: u32) -> Option<&str> {
        self.threads.get(&(pid, tid)).and_then(|n| self.str(*n))
    }

    /// Device `id`.
    pub fn device(&self, id: DeviceId) -> Option<&DeviceDef> {
        self.devices.get(id.0)
    }

    /// Stream `id`.
    pub fn stream(&self, id: StreamId) -> Option<&StreamDef> {
        self.streams.get(id.0)
    }

    /// The path of module `id`.
    pub fn module_path(&self, id: ModuleId) -> Option<&str> {
        self.modules.get(id.0).and_then(|p| self.str(*p))
    }

    /// Frame `id`.
    pub fn frame(&self, id: FrameId) -> Option<&FrameDef> {
        self.frames.get(id.0)
    }

    /// The frames of stack `id`, innermost first.
    pub fn stack(&self, id: StackId) -> Option<&[FrameId]> {
        self.stacks.get(id.0).map(Vec::as_slice)
    }
}

/// The executable's file name in a command line (`/usr/bin/python3 x.py` → `python3`;
/// `process` for an empty one): how the sinks name a process the host gave no name.
pub fn exe_name(command: &str) -> &str {
    let exe = command.split_whitespace().next().unwrap_or("process");
    exe.rsplit('/').next().unwrap_or(exe)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn executables_are_named_by_their_file() {
        assert_eq!(exe_name("/usr/bin/python3.12 train.py"), "python3.12");
        assert_eq!(exe_name(""), "process");
    }

    #[test]
    fn resolves_what_ids_refer_to() {
        let mut d = Definitions::default();
        let recs = [
            Record::Str(StrDef::default().id(StrId(1)).text("/usr/bin/app".into())),
            Record::Str(StrDef::default().id(StrId(1 << 25)).text("main".into())),
            Record::Process(ProcessDef::default().pid(7).ppid(1).command(StrId(1))),
            Record::Module(ModuleDef::default().id(ModuleId(3)).path(StrId(1))),
            Record::Stack(StackDef::default().id(StackId(2)).frames(vec![FrameId(5), FrameId(6)])),
        ];
        for r in &recs {
            assert!(d.add(r));
        }
        assert_eq!(d.str(StrId(1 << 25)), Some("main"), "sparse ids");
        assert_eq!(d.str(StrId::NONE), None);
        assert_eq!(d.str_or(StrId(9), "[unknown]"), "[unknown]");
        assert_eq!(d.process_command(7), Some("/usr/bin/app"));
        assert_eq!(d.module_path(ModuleId(3)), Some("/usr/bin/app"));
        assert_eq!(d.stack(StackId(2)), Some(&[FrameId(5), FrameId(6)][..]));
        assert_eq!(d.thread_name(7, 8), None);
    }

    #[test]
    fn strings_resolve_to_the_display_text_and_keep_the_raw_one() {
        let mut d = Definitions::default();
        let mut def = StrDef::new(StrId(4), "_Z1kv");
        def.display = "k()".into();
        d.add(&Record::Str(def));
        assert_eq!((d.str(StrId(4)), d.raw(StrId(4))), (Some("k()"), Some("_Z1kv")));
        d.add(&Record::Str(StrDef::new(StrId(5), "plain")));
        assert_eq!((d.str(StrId(5)), d.raw(StrId(5))), (Some("plain"), Some("plain")));
    }
}
