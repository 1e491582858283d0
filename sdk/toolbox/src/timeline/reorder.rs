//! Device work of each timeline (a stream, a device's allocations) put in start order before it
//! is placed on lanes: records of one stream may arrive out of order (activity buffers flushed
//! per kind or per context), and lanes assigned in arrival order split one serial stream into
//! several. Each timeline keeps up to [`WINDOW`] operations in a heap and releases the earliest
//! when it holds more, so lanes are assigned by start time and a lane exists only where work
//! really overlaps. An operation that starts before one the timeline already released arrived
//! later than the window reaches: it is placed where it fits (perhaps on a lane of its own) and
//! counted in `late`.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use xpuprof_sdk::hash::IdMap;
use xpuprof_sdk::model::{DeviceOp, DeviceOpKind};

/// Operations each timeline holds to put them in start order.
pub const WINDOW: usize = 4096;

/// Timeline of a device's allocations and frees (or'ed with the device id).
const MEMORY: u64 = 1 << 63;

/// The timeline `op` is put in order on: its device's allocations for an allocation or a free,
/// else its stream.
pub fn timeline_of(op: &DeviceOp) -> u64 {
    match op.kind {
        DeviceOpKind::Alloc | DeviceOpKind::Free => MEMORY | u64::from(op.device.0),
        _ => (u64::from(op.device.0) << 32) | u64::from(op.stream.0),
    }
}

/// One timeline's window: a heap of (start, arrival, slot) keys, least first, and the
/// operations in slots beside it. Only the 24-byte keys move when the heap sifts (device work
/// records are a few hundred bytes: moving them made up a fifth of a merge's CPU time).
#[derive(Debug)]
struct Timeline<T> {
    heap: BinaryHeap<Reverse<(u64, u64, u32)>>,
    slots: Vec<Option<T>>,
    free: Vec<u32>,
    /// Start of the last operation released.
    released: u64,
}

impl<T> Default for Timeline<T> {
    fn default() -> Self {
        Self { heap: BinaryHeap::new(), slots: Vec::new(), free: Vec::new(), released: 0 }
    }
}

impl<T> Timeline<T> {
    fn hold(&mut self, start: u64, arrival: u64, op: T) {
        let slot = match self.free.pop() {
            Some(slot) => {
                self.slots[slot as usize] = Some(op);
                slot
            }
            None => {
                self.slots.push(Some(op));
                (self.slots.len() - 1) as u32
            }
        };
        self.heap.push(Reverse((start, arrival, slot)));
    }

    /// The earliest operation held (by start, then arrival) and its start.
    fn release(&mut self) -> Option<(u64, T)> {
        let Reverse((start, _, slot)) = self.heap.pop()?;
        self.free.push(slot);
        self.slots[slot as usize].take().map(|op| (start, op))
    }
}

/// The reorder windows of all timelines, holding operations `T` (device work, and what the sink
/// decided about it when it arrived).
#[derive(Debug)]
pub struct Reorder<T> {
    timelines: IdMap<u64, Timeline<T>>,
    arrivals: u64,
    /// Operations that started before one already released on their timeline.
    pub late: u64,
}

impl<T> Default for Reorder<T> {
    fn default() -> Self {
        Self { timelines: IdMap::default(), arrivals: 0, late: 0 }
    }
}

impl<T> Reorder<T> {
    /// Adds `op`, starting at `start`, to timeline `key`; returns the operation released, if
    /// the window is full.
    pub fn push(&mut self, key: u64, start: u64, op: T) -> Option<T> {
        let t = self.timelines.entry(key).or_default();
        if start < t.released {
            self.late += 1;
        }
        self.arrivals += 1;
        t.hold(start, self.arrivals, op);
        if t.heap.len() <= WINDOW {
            return None;
        }
        let (start, op) = t.release()?;
        t.released = t.released.max(start);
        Some(op)
    }

    /// Every operation still held: timelines by key, each in start order.
    pub fn drain(&mut self) -> Vec<T> {
        let mut keys: Vec<u64> = self.timelines.keys().copied().collect();
        keys.sort_unstable();
        let mut out = Vec::new();
        for k in keys {
            if let Some(mut t) = self.timelines.remove(&k) {
                while let Some((_, op)) = t.release() {
                    out.push(op);
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn op(start: u64) -> u64 {
        start
    }

    fn push(r: &mut Reorder<u64>, start: u64) -> Option<u64> {
        r.push(1, start, start)
    }

    #[test]
    fn releases_in_start_order_and_counts_what_comes_too_late() {
        let mut r = Reorder::default();
        let mut out = Vec::new();
        // Pairs swapped: 1, 0, 3, 2, ...
        for i in 0..WINDOW as u64 + 4 {
            out.extend(push(&mut r, op(100 + (i ^ 1))));
        }
        assert_eq!(out, [100, 101, 102, 103]);
        assert_eq!(r.late, 0);
        out.extend(push(&mut r, op(50)));
        assert_eq!(r.late, 1, "50 starts before 103, already released");
        out.extend(r.drain());
        assert_eq!(out.len(), WINDOW + 5);
        assert!(out[5..].windows(2).all(|w| w[0] <= w[1]), "the rest in start order");
    }
}
