//! Track layout: which pid/tid each event goes on, the lanes of each stream, and the start of
//! the complete events of each track (written once, copied per event).
//!
//! Host events use the real pid/tid. Each device is a process with pid [`DEVICE_BASE`] +
//! device id, and each of its streams a thread with tid [`STREAM_BASE`] + stream id (+
//! [`LANE_STEP`] × lane for overflow lanes): seven digits, above any Linux pid or tid (at most
//! 2^22 = 4,194,304), so device tracks never collide with host ones, and device pids never equal
//! stream tids. Ids too large for these ranges (never made by the host, which numbers devices
//! and streams from 1) take the wide ranges above 2^30 instead. Device work that overlaps work on
//! every lane of its stream goes to an overflow lane, so slices always nest.

use std::collections::hash_map::Entry;

use xpuprof_sdk::hash::IdMap;
use xpuprof_sdk::model::*;
use xpuprof_toolbox::timeline;

use crate::json::Push;
use crate::names::{Names, Naming, Track};

/// First pid used for device tracks (device id 0).
pub const DEVICE_BASE: u32 = 5_000_000;
/// First tid used for device stream tracks (stream id 0, lane 0): apart from device pids,
/// because Perfetto keys threads by tid and a process's metadata event also names its thread
/// `tid == pid`.
pub const STREAM_BASE: u32 = 6_000_000;
/// Tid distance between the overflow lanes of a stream.
pub const LANE_STEP: u32 = 100_000;
/// Device pids of device ids at or past `DEVICE_BASE`'s range (one million devices).
const WIDE_DEVICE_BASE: u32 = 0x4000_0000;
/// Stream tids of stream ids at or past [`LANE_STEP`].
const WIDE_STREAM_BASE: u32 = 0x6000_0000;
/// Overflow lanes per stream; beyond this, overlapping work shares the last lane.
const MAX_LANES: u32 = 16;

/// The pid of device `device`'s process track.
pub fn device_pid(device: DeviceId) -> u32 {
    if device.0 < 1_000_000 {
        DEVICE_BASE + device.0
    } else {
        WIDE_DEVICE_BASE.wrapping_add(device.0)
    }
}

/// The tid of lane `lane` of stream `stream`.
pub fn stream_tid(stream: StreamId, lane: u32) -> u32 {
    if stream.0 < LANE_STEP {
        STREAM_BASE + stream.0 + lane * LANE_STEP
    } else {
        WIDE_STREAM_BASE + (stream.0 & 0xf_ffff) + (lane << 20)
    }
}

/// The start of a complete event on track `(pid, tid)`: `{"ph":"X","pid":P,"tid":T,"ts":`.
fn x_prefix(pid: u32, tid: u32) -> Box<[u8]> {
    let mut p = Vec::with_capacity(48);
    p.s(r#"{"ph":"X","pid":"#).n(pid.into()).s(r#","tid":"#).n(tid.into()).s(r#","ts":"#);
    p.into_boxed_slice()
}

/// The lanes of a stream: where their work is and how their events start.
#[derive(Debug, Default)]
struct StreamLanes {
    work: timeline::Lanes,
    prefixes: Vec<Box<[u8]>>,
}

/// A host thread's event start and the last arrow started on it.
#[derive(Debug)]
pub struct HostThread {
    /// The start of its complete events (see [`x_prefix`]).
    pub prefix: Box<[u8]>,
    /// The flow id of the last arrow that started on this thread (0: none yet).
    pub last_flow: u64,
}

/// Names and track layout of the trace.
#[derive(Debug, Default)]
pub struct Tracks {
    /// Definitions and names.
    pub names: Names,
    lanes: IdMap<StreamId, StreamLanes>,
    /// The start of the complete events (API calls) of each host thread, and its last arrow.
    host_threads: IdMap<Track, HostThread>,
    /// Device operations that overlapped work on every lane of their stream.
    pub overlaps: u64,
}

impl Tracks {
    /// Host thread `(pid, tid)`: the start of its complete events (see [`x_prefix`]) and its
    /// last arrow; the track and its process are named if they were not yet.
    pub fn host_thread(&mut self, pid: u32, tid: u32, out: &mut Vec<Naming>) -> &mut HostThread {
        match self.host_threads.entry((pid, tid)) {
            Entry::Occupied(e) => e.into_mut(),
            Entry::Vacant(e) => {
                self.names.host_track(pid, tid, out);
                e.insert(HostThread { prefix: x_prefix(pid, tid), last_flow: 0 })
            }
        }
    }

    /// The start of the complete event of device work `op` (see [`x_prefix`]), on the first
    /// lane of its stream where it overlaps nothing ([`timeline::Lanes`]: free at its start, or
    /// for work that came late, a gap that holds it); a lane's track is named when it is first
    /// used.
    pub fn device_x_prefix(&mut self, op: &DeviceOp, out: &mut Vec<Naming>) -> &[u8] {
        let stream = self.lanes.entry(op.stream).or_default();
        let placed = stream.work.place(op.start, op.end, MAX_LANES as usize);
        self.overlaps += u64::from(placed.shared);
        if placed.opened {
            let lane = new_lane(&mut self.names, op, stream.prefixes.len(), out);
            stream.prefixes.push(lane);
        }
        &stream.prefixes[placed.lane]
    }
}

/// The event start of a new lane `lane` of `op`'s stream, its device and itself named.
fn new_lane(names: &mut Names, op: &DeviceOp, lane: usize, out: &mut Vec<Naming>) -> Box<[u8]> {
    let device = names.defs().stream(op.stream).map_or(op.device, |s| s.device);
    let pid = names.device_pid(device, out);
    let tid = stream_tid(op.stream, lane as u32);
    if !names.thread_named((pid, tid)) {
        let name = names.stream_name(op.stream, lane);
        names.name_thread((pid, tid), &name, out);
    }
    x_prefix(pid, tid)
}
