//! CUDA graph nodes back to the call that built them ([`cuda_wire::MSG_GRAPH_NODE`]).
//!
//! The agent reports, per process, `node → creating call` (a launch on a capturing stream, an
//! explicit `cudaGraphAdd*Node`) and `copy → original node` (instantiation, `cudaGraphClone`,
//! child graphs). A replayed kernel's record carries the id of the node of the executable graph
//! that ran it; [`GraphNodes::submission`] follows its copies back to the created node and
//! gives the model's submission link: `list` = the graph id, `record` = the creating call's
//! correlation id, `execution` = the graph launch's. The creating call's launch site is marked
//! `recording`, so the host keeps its stack for as long as the graph may be replayed.
//!
//! Instantiation flattens a child graph's nodes into the executable graph, and CUPTI reports
//! no callback for those flattened nodes: the kernel records of a child graph's kernels carry
//! node ids never reported. For them the link is found by the kernel they run: the agent sends
//! the kernel name of every kernel node a launch created (stream capture,
//! [`cuda_wire::NODE_CREATED_KERNEL`]), and when exactly one call created nodes of that kernel, that
//! call built the flattened node (it is the only node that kernel can have come from). When
//! several calls did, the link stays unknown and is counted.
//!
//! Before that, a never-reported node is looked for by its place: instantiation puts the nodes a
//! child-graph node embeds after the executable graph's own nodes, in the child-graph nodes'
//! order, and CUPTI reports the copies `cuGraphAddChildGraphNode` makes of the child graph's
//! nodes inside that call. XLA's command buffers capture each cuBLAS gemm into a graph of its
//! own and add it with the next call (seen on the H200), so a flattened node leads back to the
//! capture of its gemm. The executable graph's own nodes are the copies instantiation made of
//! the graph's nodes: nodes created in it afterwards (XLA's command-buffer updates) are not.
//!
//! Memory is bounded: at most [`MAX_NODES`] nodes per process are remembered (the oldest are
//! forgotten first and counted); a forgotten node's kernels still show their replay stack.

use std::collections::{BTreeSet, HashMap, VecDeque};

use xpuprof_sdk::hash::{IdMap, IdSet};
use xpuprof_sdk::model::{backend, Correlation, Submission};

use xpuprof_cupti_wire as cuda_wire;

use crate::wire::Reader;

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
    /// The reported nodes' indices (the low 32 bits of a node id) by graph (the high 32 bits).
    by_graph: IdMap<u32, BTreeSet<u32>>,
    /// Nodes copied inside a traced call (a child-graph node's embedded copies), by that call.
    copied_in: IdMap<u32, Vec<u64>>,
    /// Executed nodes never reported whose creating call was found by their place among the
    /// child-graph nodes of their executable graph.
    pub joined_by_place: u64,
    /// Calls that created a node and whose launch entry has not arrived yet.
    recording_calls: IdSet<u32>,
    /// Kernel name (demangled) -> the call that created nodes of it, or `None` when several did.
    by_kernel: HashMap<String, Option<u32>>,
    /// Executed nodes never reported whose creating call was found by their kernel's name.
    pub joined_by_kernel: u64,
    /// Executed nodes never reported whose kernel several calls created nodes of.
    pub ambiguous_kernel: u64,
    /// Nodes forgotten at the bound.
    pub forgotten: u64,
    /// Graph node messages that were cut short.
    pub malformed: u64,
}

