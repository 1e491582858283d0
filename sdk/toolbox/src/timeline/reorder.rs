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
use xpuprof_sdk::model::DeviceOp;

/// Operations each timeline holds to put them in start order.
pub const WINDOW: usize = 4096;

/// An operation held, ordered by start, then arrival.
#[derive(Debug)]
struct Held {
    start: u64,
    arrival: u64,
    op: DeviceOp,
}

impl PartialEq for Held {
    fn eq(&self, o: &Self) -> bool {
        (self.start, self.arrival) == (o.start, o.arrival)
    }
}
impl Eq for Held {}
impl PartialOrd for Held {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Held {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        (self.start, self.arrival).cmp(&(o.start, o.arrival))
    }
}

#[derive(Debug, Default)]
struct Timeline {
    heap: BinaryHeap<Reverse<Held>>,
    /// Start of the last operation released.
    released: u64,
}

/// The reorder windows of all timelines.
#[derive(Debug, Default)]
pub struct Reorder {
    timelines: IdMap<u64, Timeline>,
    arrivals: u64,
    /// Operations that started before one already released on their timeline.
    pub late: u64,
}

impl Reorder {
    /// Adds `op` to timeline `key`; returns the operation released, if the window is full.
    pub fn push(&mut self, key: u64, op: &DeviceOp) -> Option<DeviceOp> {
        let t = self.timelines.entry(key).or_default();
        if op.start < t.released {
            self.late += 1;
        }
        self.arrivals += 1;
        t.heap.push(Reverse(Held { start: op.start, arrival: self.arrivals, op: op.clone() }));
        if t.heap.len() <= WINDOW {
            return None;
        }
        let Reverse(h) = t.heap.pop()?;
        t.released = t.released.max(h.start);
        Some(h.op)
    }

    /// Every operation still held: timelines by key, each in start order.
    pub fn drain(&mut self) -> Vec<DeviceOp> {
        let mut keys: Vec<u64> = self.timelines.keys().copied().collect();
        keys.sort_unstable();
        let mut out = Vec::new();
        for k in keys {
            if let Some(mut t) = self.timelines.remove(&k) {
                while let Some(Reverse(h)) = t.heap.pop() {
                    out.push(h.op);
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn op(start: u64) -> DeviceOp {
        DeviceOp::default().start(start).end(start + 1)
    }

    #[test]
    fn releases_in_start_order_and_counts_what_comes_too_late() {
        let mut r = Reorder::default();
        let mut out = Vec::new();
        // Pairs swapped: 1, 0, 3, 2, ...
        for i in 0..WINDOW as u64 + 4 {
            out.extend(r.push(1, &op(100 + (i ^ 1))));
        }
        assert_eq!(out.iter().map(|o| o.start).collect::<Vec<_>>(), [100, 101, 102, 103]);
        assert_eq!(r.late, 0);
        out.extend(r.push(1, &op(50)));
        assert_eq!(r.late, 1, "50 starts before 103, already released");
        out.extend(r.drain());
        assert_eq!(out.len(), WINDOW + 5);
        assert!(out[5..].windows(2).all(|w| w[0].start <= w[1].start), "the rest in start order");
    }
}
