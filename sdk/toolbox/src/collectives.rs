//! Which collective a device operation is, the same on every rank of a job: its communicator
//! and its sequence number on that communicator (the order of that communicator's collectives,
//! as NCCL numbers them), so the merge lines clocks up by the ends of one collective and the
//! sinks link one collective's slices across ranks and find who was late.
//!
//! The backend says which work is a collective ([`DeviceOp::collective`]) and, when it knows
//! it, an id of its communicator that every rank shares ([`DeviceOp::communicator`]). When it
//! does not (0), the stream the work ran on stands for the communicator, as a communication
//! library runs each communicator's work on a stream of its own, and the streams of different
//! ranks are matched by the order their first collectives come in: the first stream of each
//! rank to run a collective is communicator 1 of the job, the next one 2.
//!
//! A process's collectives must come in their order on each stream (device work of one stream
//! does); a collective a rank did not record (a loss, a closed capture window) shifts that
//! rank's later numbers on its communicator, which the matching reports as unmatched.

use std::fmt;

use xpuprof_sdk::hash::IdMap;
use xpuprof_sdk::model::{CollectiveOp, DeviceOp, StreamId};

/// A communicator as the whole job knows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Communicator {
    /// The backend's id, the same on every rank.
    Id(u64),
    /// The n-th (from 1) communicator of each rank to run a collective, by stream.
    Nth(u32),
}

impl fmt::Display for Communicator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Id(id) => write!(f, "{id:#x}"),
            Self::Nth(n) => write!(f, "{n}"),
        }
    }
}

/// One collective of the job: the same on every rank that took part.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CollectiveKey {
    /// Its communicator.
    pub communicator: Communicator,
    /// Its number on the communicator, from 1.
    pub seq: u64,
}

impl CollectiveKey {
    /// A flow id for the trace formats, the same on every rank: below 2^53 (JSON viewers read
    /// numbers as doubles), never 0, and with bit 52 set, apart from launch flows
    /// ([`crate::timeline::Flows`] ids stay below it for the first 65,536 processes).
    pub fn flow_id(&self) -> u64 {
        self.pair_flow(0)
    }

    /// The id of the flow from the collective's `j - 1`-th slice in a trace to its `j`-th
    /// (`j` below 256), for formats whose flows have one start and one end: as
    /// [`CollectiveKey::flow_id`], with `j` in bits 32 to 39.
    pub fn pair_flow(&self, j: usize) -> u64 {
        let comm = match self.communicator {
            Communicator::Nth(n) => u64::from(n) & 0x3ff,
            Communicator::Id(id) => 0x400 | (id ^ (id >> 21) ^ (id >> 42)) & 0x3ff,
        };
        1 << 52 | comm << 40 | (j as u64 & 0xff) << 32 | (self.seq & 0xffff_ffff)
    }
}

/// `op`'s name for people ("allreduce").
pub fn op_name(op: CollectiveOp) -> &'static str {
    match op {
        CollectiveOp::None => "none",
        CollectiveOp::AllReduce => "allreduce",
        CollectiveOp::AllGather => "allgather",
        CollectiveOp::ReduceScatter => "reducescatter",
        CollectiveOp::Broadcast => "broadcast",
        CollectiveOp::Reduce => "reduce",
        CollectiveOp::AllToAll => "alltoall",
        CollectiveOp::SendRecv => "sendrecv",
        _ => "collective",
    }
}

/// Whether every rank of a collective `op` waits for every other (all-reduce, all-gather,
/// reduce-scatter, all-to-all): its ends line up across ranks, and no rank ends it before all
/// have started. A broadcast's or a reduce's root, a sender, need not wait.
pub fn synchronizes(op: CollectiveOp) -> bool {
    matches!(
        op,
        CollectiveOp::AllReduce
            | CollectiveOp::AllGather
            | CollectiveOp::ReduceScatter
            | CollectiveOp::AllToAll
    )
}

/// A collective's label for people: `allreduce #412 on communicator 1`.
pub fn label(op: CollectiveOp, key: &CollectiveKey) -> String {
    format!("{} #{} on communicator {}", op_name(op), key.seq, key.communicator)
}

/// The links of the timeline sinks: flows through the slices of each collective on every
/// rank, in the order the trace places them. Only collectives some of whose ranks are still to
/// come are held.
#[derive(Debug, Default)]
pub struct Links {
    numbering: Numbering,
    placed: IdMap<CollectiveKey, usize>,
}

/// One collective slice's links.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Link {
    /// Which collective it is.
    pub key: CollectiveKey,
    /// The flow through all its slices ([`CollectiveKey::flow_id`]).
    pub flow: u64,
    /// Whether this slice is the first of its collective in the trace.
    pub first: bool,
    /// The flow from the previous slice of the collective that ends here.
    pub from: Option<u64>,
    /// The flow to the next slice that starts here (none at the last of `ranks`).
    pub to: Option<u64>,
}