impl GraphNodes {
    /// Reads one [`cuda_wire::MSG_GRAPH_NODE`] payload.
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
            cuda_wire::NODE_CREATED_KERNEL => {
                let name = String::from_utf8_lossy(&payload[cuda_wire::GRAPH_NODE_BYTES..]);
                self.kernel_created(&name, origin as u32);
                self.message_created(node, origin as u32);
            }
            cuda_wire::NODE_CREATED => self.message_created(node, origin as u32),
            cuda_wire::NODE_CLONED => {
                // Agents since the child-graph mapping add the traced call the copy was made in.
                let tail = payload.get(cuda_wire::GRAPH_NODE_BYTES..cuda_wire::GRAPH_NODE_BYTES + 8);
                let call = tail.map_or(0, |b| u64::from_le_bytes(b.try_into().unwrap_or([0; 8])) as u32);
                if call != 0 && self.copied_in.len() < MAX_NODES {
                    self.copied_in.entry(call).or_default().push(node);
                }
                self.insert(node, Origin::Cloned(origin));
            }
            _ => self.malformed += 1,
        }
    }

    fn kernel_created(&mut self, kernel: &str, call: u32) {
        if call == 0 {
            return;
        }
        let name = normalized(kernel);
        let room = self.by_kernel.len() < MAX_NODES;
        match self.by_kernel.get_mut(&name) {
            Some(e) if *e != Some(call) => *e = None,
            Some(_) => {}
            // At the bound new names are not kept (their nodes, if flattened, stay unknown);
            // forgetting old ones could make an ambiguous name look unique.
            None if room => {
                self.by_kernel.insert(name, Some(call));
            }
            None => {}
        }
    }

    fn message_created(&mut self, node: u64, call: u32) {
        if call != 0 {
            self.recording_calls.insert(call);
            if self.recording_calls.len() > MAX_NODES {
                // Launch entries never came (stacks off): forget the oldest guesses.
                self.recording_calls.clear();
            }
        }
        self.insert(node, Origin::Created(call));
    }

    fn insert(&mut self, node: u64, origin: Origin) {
        if self.origin.insert(node, origin).is_none() {
            self.order.push_back(node);
            self.by_graph.entry((node >> 32) as u32).or_default().insert(node as u32);
        }
        while self.origin.len() > MAX_NODES {
            let Some(old) = self.order.pop_front() else { break };
            if self.origin.remove(&old).is_some() {
                self.forgotten += 1;
                if let Some(g) = self.by_graph.get_mut(&((old >> 32) as u32)) {
                    g.remove(&(old as u32));
                }
            }
        }
    }

    /// The call that built the node a never-reported executable node `node` was flattened
    /// from. CUDA flattens a child graph's nodes into the executable graph without a callback;
    /// their ids hold the graph's id in the high 32 bits and, in the low ones, indices after
    /// those of the graph's own nodes, in the order of the child-graph nodes and of their
    /// embedded nodes (seen with XLA's command buffers on the H200). So the flattened node at
    /// index `n + f` (the graph's own nodes, the copies instantiation made, being `0..n`) is the
    /// `f`-th embedded node, counting the copies each child-graph node's creating call made, in
    /// the order of the child-graph nodes; its call is the one that created what that copy was
    /// copied from (the capture of XLA's gemm), else the child-graph node's. `None` when the
    /// graph's copies are not `0..n` or the count runs past the embedded copies.
    fn flattened(&self, node: u64) -> Option<u32> {
        let (graph, index) = ((node >> 32) as u32, node as u32);
        let own = self.by_graph.get(&graph)?;
        let copy_of = |i: u32| match self.origin.get(&(u64::from(graph) << 32 | u64::from(i))) {
            Some(Origin::Cloned(original)) => Some(*original),
            _ => None,
        };
        // Nodes created in the executable graph after instantiation are not among its own.
        let (n, last) =
            own.iter().filter(|&&i| copy_of(i).is_some()).fold((0u32, None), |(n, _), &i| (n + 1, Some(i)));
        if index < n || last != n.checked_sub(1) {
            return None;
        }
        let mut f = (index - n) as usize;
        for original in own.iter().filter_map(|&i| copy_of(i)) {
            let Some(&Origin::Created(call)) = self.origin.get(&original) else { continue };
            let Some(embedded) = self.copied_in.get(&call).filter(|_| call != 0) else { continue };
            if let Some(&copy) = embedded.get(f) {
                return self.creating_call(copy).or(Some(call));
            }
            f -= embedded.len();
        }
        None
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
    /// with correlation id `launch`; `kernel` is the name of the kernel it ran, if one.
    pub fn submission(&mut self, graph: u32, node: u64, launch: u32, kernel: Option<&str>) -> Submission {
        let mut call = self.creating_call(node);
        if call.is_none() && !self.origin.contains_key(&node) {
            // Never reported: a child graph's node flattened at instantiation. Its place among
            // the child-graph nodes first, else its kernel's name.
            call = self.flattened(node);
            if call.is_some() {
                self.joined_by_place += 1;
            }
        }
        if call.is_none() && !self.origin.contains_key(&node) {
            match kernel.and_then(|k| self.by_kernel.get(&normalized(k))) {
                Some(Some(c)) => {
                    call = Some(*c);
                    self.joined_by_kernel += 1;
                }
                Some(None) => self.ambiguous_kernel += 1,
                None => {}
            }
        }
        Submission::default()
            .list(u64::from(graph))
            .record(call.map(|c| Correlation { backend: backend::CUDA, id: u64::from(c) }))
            .execution(u64::from(launch))
    }
}

