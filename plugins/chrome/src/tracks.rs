//! Definitions and track layout: which pid/tid each event goes on, and what each track is
//! called.
//!
//! Host events use the real pid/tid. Each device is a process with pid
//! [`DEVICE_BASE`] + device id, and each of its streams a thread with tid
//! [`STREAM_BASE`] + stream id (+ `lane << 20` for overflow lanes), above any Linux pid or tid
//! (at most 2^22), so device tracks never collide with host ones. Device work that overlaps the
//! previous operation of its stream goes to an overflow lane, so slices always nest.

use xpuprof_sdk::hash::{IdMap, IdSet};

use xpuprof_sdk::model::*;

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

#[derive(Debug, Clone, Copy)]
struct Stream {
    device: DeviceId,
    native_id: u64,
    name: StrId,
}

/// Definitions and naming state of the trace.
#[derive(Debug, Default)]
pub struct Tracks {
    /// Text and JSON literal of every string.
    strings: IdMap<StrId, (String, String)>,
    demangle: bool,
    devices: IdMap<DeviceId, (u32, StrId)>,
    streams: IdMap<StreamId, Stream>,
    lanes: IdMap<StreamId, Vec<u64>>,
    named_pids: IdSet<u32>,
    named_threads: IdSet<Track>,
    /// Device operations that overlapped work on every lane of their stream.
    pub overlaps: u64,
}

impl Tracks {
    /// Empty tables; `demangle` demangles `_Z...` strings as they are defined.
    pub fn new(demangle: bool) -> Self {
        Self { demangle, ..Self::default() }
    }

    /// String `id` as a JSON literal (`"?"` for none or unknown).
    pub fn name(&self, id: StrId) -> &str {
        self.strings.get(&id).map_or("\"?\"", |s| s.1.as_str())
    }

    /// The text of string `id`.
    pub fn text(&self, id: StrId) -> Option<&str> {
        self.strings.get(&id).map(|s| s.0.as_str())
    }

    fn raw(&self, id: StrId) -> Option<String> {
        self.text(id).map(str::to_owned)
    }

    /// Records a definition and returns the names it makes known.
    pub fn define(&mut self, r: &Record, out: &mut Vec<Naming>) {
        match r {
            Record::Str(d) => {
                let text = if self.demangle { crate::demangle(&d.text) } else { None };
                let text = text.unwrap_or_else(|| d.text.clone());
                let quoted = crate::json::quoted(&text);
                self.strings.insert(d.id, (text, quoted));
            }
            Record::Process(d) => {
                let cmd = self.raw(d.command).unwrap_or_default();
                let exe = cmd.split_whitespace().next().unwrap_or("process");
                let exe = exe.rsplit('/').next().unwrap_or(exe);
                self.rename_process(d.pid, &format!("{exe} ({})", d.pid), out);
            }
            Record::Thread(d) => {
                let name = self.raw(d.name).unwrap_or_else(|| format!("thread {}", d.tid));
                self.named_threads.insert((d.pid, d.tid));
                out.push(Naming::Thread((d.pid, d.tid), crate::json::quoted(&name)));
            }
            Record::Device(d) => {
                self.devices.insert(d.id, (d.index, d.name));
                let name = self.raw(d.name).unwrap_or_else(|| "device".into());
                self.rename_process(
                    DEVICE_BASE.wrapping_add(d.id.0),
                    &format!("GPU {} ({name})", d.index),
                    out,
                );
            }
            Record::Stream(d) => {
                self.streams.insert(d.id, Stream { device: d.device, native_id: d.native_id, name: d.name });
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
        let device = self.streams.get(&op.stream).map_or(op.device, |s| s.device);
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
        let base = match self.streams.get(&id) {
            None if id.is_none() => "no stream".to_owned(),
            None => format!("stream #{}", id.0),
            Some(s) => match self.raw(s.name) {
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
