//! Tracks: their uuids, their descriptors, and overflow lanes for work that overlaps.
//!
//! Track uuids are built from what the track is, so they never collide and need no table:
//! the top four bits say the kind (process, thread, device, stream lane, range lane, off-CPU,
//! counter, losses), the rest the pid/tid, device/stream and lane. A track's descriptor is queued
//! the first time an event needs the track, and again when a later definition renames it (the
//! last descriptor wins in Perfetto).
//!
//! Slices on one track must nest. Device work comes in start order (`xpuprof_toolbox::timeline::Reorder`) and goes
//! to the first lane of its stream free at its start, work that came later than the reorder
//! window into the first gap that holds it (`xpuprof_toolbox::timeline::Lanes`): work that
//! overlaps every lane opens an overflow lane (a sibling track "stream 7 (overlap 1)"), so lanes
//! are as many as the deepest real overlap; a zero-length operation nests instead. User ranges arrive as they end (inner
//! ones first): a range goes on the first lane of its thread where it nests, enclosing the
//! slices there that end after it starts, so properly nested ranges share one track and only
//! ranges that partly overlap open another ([`Tracks::range`]).

use xpuprof_sdk::hash::{IdMap, IdSet};
use xpuprof_sdk::model::*;
use xpuprof_toolbox::timeline;

use crate::intern::Interner;
use crate::proto::{CounterDescriptor, ProcessDescriptor, ThreadDescriptor, TrackDescriptor};

/// Lanes per timeline; beyond this, overlapping work shares the last lane.
const MAX_LANES: u64 = 16;

const PROCESS: u64 = 1 << 60;
const THREAD: u64 = 2 << 60;
const DEVICE: u64 = 3 << 60;
const LANE: u64 = 4 << 60;
const RANGES: u64 = 5 << 60;
const OFF_CPU: u64 = 6 << 60;
const COUNTER: u64 = 7 << 60;
const OVERHEAD: u64 = 9 << 60;
const MEMORY: u64 = 11 << 60;
/// The track of loss markers.
pub const LOSSES: u64 = 8 << 60;
/// The track of the capture windows the trace covers.
pub const WINDOWS: u64 = 10 << 60;

fn thread_bits(pid: u32, tid: u32) -> u64 {
    (u64::from(pid) << 28) | u64::from(tid & 0x0fff_ffff)
}

/// The lanes of one timeline.
#[derive(Debug, Default)]
struct Lanes {
    /// Where the slices of each lane are.
    work: timeline::Lanes,
    /// Ranges: each lane's top-level slices (those no slice of the lane encloses) by end.
    tops: Vec<RangeLane>,
    /// Lanes whose track is described (bit per lane).
    described: u16,
}

/// Top-level slices of one lane of ranges kept to check nesting, at most [`MAX_TOPS`]; the
/// oldest are dropped beyond, remembering how far they reached (`floor`): a range starting
/// before it cannot be checked and takes another lane.
#[derive(Debug, Default)]
struct RangeLane {
    tops: Vec<(u64, u64)>,
    floor: u64,
}

/// Top-level slices kept per lane of ranges.
const MAX_TOPS: usize = 4096;

impl RangeLane {
    /// Puts `[start, end)` on this lane if it nests: every slice of the lane ending after
    /// `start` lies inside it (it encloses them) or the lane has none.
    fn try_put(&mut self, start: u64, end: u64) -> bool {
        if start < self.floor {
            return false;
        }
        let from = self.tops.partition_point(|&(_, e)| e <= start);
        if !self.tops[from..].iter().all(|&(s, e)| s >= start && e <= end) {
            return false;
        }
        self.tops.truncate(from);
        self.tops.push((start, end));
        if self.tops.len() > MAX_TOPS {
            let drop = MAX_TOPS / 2;
            self.floor = self.tops[..drop].iter().map(|t| t.1).max().unwrap_or(0).max(self.floor);
            self.tops.drain(..drop);
        }
        true
    }
}

/// Where the last device operation went.
#[derive(Debug, Clone, Copy)]
struct LastStream {
    stream: StreamId,
    device: DeviceId,
    /// The device track's uuid (described), from the stream's definition.
    parent: u64,
    /// The stream's timeline key and its index in `Tracks::lanes`.
    key: u64,
    lanes: usize,
}