/// A kernel name as both the launch callback and the kernel record may give it: demangled.
fn normalized(kernel: &str) -> String {
    xpuprof_toolbox::demangle::demangle(kernel).unwrap_or_else(|| kernel.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msg(kind: u8, node: u64, origin: u64) -> Vec<u8> {
        let mut m = Vec::new();
        cuda_wire::put_graph_node(&mut m, kind, 1, node, origin);
        m[crate::wire::HEADER_BYTES..].to_vec()
    }

    #[test]
    fn copies_lead_back_to_the_creating_call() {
        let mut g = GraphNodes::default();
        g.message(&msg(cuda_wire::NODE_CREATED, 10, 501));
        // Child graph node copied into a parent, the parent instantiated twice.
        g.message(&msg(cuda_wire::NODE_CLONED, 20, 10));
        g.message(&msg(cuda_wire::NODE_CLONED, 30, 20));
        g.message(&msg(cuda_wire::NODE_CLONED, 31, 20));
        assert_eq!(g.creating_call(30), Some(501));
        assert_eq!(g.creating_call(31), Some(501));
        assert_eq!(g.creating_call(99), None);
        let s = g.submission(4, 31, 900, None);
        assert_eq!((s.list, s.record.map(|c| c.id), s.execution), (4, Some(501), 900));
        assert!(g.take_recording(501));
        assert!(!g.take_recording(501), "once");
    }

    fn kernel_msg(node: u64, call: u64, name: &str) -> Vec<u8> {
        let mut m = Vec::new();
        cuda_wire::put_graph_kernel_node(&mut m, 1, node, call, name.as_bytes());
        m[crate::wire::HEADER_BYTES..].to_vec()
    }

    #[test]
    fn flattened_child_nodes_are_found_by_their_kernel_when_one_call_made_it() {
        let mut g = GraphNodes::default();
        // Two captured kernels; k2 captured twice, from two calls.
        g.message(&kernel_msg(10, 3, "_Z6cap_k1Pfi"));
        g.message(&kernel_msg(11, 4, "_Z6cap_k2Pfi"));
        g.message(&kernel_msg(12, 9, "_Z6cap_k2Pfi"));
        assert!(g.take_recording(3), "a kernel node's call is a recording call");
        // Executable-graph nodes 40, 41 never reported (flattened from a child graph).
        let s = g.submission(4, 40, 900, Some("_Z6cap_k1Pfi"));
        assert_eq!(s.record.map(|c| c.id), Some(3));
        let s = g.submission(4, 40, 900, Some("cap_k1(float*, int)"));
        assert_eq!(s.record.map(|c| c.id), Some(3), "names compare demangled");
        assert_eq!(g.submission(4, 41, 900, Some("_Z6cap_k2Pfi")).record, None, "two calls made k2");
        assert_eq!(g.submission(4, 42, 900, Some("_Z5otherv")).record, None);
        assert_eq!((g.joined_by_kernel, g.ambiguous_kernel), (2, 1));
        // A reported node never falls back to the name.
        g.message(&msg(cuda_wire::NODE_CREATED, 50, 0));
        assert_eq!(g.submission(4, 50, 900, Some("_Z6cap_k1Pfi")).record, None);
    }

    fn clone_in(node: u64, original: u64, call: u64) -> Vec<u8> {
        let mut m = Vec::new();
        cuda_wire::put_graph_clone(&mut m, 1, node, original, call);
        m[crate::wire::HEADER_BYTES..].to_vec()
    }

    /// XLA's command buffer as round 1 on the H200 saw it: a parent graph of operations added
    /// one by one and two child-graph nodes (cuBLAS gemms captured into their own graphs), the
    /// executable graph (id 12) holding copies of the parent's nodes at indices 0..n and the
    /// child graphs' nodes, never reported, at n, n + 1, ... in the child-graph nodes' order.
    #[test]
    fn flattened_child_graph_nodes_are_found_by_their_place() {
        let mut g = GraphNodes::default();
        let exec = |i: u64| 12u64 << 32 | i;
        // Captured gemms (calls 50, 60), each alone in its capture graph, the same kernel.
        g.message(&kernel_msg(500, 50, "gemm"));
        g.message(&kernel_msg(600, 60, "gemm"));
        // The parent: child node 10 (call 5, embedding a copy of node 500), operation 11
        // (call 6), child node 12 (call 7, embedding a copy of 600).
        g.message(&msg(cuda_wire::NODE_CREATED, 10, 5));
        g.message(&clone_in(501, 500, 5));
        g.message(&msg(cuda_wire::NODE_CREATED, 11, 6));
        g.message(&msg(cuda_wire::NODE_CREATED, 12, 7));
        g.message(&clone_in(601, 600, 7));
        // Instantiation: the parent's nodes copied to indices 0..3 of executable graph 12.
        for (i, n) in [10u64, 11, 12].into_iter().enumerate() {
            g.message(&clone_in(exec(i as u64), n, 0));
        }
        assert_eq!(g.submission(12, exec(1), 900, Some("op")).record.map(|c| c.id), Some(6));
        // The calls that captured what the embedded copies were copied from.
        assert_eq!(
            g.submission(12, exec(3), 900, Some("gemm")).record.map(|c| c.id),
            Some(50),
            "first child"
        );
        assert_eq!(
            g.submission(12, exec(4), 900, Some("gemm")).record.map(|c| c.id),
            Some(60),
            "second child"
        );
        assert_eq!(g.submission(12, exec(5), 900, Some("gemm")).record, None, "past the embedded nodes");
        assert_eq!(g.joined_by_place, 2);
        assert_eq!(g.ambiguous_kernel, 1, "only the node past them fell back to the name");
    }

    fn node_msg(graph: u64, index: u64, call: u64) -> Vec<u8> {
        let mut m = Vec::new();
        cuda_wire::put_graph_node(&mut m, cuda_wire::NODE_CREATED, graph as u32, graph << 32 | index, call);
        m[crate::wire::HEADER_BYTES..].to_vec()
    }

    fn capture_msg(graph: u64, call: u64, name: &str) -> Vec<u8> {
        let mut m = Vec::new();
        cuda_wire::put_graph_kernel_node(&mut m, graph as u32, graph << 32, call, name.as_bytes());
        m[crate::wire::HEADER_BYTES..].to_vec()
    }

    fn copy_msg(graph: u64, index: u64, original: u64, call: u64) -> Vec<u8> {
        let mut m = Vec::new();
        cuda_wire::put_graph_clone(&mut m, graph as u32, graph << 32 | index, original, call);
        m[crate::wire::HEADER_BYTES..].to_vec()
    }

    /// XLA's command buffer as the agent reported it on the H200 (JAX 0.11.2, batch 256, width
    /// 2048; the messages of `tests/fixtures/jax_cmdbuf`, same ids): each cuBLAS gemm captured
    /// alone into a graph of its own (2, 4, ...), copied into a new graph (3, 5, ...) by
    /// `cuGraphAddChildGraphNode`, which then creates the child-graph node in the command
    /// buffer's graph 1; 24 nodes there. Instantiation into graph 12 copies them to 12:0..24 and
    /// each child's graph once more (13, 14, ...); the five gemms run as 12:24..29, never
    /// reported. Then XLA's first update creates nodes 12:29..33 in the executable graph, which
    /// are none of its own; the same gemms are captured again by later calls (so their names
    /// join nothing).
    #[test]
    fn flattened_gemms_of_xla_command_buffers_lead_back_to_their_capture() {
        let mut g = GraphNodes::default();
        let children = [0u64, 2, 8, 12, 16];
        let kernels = ["gemm_nn", "gemm_nn", "gemm_tn", "cutlass_nt", "cutlass_nt"];
        let mut call = 5104u64;
        let mut captures = Vec::new();
        for i in 0..24u64 {
            match children.iter().position(|&c| c == i) {
                Some(k) => {
                    let (captured, embedded) = (2 + 2 * k as u64, 3 + 2 * k as u64);
                    g.message(&capture_msg(captured, call, kernels[k]));
                    g.message(&node_msg(embedded, 0, call + 1));
                    g.message(&copy_msg(embedded, 0, captured << 32, call + 1));
                    g.message(&node_msg(1, i, call + 1));
                    captures.push(call);
                    call += 2;
                }
                None => {
                    g.message(&node_msg(1, i, call));
                    call += 1;
                }
            }
        }
        for i in 0..24u64 {
            if let Some(k) = children.iter().position(|&c| c == i) {
                g.message(&node_msg(13 + k as u64, 0, 0));
                g.message(&copy_msg(13 + k as u64, 0, (3 + 2 * k as u64) << 32, 0));
            }
            g.message(&node_msg(12, i, 0));
            g.message(&copy_msg(12, i, 1 << 32 | i, 0));
        }
        for i in children {
            g.message(&node_msg(18, i, 0));
        }
        for i in 29..33u64 {
            g.message(&node_msg(12, i, 0));
        }
        for (k, kernel) in kernels.iter().enumerate() {
            g.message(&capture_msg(24 + k as u64, 5135 + k as u64, kernel));
        }
        let exec = |i: u64| 12u64 << 32 | i;
        assert_eq!(g.submission(12, exec(1), 5133, Some("op")).record.map(|c| c.id), Some(5106));
        for (f, capture) in captures.iter().enumerate() {
            let s = g.submission(12, exec(24 + f as u64), 5133, Some(kernels[f]));
            assert_eq!(s.record.map(|c| c.id), Some(*capture), "gemm {f}: its capture");
        }
        assert_eq!((g.joined_by_place, g.ambiguous_kernel), (5, 0));
        assert_eq!(g.submission(12, exec(34), 5133, None).record, None, "past the embedded copies");
    }

    #[test]
    fn untraced_creators_cycles_and_short_messages_give_nothing() {
        let mut g = GraphNodes::default();
        g.message(&msg(cuda_wire::NODE_CREATED, 1, 0));
        assert_eq!(g.creating_call(1), None);
        g.message(&msg(cuda_wire::NODE_CLONED, 2, 3));
        g.message(&msg(cuda_wire::NODE_CLONED, 3, 2));
        assert_eq!(g.creating_call(2), None);
        g.message(&msg(cuda_wire::NODE_CLONED, 4, 5)[..10]);
        assert_eq!(g.malformed, 1);
    }
}
