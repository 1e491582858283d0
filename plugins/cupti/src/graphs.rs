//! CUDA graph nodes back to the call that built them ([`wire::MSG_GRAPH_NODE`]).
//!
//! The agent reports, per process, `node → creating call` (a launch on a capturing stream, an
//! explicit `cudaGraphAdd*Node`) and `copy → original node` (instantiation, `cudaGraphClone`,
//! child graphs). A replayed kernel's record carries the id of the node of the executable graph
//! that ran it; [`GraphNodes::submission`] follows its copies back to the created node and
//! gives the model's submission link: `list` = the graph id, `record` = the creating call's
//! correlation id, `execution` = the graph launch's. The creating call's launch site is marked
//! `recording`, so the host keeps its stack for as long as the graph may be replayed.
//!
//! Memory is bounded: at most [`MAX_NODES`] nodes per process are remembered (the oldest are
//! forgotten first and counted); a forgotten node's kernels still show their replay stack.

use std::collections::VecDeque;

use xpuprof_sdk::hash::{IdMap, IdSet};
use xpuprof_sdk::model::{backend, Correlation, Submission};

use crate::wire::{self, Reader};

/// Most graph nodes remembered per process (a node is 16 bytes of map entry).
pub const MAX_NODES: usize = 1 << 20;
/// Longest chain of copies followed (a copy of a copy of a child graph's node...).
const MAX_CLONE_DEPTH: usize = 64;

/// Where a node came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Origin {
    /// Created by the call with this correlation id (0: outside any traced call).
    Created(u32),
    /// A copy of this node.
    Cloned(u64),
}

/// One process's graph nodes.
#[derive(Debug, Default)]
pub struct GraphNodes {
    origin: IdMap<u64, Origin>,
    order: VecDeque<u64>,
    /// Calls that created a node and whose launch entry has not arrived yet.
    recording_calls: IdSet<u32>,
    /// Nodes forgotten at the bound.
    pub forgotten: u64,
    /// Graph node messages that were cut short.
    pub malformed: u64,
}

impl GraphNodes {
    /// Reads one [`wire::MSG_GRAPH_NODE`] payload.
    pub fn message(&mut self, payload: &[u8]) {
        let mut r = Reader::new(payload);
        let kind = r.u8();
        r.bytes(3);
        let (_graph, node, origin) = (r.u32(), r.u64(), r.u64());
        if r.short {
            self.malformed += 1;
            return;
        }
        match kind {
            wire::NODE_CREATED => {
                let call = origin as u32;
                if call != 0 {
                    self.recording_calls.insert(call);
                    if self.recording_calls.len() > MAX_NODES {
                        // Launch entries never came (stacks off): forget the oldest guesses.
                        self.recording_calls.clear();
                    }
                }
                self.insert(node, Origin::Created(call));
            }
            wire::NODE_CLONED => self.insert(node, Origin::Cloned(origin)),
            _ => self.malformed += 1,
        }
    }

    fn insert(&mut self, node: u64, origin: Origin) {
        if self.origin.insert(node, origin).is_none() {
            self.order.push_back(node);
        }
        while self.origin.len() > MAX_NODES {
            let Some(old) = self.order.pop_front() else { break };
            if self.origin.remove(&old).is_some() {
                self.forgotten += 1;
            }
        }
    }

    /// True (once) when the call with correlation id `call` created a graph node: its launch
    /// site is a recording.
    pub fn take_recording(&mut self, call: u32) -> bool {
        !self.recording_calls.is_empty() && self.recording_calls.remove(&call)
    }

    /// The call that created `node`, following copies back to the original; `None` when the
    /// node, or one of the nodes it was copied from, was never reported.
    pub fn creating_call(&self, node: u64) -> Option<u32> {
        let mut at = node;
        for _ in 0..MAX_CLONE_DEPTH {
            match self.origin.get(&at)? {
                Origin::Created(0) => return None,
                Origin::Created(call) => return Some(*call),
                Origin::Cloned(from) => at = *from,
            }
        }
        None
    }

    /// The submission link of work that node `node` of graph `graph` ran, for the graph launch
    /// with correlation id `launch`.
    pub fn submission(&self, graph: u32, node: u64, launch: u32) -> Submission {
        Submission::default()
            .list(u64::from(graph))
            .record(
                self.creating_call(node).map(|c| Correlation { backend: backend::CUDA, id: u64::from(c) }),
            )
            .execution(u64::from(launch))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msg(kind: u8, node: u64, origin: u64) -> Vec<u8> {
        let mut m = Vec::new();
        wire::put_graph_node(&mut m, kind, 1, node, origin);
        m[wire::HEADER_BYTES..].to_vec()
    }

    #[test]
    fn copies_lead_back_to_the_creating_call() {
        let mut g = GraphNodes::default();
        g.message(&msg(wire::NODE_CREATED, 10, 501));
        // Child graph node copied into a parent, the parent instantiated twice.
        g.message(&msg(wire::NODE_CLONED, 20, 10));
        g.message(&msg(wire::NODE_CLONED, 30, 20));
        g.message(&msg(wire::NODE_CLONED, 31, 20));
        assert_eq!(g.creating_call(30), Some(501));
        assert_eq!(g.creating_call(31), Some(501));
        assert_eq!(g.creating_call(99), None);
        let s = g.submission(4, 31, 900);
        assert_eq!((s.list, s.record.map(|c| c.id), s.execution), (4, Some(501), 900));
        assert!(g.take_recording(501));
        assert!(!g.take_recording(501), "once");
    }

    #[test]
    fn untraced_creators_cycles_and_short_messages_give_nothing() {
        let mut g = GraphNodes::default();
        g.message(&msg(wire::NODE_CREATED, 1, 0));
        assert_eq!(g.creating_call(1), None);
        g.message(&msg(wire::NODE_CLONED, 2, 3));
        g.message(&msg(wire::NODE_CLONED, 3, 2));
        assert_eq!(g.creating_call(2), None);
        g.message(&msg(wire::NODE_CLONED, 4, 5)[..10]);
        assert_eq!(g.malformed, 1);
    }
}