/// Track state of the trace.
#[derive(Debug, Default)]
pub struct Tracks {
    described: IdSet<u64>,
    /// The lanes of each timeline, by key.
    timelines: IdMap<u64, usize>,
    lanes: Vec<Lanes>,
    counters: IdMap<(u32, DeviceId, StrId), u64>,
    /// The last device operation's stream and device, with its timeline: consecutive
    /// operations are mostly on one stream.
    last_stream: Option<LastStream>,
    /// Descriptors to write before the next event.
    pub pending: Vec<TrackDescriptor>,
    /// Slices that overlapped work on every lane of their timeline.
    pub overlaps: u64,
}

impl Tracks {
    /// Describes again a track that definition `r` renames (`names` already has `r`).
    pub fn define(&mut self, r: &Record, names: &Interner) {
        match r {
            Record::Process(d) if self.described.contains(&(PROCESS | u64::from(d.pid))) => {
                self.describe_process(d.pid, names);
            }
            Record::Thread(d) if self.described.contains(&(THREAD | thread_bits(d.pid, d.tid))) => {
                self.describe_thread(d.pid, d.tid, names);
            }
            Record::Device(d) if self.described.contains(&(DEVICE | u64::from(d.id.0))) => {
                self.describe_device(d.id, names);
            }
            // A stream's device comes from its definition.
            Record::Stream(_) => self.last_stream = None,
            _ => {}
        }
    }

    fn describe_process(&mut self, pid: u32, names: &Interner) {
        self.described.insert(PROCESS | u64::from(pid));
        let command = names.defs().process_command(pid).unwrap_or("");
        let process = ProcessDescriptor {
            pid: Some(pid as i32),
            cmdline: command.split_whitespace().map(str::to_owned).collect(),
            process_name: Some(if let Some(name) = names.defs().process_name(pid) {
                name.to_owned()
            } else if command.is_empty() {
                format!("process {pid}")
            } else {
                xpuprof_toolbox::defs::exe_name(command).to_owned()
            }),
        };
        let uuid = Some(PROCESS | u64::from(pid));
        self.pending.push(TrackDescriptor { uuid, process: Some(process), ..Default::default() });
    }

    fn describe_thread(&mut self, pid: u32, tid: u32, names: &Interner) {
        let uuid = THREAD | thread_bits(pid, tid);
        self.described.insert(uuid);
        let name = names.defs().thread_name(pid, tid);
        let thread = ThreadDescriptor {
            pid: Some(pid as i32),
            tid: Some(i64::from(tid)),
            thread_name: Some(name.map_or_else(|| format!("thread {tid}"), str::to_owned)),
        };
        let parent = Some(PROCESS | u64::from(pid));
        self.pending.push(TrackDescriptor {
            uuid: Some(uuid),
            parent_uuid: parent,
            thread: Some(thread),
            ..Default::default()
        });
    }

    fn describe_device(&mut self, device: DeviceId, names: &Interner) {
        let uuid = DEVICE | u64::from(device.0);
        self.described.insert(uuid);
        let name = match names.defs().device(device) {
            Some(d) => format!("GPU {} ({})", d.index, names.text(d.name).unwrap_or("device")),
            None => format!("device {}", device.0),
        };
        self.pending.push(TrackDescriptor {
            uuid: Some(uuid),
            name: Some(name),
            sibling_order_rank: Some(device.0 as i32),
            ..Default::default()
        });
    }

    /// A child track of `parent` named `name`, described the first time.
    fn child(&mut self, uuid: u64, parent: u64, name: impl FnOnce() -> String) -> u64 {
        if self.described.insert(uuid) {
            self.pending.push(TrackDescriptor {
                uuid: Some(uuid),
                parent_uuid: Some(parent),
                name: Some(name()),
                ..Default::default()
            });
        }
        uuid
    }

    /// The process track of `pid`.
    pub fn process(&mut self, pid: u32, names: &Interner) -> u64 {
        let uuid = PROCESS | u64::from(pid);
        if !self.described.contains(&uuid) {
            self.describe_process(pid, names);
        }
        uuid
    }

    /// The track of thread `tid` of `pid`.
    pub fn thread(&mut self, pid: u32, tid: u32, names: &Interner) -> u64 {
        let uuid = THREAD | thread_bits(pid, tid);
        if !self.described.contains(&uuid) {
            self.process(pid, names);
            self.describe_thread(pid, tid, names);
        }
        uuid
    }

    /// The track of device `device`.
    pub fn device(&mut self, device: DeviceId, names: &Interner) -> u64 {
        let uuid = DEVICE | u64::from(device.0);
        if !self.described.contains(&uuid) {
            self.describe_device(device, names);
        }
        uuid
    }

