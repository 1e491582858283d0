//! Definitions and names: each string's JSON literal, and which processes and threads have
//! been named in the trace (a `process_name` / `thread_name` metadata event is written before
//! the first event of a track). The definitions themselves are the toolbox's resolver.

use xpuprof_sdk::hash::{IdMap, IdSet};
use xpuprof_sdk::model::*;
use xpuprof_toolbox::Definitions;

/// A `(pid, tid)` track.
pub type Track = (u32, u32);

/// A name that still has to be written as a metadata event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Naming {
    /// `process_name` of `pid`, already a JSON string literal.
    Process(u32, String),
    /// `thread_name` of `(pid, tid)`, already a JSON string literal.
    Thread(Track, String),
}

/// Definitions and naming state of the trace.
#[derive(Debug, Default)]
pub struct Names {
    defs: Definitions,
    /// The JSON literal of every string's display text.
    literals: IdMap<StrId, String>,
    named_pids: IdSet<u32>,
    named_threads: IdSet<Track>,
}

impl Names {
    /// The definitions seen so far.
    pub fn defs(&self) -> &Definitions {
        &self.defs
    }

    /// String `id` as a JSON literal (`"?"` for none or unknown).
    pub fn name(&self, id: StrId) -> &str {
        self.literals.get(&id).map_or("\"?\"", String::as_str)
    }

    /// The display text of string `id`.
    pub fn text(&self, id: StrId) -> Option<&str> {
        self.defs.str(id)
    }

    fn owned(&self, id: StrId) -> Option<String> {
        self.text(id).map(str::to_owned)
    }

    /// Records a definition and returns the names it makes known.
    pub fn define(&mut self, r: &Record, out: &mut Vec<Naming>) {
        self.defs.add(r);
        match r {
            Record::Str(d) => {
                self.literals.insert(d.id, crate::json::quoted(d.shown()));
            }
            Record::Process(d) => {
                let cmd = self.owned(d.command).unwrap_or_default();
                let exe = xpuprof_toolbox::defs::exe_name(&cmd);
                let name = self.owned(d.name).unwrap_or_else(|| format!("{exe} ({})", d.pid));
                self.rename_process(d.pid, &name, out);
            }
            Record::Thread(d) => {
                let name = self.owned(d.name).unwrap_or_else(|| format!("thread {}", d.tid));
                self.named_threads.insert((d.pid, d.tid));
                out.push(Naming::Thread((d.pid, d.tid), crate::json::quoted(&name)));
            }
            Record::Device(d) => {
                let name = self.owned(d.name).unwrap_or_else(|| "device".into());
                self.rename_process(
                    crate::tracks::device_pid(d.id),
                    &format!("GPU {} ({name})", d.index),
                    out,
                );
            }
            _ => {}
        }
    }

    fn name_process(&mut self, pid: u32, name: &str, out: &mut Vec<Naming>) {
        if self.named_pids.insert(pid) {
            out.push(Naming::Process(pid, crate::json::quoted(name)));
        }
    }

    /// Names `pid` even if it already had a (placeholder) name: the last name wins.
    fn rename_process(&mut self, pid: u32, name: &str, out: &mut Vec<Naming>) {
        self.named_pids.insert(pid);
        out.push(Naming::Process(pid, crate::json::quoted(name)));
    }

    /// Names thread `track` `name` unless it has a name.
    pub fn name_thread(&mut self, track: Track, name: &str, out: &mut Vec<Naming>) {
        if self.named_threads.insert(track) {
            out.push(Naming::Thread(track, crate::json::quoted(name)));
        }
    }

    /// Makes sure host track `(pid, tid)` and its process are named.
    pub fn host_track(&mut self, pid: u32, tid: u32, out: &mut Vec<Naming>) -> Track {
        if !self.named_pids.contains(&pid) {
            self.name_process(pid, &format!("process {pid}"), out);
        }
        if !self.named_threads.contains(&(pid, tid)) {
            self.name_thread((pid, tid), &format!("thread {tid}"), out);
        }
        (pid, tid)
    }

    /// Whether thread `track` has a name.
    pub fn thread_named(&self, track: Track) -> bool {
        self.named_threads.contains(&track)
    }

    /// The pid of a device's process track, named if it was not yet.
    pub fn device_pid(&mut self, device: DeviceId, out: &mut Vec<Naming>) -> u32 {
        let pid = crate::tracks::device_pid(device);
        if !self.named_pids.contains(&pid) {
            self.name_process(pid, &format!("device {}", device.0), out);
        }
        pid
    }

    /// What lane `lane` of stream `id` is called.
    pub fn stream_name(&self, id: StreamId, lane: usize) -> String {
        let base = match self.defs.stream(id) {
            None if id.is_none() => "no stream".to_owned(),
            None => format!("stream #{}", id.0),
            Some(s) => match self.owned(s.name) {
                Some(n) => n,
                None => format!("stream {}", s.native_id),
            },
        };
        if lane == 0 {
            base
        } else {
            format!("{base} (overlap {lane})")
        }
    }
}
