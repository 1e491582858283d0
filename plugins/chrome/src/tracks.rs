//! Definitions and track layout: which pid/tid each event goes on, and what each track is
//! called. The definitions themselves are the toolbox's resolver; this keeps only what the JSON
//! needs on top (each string's JSON literal, the lanes, which tracks are named).
//!
//! Host events use the real pid/tid. Each device is a process with pid
//! [`DEVICE_BASE`] + device id, and each of its streams a thread with tid
//! [`STREAM_BASE`] + stream id (+ `lane << 20` for overflow lanes), above any Linux pid or tid
//! (at most 2^22), so device tracks never collide with host ones. Device work that overlaps the
//! previous operation of its stream goes to an overflow lane, so slices always nest.

use xpuprof_sdk::hash::{IdMap, IdSet};
use xpuprof_sdk::model::*;
use xpuprof_toolbox::Definitions;

/// First pid/tid used for device tracks.
pub const DEVICE_BASE: u32 = 0x4000_0000;
/// First tid used for device stream tracks: apart from device pids, because Perfetto keys
/// threads by tid and a process's metadata event also names its thread `tid == pid`.
pub const STREAM_BASE: u32 = 0x6000_0000;
/// Overflow lanes per stream; beyond this, overlapping work shares the last lane.
const MAX_LANES: u32 = 16;

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
pub struct Tracks {
    defs: Definitions,
    /// The JSON literal of every string's display text.
    literals: IdMap<StrId, String>,
    lanes: IdMap<StreamId, Vec<u64>>,
    named_pids: IdSet<u32>,
    named_threads: IdSet<Track>,
    /// Device operations that overlapped work on every lane of their stream.
    pub overlaps: u64,
}

impl Tracks {
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
                let exe = cmd.split_whitespace().next().unwrap_or("process");
                let exe = exe.rsplit('/').next().unwrap_or(exe);
                self.rename_process(d.pid, &format!("{exe} ({})", d.pid), out);
            }
            Record::Thread(d) => {
                let name = self.owned(d.name).unwrap_or_else(|| format!("thread {}", d.tid));
                self.named_threads.insert((d.pid, d.tid));
                out.push(Naming::Thread((d.pid, d.tid), crate::json::quoted(&name)));
            }
            Record::Device(d) => {
                let name = self.owned(d.name).unwrap_or_else(|| "device".into());
                self.rename_process(
                    DEVICE_BASE.wrapping_add(d.id.0),
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

    fn name_thread(&mut self, track: Track, name: &str, out: &mut Vec<Naming>) {
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

    /// The pid of a device's process track, named if it was not yet.
    pub fn device_pid(&mut self, device: DeviceId, out: &mut Vec<Naming>) -> u32 {
        let pid = DEVICE_BASE.wrapping_add(device.0);
        if !self.named_pids.contains(&pid) {
            self.name_process(pid, &format!("device {}", device.0), out);
        }
        pid
    }

    /// The track of device work `[start, end)` on `stream`, on the first lane it fits.
    pub fn device_track(&mut self, op: &DeviceOp, out: &mut Vec<Naming>) -> Track {
        let device = self.defs.stream(op.stream).map_or(op.device, |s| s.device);
        let pid = self.device_pid(device, out);
        let lanes = self.lanes.entry(op.stream).or_default();
        let lane = match lanes.iter().position(|&end| end <= op.start) {
            Some(i) => i,
            None if (lanes.len() as u32) < MAX_LANES => {
                lanes.push(0);
                lanes.len() - 1
            }
            None => {
                self.overlaps += 1;
                lanes.len() - 1
            }
        };
        lanes[lane] = lanes[lane].max(op.end);
        let tid = STREAM_BASE + (op.stream.0 & 0xf_ffff) + ((lane as u32) << 20);
        if !self.named_threads.contains(&(pid, tid)) {
            let name = self.stream_name(op.stream, lane);
            self.name_thread((pid, tid), &name, out);
        }
        (pid, tid)
    }

    fn stream_name(&self, id: StreamId, lane: usize) -> String {
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