    /// The index of timeline `key` in `lanes`.
    fn timeline(&mut self, key: u64) -> usize {
        let next = self.lanes.len();
        let i = *self.timelines.entry(key).or_insert(next);
        if i == next {
            self.lanes.push(Lanes::default());
        }
        i
    }

    /// The first lane of timeline `key` free at `start`; the lane then runs until `end`.
    fn lane(&mut self, key: u64, start: u64, end: u64) -> u64 {
        let t = self.timeline(key);
        self.lane_of(t, start, end)
    }

    /// [`Tracks::lane`] of the timeline at index `t`.
    #[inline]
    fn lane_of(&mut self, t: usize, start: u64, end: u64) -> u64 {
        let placed = self.lanes[t].work.place(start, end, MAX_LANES as usize);
        self.overlaps += u64::from(placed.shared);
        placed.lane as u64
    }

    /// The stream lane track where device operation `op` goes.
    #[inline]
    pub fn device_op(&mut self, op: &DeviceOp, names: &Interner) -> u64 {
        let last = match self.last_stream {
            Some(l) if l.stream == op.stream && l.device == op.device => l,
            _ => {
                let device = names.defs().stream(op.stream).map_or(op.device, |s| s.device);
                let key = (u64::from(device.0) << 32) | u64::from(op.stream.0);
                let l = LastStream {
                    stream: op.stream,
                    device: op.device,
                    parent: self.device(device, names),
                    key,
                    lanes: self.timeline(key),
                };
                self.last_stream = Some(l);
                l
            }
        };
        let lane = self.lane_of(last.lanes, op.start, op.end);
        let uuid = LANE | (lane << 52) | last.key;
        let bit = 1u16 << lane;
        if self.lanes[last.lanes].described & bit == 0 {
            self.lanes[last.lanes].described |= bit;
            if !self.described.contains(&uuid) {
                let name = self.stream_name(op.stream, lane, names);
                self.child(uuid, last.parent, || name);
            }
        }
        uuid
    }

    fn stream_name(&self, stream: StreamId, lane: u64, names: &Interner) -> String {
        let base = match names.defs().stream(stream) {
            None if stream.is_none() => "no stream".to_owned(),
            None => format!("stream #{}", stream.0),
            Some(s) => names.text(s.name).map_or_else(|| format!("stream {}", s.native_id), str::to_owned),
        };
        if lane == 0 {
            base
        } else {
            format!("{base} (overlap {lane})")
        }
    }

    /// The first lane of ranges of timeline `key` where `[start, end)` nests ([`RangeLane`]);
    /// a new lane when it nests in none.
    fn range_lane(&mut self, key: u64, start: u64, end: u64) -> u64 {
        let t = self.timeline(key);
        let lanes = &mut self.lanes[t].tops;
        if let Some(i) = lanes.iter_mut().position(|l| l.try_put(start, end)) {
            return i as u64;
        }
        if (lanes.len() as u64) < MAX_LANES {
            lanes.push(RangeLane { tops: vec![(start, end)], floor: 0 });
        } else {
            self.overlaps += 1;
        }
        lanes.len() as u64 - 1
    }

    /// The range lane track of thread `(pid, tid)` where `a` goes.
    pub fn range(&mut self, a: &Annotation, names: &Interner) -> u64 {
        let parent = self.thread(a.pid, a.tid, names);
        let bits = thread_bits(a.pid, a.tid);
        let lane = self.range_lane(RANGES | bits, a.start, a.end.max(a.start));
        let name = || if lane == 0 { "ranges".to_owned() } else { format!("ranges (overlap {lane})") };
        self.child(RANGES | (lane << 56) | bits, parent, name)
    }

    /// The profiler-overhead track of thread `(pid, tid)` for `[start, end)` (another lane when
    /// overhead slices overlap).
    pub fn overhead(&mut self, pid: u32, tid: u32, start: u64, end: u64, names: &Interner) -> u64 {
        let parent = self.thread(pid, tid, names);
        let bits = thread_bits(pid, tid);
        let lane = self.lane(OVERHEAD | bits, start, end);
        let name = || {
            if lane == 0 {
                "profiler overhead".to_owned()
            } else {
                format!("profiler overhead (overlap {lane})")
            }
        };
        self.child(OVERHEAD | (lane << 56) | bits, parent, name)
    }

    /// The off-CPU track of thread `(pid, tid)`.
    pub fn off_cpu(&mut self, pid: u32, tid: u32, names: &Interner) -> u64 {
        let parent = self.thread(pid, tid, names);
        self.child(OFF_CPU | thread_bits(pid, tid), parent, || "off-CPU".to_owned())
    }