impl Links {
    /// The links of device work `op` of a collective that `ranks` ranks run (the job's world
    /// size), `None` when it is no collective. Call it with each stream's work in order.
    pub fn link(&mut self, op: &DeviceOp, ranks: usize) -> Option<Link> {
        let key = self.numbering.key(op)?;
        let placed = self.placed.entry(key).or_default();
        let j = *placed;
        *placed += 1;
        if *placed >= ranks {
            self.placed.remove(&key);
        }
        let from = (j > 0).then(|| key.pair_flow(j));
        let to = (j + 1 < ranks).then(|| key.pair_flow(j + 1));
        Some(Link { key, flow: key.flow_id(), first: j == 0, from, to })
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Local {
    Id(u64),
    Stream(StreamId),
}

/// Numbers the collectives of every process as their device work comes.
#[derive(Debug, Default)]
pub struct Numbering {
    /// (process, its communicator or stream) → the job's communicator and its last number.
    comms: IdMap<(u32, Local), (Communicator, u64)>,
    /// Streams standing for communicators seen in each process.
    streams: IdMap<u32, u32>,
}

impl Numbering {
    /// The collective `op` is, or `None` when it is no collective.
    pub fn key(&mut self, op: &DeviceOp) -> Option<CollectiveKey> {
        if op.collective == CollectiveOp::None {
            return None;
        }
        let local = match op.communicator {
            0 => Local::Stream(op.stream),
            id => Local::Id(id),
        };
        let streams = &mut self.streams;
        let (communicator, seq) = self.comms.entry((op.pid, local)).or_insert_with(|| {
            let c = match local {
                Local::Id(id) => Communicator::Id(id),
                Local::Stream(_) => {
                    let n = streams.entry(op.pid).or_default();
                    *n += 1;
                    Communicator::Nth(*n)
                }
            };
            (c, 0)
        });
        *seq += 1;
        Some(CollectiveKey { communicator: *communicator, seq: *seq })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn op(pid: u32, stream: u32, comm: u64) -> DeviceOp {
        DeviceOp::default()
            .pid(pid)
            .stream(StreamId(stream))
            .communicator(comm)
            .collective(CollectiveOp::AllReduce)
    }

    #[test]
    fn ranks_streams_are_matched_by_order_and_numbered_per_communicator() {
        let mut n = Numbering::default();
        // Rank 0 (pid 10) uses streams 5 then 9; rank 1 (pid 20) streams 3 then 4.
        let k = |n: &mut Numbering, pid, s| n.key(&op(pid, s, 0)).unwrap();
        assert_eq!(k(&mut n, 10, 5), CollectiveKey { communicator: Communicator::Nth(1), seq: 1 });
        assert_eq!(k(&mut n, 20, 3), CollectiveKey { communicator: Communicator::Nth(1), seq: 1 });
        assert_eq!(k(&mut n, 10, 5).seq, 2);
        assert_eq!(k(&mut n, 10, 9), CollectiveKey { communicator: Communicator::Nth(2), seq: 1 });
        assert_eq!(k(&mut n, 20, 4), CollectiveKey { communicator: Communicator::Nth(2), seq: 1 });
        assert_eq!(k(&mut n, 20, 3).seq, 2);
        // A backend's communicator id is shared across ranks whatever the streams.
        let a = n.key(&op(10, 1, 0xabc)).unwrap();
        let b = n.key(&op(20, 2, 0xabc)).unwrap();
        assert_eq!((a, a.communicator), (b, Communicator::Id(0xabc)));
        assert_eq!(n.key(&DeviceOp::default()), None);
    }

    #[test]
    fn links_chain_a_collectives_slices_in_placing_order_and_forget_complete_ones() {
        let mut l = Links::default();
        let a = l.link(&op(10, 5, 0), 3).unwrap();
        let b = l.link(&op(20, 3, 0), 3).unwrap();
        let c = l.link(&op(30, 8, 0), 3).unwrap();
        assert!(a.first && !b.first && !c.first);
        assert_eq!((a.from, a.to.is_some()), (None, true));
        assert_eq!((b.from, c.from), (a.to, b.to));
        assert_eq!(c.to, None);
        assert!(l.placed.is_empty(), "a collective all ranks placed is forgotten");
        assert_eq!(a.flow, c.flow);
    }

    #[test]
    fn flow_ids_differ_per_collective_and_stay_apart_from_launch_flows() {
        let a = CollectiveKey { communicator: Communicator::Nth(1), seq: 7 };
        let b = CollectiveKey { communicator: Communicator::Nth(2), seq: 7 };
        let c = CollectiveKey { communicator: Communicator::Id(u64::MAX), seq: 7 };
        for k in [a, b, c] {
            assert!(k.flow_id() < 1 << 53 && k.flow_id() >= 1 << 52, "{k:?}");
        }
        assert_ne!(a.flow_id(), b.flow_id());
        assert_ne!(b.flow_id(), c.flow_id());
        assert_eq!(label(CollectiveOp::AllReduce, &a), "allreduce #7 on communicator 1");
    }
}