    /// The counter track of series `name` of `pid` (or of `device` when it is set).
    pub fn counter(&mut self, c: &Counter, names: &Interner) -> u64 {
        let next = COUNTER | self.counters.len() as u64;
        let uuid = *self.counters.entry((c.pid, c.device, c.name)).or_insert(next);
        if self.described.insert(uuid) {
            let parent =
                if c.device.is_none() { self.process(c.pid, names) } else { self.device(c.device, names) };
            let name = names.text(c.name).unwrap_or("counter").to_owned();
            let unit = name.contains("memory").then_some(crate::proto::UNIT_SIZE_BYTES);
            self.pending.push(TrackDescriptor {
                uuid: Some(uuid),
                parent_uuid: Some(parent),
                name: Some(name),
                counter: Some(CounterDescriptor { unit, unit_name: None }),
                ..Default::default()
            });
        }
        uuid
    }

    /// The "memory in use" counter of `device`: the bytes its allocations and frees leave in use.
    pub fn memory(&mut self, device: DeviceId, names: &Interner) -> u64 {
        let uuid = MEMORY | u64::from(device.0);
        if !self.described.contains(&uuid) {
            let parent = self.device(device, names);
            self.described.insert(uuid);
            self.pending.push(TrackDescriptor {
                uuid: Some(uuid),
                parent_uuid: Some(parent),
                name: Some("memory in use (allocations)".to_owned()),
                counter: Some(CounterDescriptor {
                    unit: Some(crate::proto::UNIT_SIZE_BYTES),
                    unit_name: None,
                }),
                ..Default::default()
            });
        }
        uuid
    }

    /// The track of the capture windows (a session that recorded only inside them).
    pub fn windows(&mut self) -> u64 {
        if self.described.insert(WINDOWS) {
            self.pending.push(TrackDescriptor {
                uuid: Some(WINDOWS),
                name: Some("xpuprof: capture windows".to_owned()),
                description: Some("The sources recorded only inside these windows".to_owned()),
                sibling_order_rank: Some(-2),
                ..Default::default()
            });
        }
        WINDOWS
    }

    /// The track of loss markers.
    pub fn losses(&mut self) -> u64 {
        if self.described.insert(LOSSES) {
            self.pending.push(TrackDescriptor {
                uuid: Some(LOSSES),
                name: Some("xpuprof: data lost".to_owned()),
                description: Some("Records xpuprof or a backend dropped, with their cause".to_owned()),
                sibling_order_rank: Some(-1),
                ..Default::default()
            });
        }
        LOSSES
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uuids_of_different_kinds_never_collide() {
        let mut t = Tracks::default();
        let names = Interner::default();
        let thread = t.thread(7, 7, &names);
        assert_ne!(thread, t.process(7, &names));
        assert_ne!(thread, t.off_cpu(7, 7, &names));
        assert_ne!(t.device(DeviceId(7), &names), t.process(7, &names));
        // process, thread, off-CPU and device, each described once.
        assert_eq!(t.pending.len(), 4);
    }

    #[test]
    fn overlapping_work_takes_the_next_lane() {
        let mut t = Tracks::default();
        assert_eq!(t.lane(1, 0, 10), 0);
        assert_eq!(t.lane(1, 5, 8), 1);
        assert_eq!(t.lane(1, 10, 12), 0);
        assert_eq!(t.lane(2, 5, 8), 0, "timelines are separate");
        assert_eq!(t.lane(2, 6, 6), 0, "a zero-length slice nests, it makes no lane");
        assert_eq!(t.lanes[t.timelines[&2]].work.len(), 1);
    }

    #[test]
    fn nested_ranges_arriving_as_they_end_share_one_lane() {
        let mut t = Tracks::default();
        // A step range holding two op ranges, arriving innermost first, then the next step.
        assert_eq!(t.range_lane(1, 12, 20), 0);
        assert_eq!(t.range_lane(1, 25, 30), 0);
        assert_eq!(t.range_lane(1, 10, 40), 0, "the step encloses its ops");
        assert_eq!(t.range_lane(1, 50, 60), 0);
        assert_eq!(t.range_lane(1, 45, 70), 0);
        // A range that partly overlaps one of its lane takes the next lane.
        assert_eq!(t.range_lane(1, 35, 48), 1);
        assert_eq!(t.range_lane(1, 0, 100), 0, "a range around everything nests on the first lane");
    }
}
