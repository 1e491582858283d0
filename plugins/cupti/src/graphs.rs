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
//! order. What a child-graph node embeds is known from the copies made inside the call that
//! added it, where CUPTI reports them, else from the graph the program built just before it:
//! XLA's command buffers capture each cuBLAS gemm into a graph of its own (a launch on a
//! capturing stream) and add that graph as a child-graph node with the very next call, which
//! CUPTI reports without any copy (seen on the H200: the capture, then
//! `cuGraphAddChildGraphNode`, for each gemm of the step). The embedded nodes are then those of
//! the graph the latest node-creating call before the child-graph node's created a node in,
//! when that graph is another one, built by stream capture (a launch created a kernel node in it).
//!
//! Memory is bounded: at most [`MAX_NODES`] nodes per process are remembered (the oldest are
//! forgotten first and counted); a forgotten node's kernels still show their replay stack.

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};

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
    /// Child-graph nodes (`cuGraphAddChildGraphNode`).
    child_nodes: IdSet<u64>,
    /// Calls that created nodes, in correlation order, and the graph of their (last) node.
    creations: BTreeMap<u32, u32>,
    /// Graphs with a kernel node created by a launch (stream capture).
    captured: IdSet<u32>,
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
                self.message_created(node, origin as u32, true);
            }
            cuda_wire::NODE_CREATED => self.message_created(node, origin as u32, false),
            cuda_wire::NODE_CREATED_CHILD => {
                if self.child_nodes.len() < MAX_NODES {
                    self.child_nodes.insert(node);
                }
                self.message_created(node, origin as u32, false);
            }
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

    fn message_created(&mut self, node: u64, call: u32, capture: bool) {
        if call != 0 {
            let graph = (node >> 32) as u32;
            self.creations.insert(call, graph);
            if self.creations.len() > MAX_NODES {
                self.creations.pop_first();
            }
            if capture && self.captured.len() < MAX_NODES {
                self.captured.insert(graph);
            }
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

    /// The call that created the child-graph node whose embedded copy executable node `node`
    /// was flattened from. CUDA flattens a child graph's nodes into the executable graph
    /// without a callback; their ids hold the graph's id in the high 32 bits and, in the low
    /// ones, indices after those of the graph's own (reported) nodes, in the order of the
    /// child-graph nodes and of their embedded nodes (seen with XLA's command buffers on the
    /// H200). So the flattened node at index `n + f` (the graph's own nodes being `0..n`) is the
    /// `f`-th embedded node, counting the copies each child-graph node's creating call made, in
    /// the order of the child-graph nodes. `None` when the graph's own nodes are not `0..n` or
    /// the count runs past the embedded copies.
    fn flattened(&self, node: u64) -> Option<u32> {
        let (graph, index) = ((node >> 32) as u32, node as u32);
        let own = self.by_graph.get(&graph)?;
        let n = own.len() as u32;
        if index < n || own.iter().next_back() != Some(&(n - 1)) {
            return None;
        }
        let mut f = (index - n) as usize;
        for &i in own {
            let top = u64::from(graph) << 32 | u64::from(i);
            let Some(Origin::Cloned(original)) = self.origin.get(&top) else { continue };
            let Some(&Origin::Created(call)) = self.origin.get(original) else { continue };
            if call == 0 {
                continue;
            }
            if let Some(embedded) = self.copied_in.get(&call) {
                if f < embedded.len() {
                    return Some(call);
                }
                f -= embedded.len();
            } else if self.child_nodes.contains(original) {
                // Without copies: the graph captured just before; unknown, nothing further counts.
                let (captured, nodes) = self.captured_before(call, (original >> 32) as u32)?;
                if let Some(&at) = nodes.iter().nth(f) {
                    return self.creating_call(u64::from(captured) << 32 | u64::from(at)).or(Some(call));
                }
                f -= nodes.len();
            }
        }
        None
    }

    /// The graph that the latest node-creating call before `call` created a node in, and its
    /// nodes' indices, when that graph is not `parent` and was built by stream capture.
    fn captured_before(&self, call: u32, parent: u32) -> Option<(u32, &BTreeSet<u32>)> {
        let (_, &graph) = self.creations.range(..call).next_back()?;
        if graph == parent || !self.captured.contains(&graph) {
            return None;
        }
        Some((graph, self.by_graph.get(&graph)?))
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
        assert_eq!(g.submission(12, exec(3), 900, Some("gemm")).record.map(|c| c.id), Some(5), "first child");
        assert_eq!(
            g.submission(12, exec(4), 900, Some("gemm")).record.map(|c| c.id),
            Some(7),
            "second child"
        );
        assert_eq!(g.submission(12, exec(5), 900, Some("gemm")).record, None, "past the embedded nodes");
        assert_eq!(g.joined_by_place, 2);
        assert_eq!(g.ambiguous_kernel, 1, "only the node past them fell back to the name");
    }

    fn node_msg(kind: u8, graph: u64, index: u64, call: u64) -> Vec<u8> {
        let mut m = Vec::new();
        cuda_wire::put_graph_node(&mut m, kind, graph as u32, graph << 32 | index, call);
        m[crate::wire::HEADER_BYTES..].to_vec()
    }

    fn capture_msg(graph: u64, index: u64, call: u64, name: &str) -> Vec<u8> {
        let mut m = Vec::new();
        cuda_wire::put_graph_kernel_node(&mut m, graph as u32, graph << 32 | index, call, name.as_bytes());
        m[crate::wire::HEADER_BYTES..].to_vec()
    }

    /// XLA's command buffer as the H200 showed it at batch 256, width 2048 (correlation ids and
    /// node indices of that run): each cuBLAS gemm captured alone into a graph of its own (a
    /// launch on a capturing stream), then added to the command buffer's graph as a child-graph
    /// node by the next call, with no copy reported; the same gemm kernel captured by several
    /// calls (and again every step), so its name joins nothing. The executable graph (12) holds
    /// copies of the parent's 24 nodes at 0..24 and the five embedded gemms at 24..29.
    #[test]
    fn flattened_nodes_of_captured_child_graphs_are_found_by_their_place() {
        let mut g = GraphNodes::default();
        let parent = 7u64;
        let mut child_calls = Vec::new();
        let mut capture_calls = Vec::new();
        let mut call = 5104u64;
        for i in 0..24u64 {
            if [0, 2, 8, 12, 16].contains(&i) {
                let captured = 100 + i;
                let kernel = if i < 12 { "sm90_xmma_gemm_nn" } else { "cutlass_gemm" };
                g.message(&capture_msg(captured, 0, call, kernel));
                g.message(&node_msg(cuda_wire::NODE_CREATED_CHILD, parent, i, call + 1));
                capture_calls.push(call as u32);
                child_calls.push(call as u32 + 1);
                call += 2;
            } else {
                g.message(&node_msg(cuda_wire::NODE_CREATED, parent, i, call));
                call += 1;
            }
        }
        // Instantiation: created (outside any call) and copied from the parent's nodes.
        for i in 0..24u64 {
            g.message(&node_msg(cuda_wire::NODE_CREATED, 12, i, 0));
            let mut m = Vec::new();
            cuda_wire::put_graph_clone(&mut m, 12, 12 << 32 | i, parent << 32 | i, 0);
            g.message(&m[crate::wire::HEADER_BYTES..]);
        }
        // A later step captures the gemms again (XLA updates its command buffer).
        g.message(&capture_msg(200, 0, 5135, "sm90_xmma_gemm_nn"));
        let exec = |i: u64| 12u64 << 32 | i;
        assert_eq!(g.submission(12, exec(1), 5133, Some("op")).record.map(|c| c.id), Some(5106));
        for (f, want) in capture_calls.iter().enumerate() {
            let kernel = if f < 3 { "sm90_xmma_gemm_nn" } else { "cutlass_gemm" };
            let s = g.submission(12, exec(24 + f as u64), 5133, Some(kernel));
            assert_eq!(s.record.map(|c| c.id), Some(u64::from(*want)), "flattened node {f}: its capture");
        }
        assert_eq!(g.joined_by_place, 5);
        assert_eq!(g.submission(12, exec(29), 5133, Some("sm90_xmma_gemm_nn")).record, None, "past them");
        assert_eq!(g.ambiguous_kernel, 1);
        // A child-graph node whose graph was not captured just before it: nothing is guessed.
        let mut h = GraphNodes::default();
        h.message(&capture_msg(100, 0, 10, "k"));
        h.message(&node_msg(cuda_wire::NODE_CREATED, parent, 0, 11));
        h.message(&node_msg(cuda_wire::NODE_CREATED_CHILD, parent, 1, 12));
        for i in 0..2u64 {
            let mut m = Vec::new();
            cuda_wire::put_graph_clone(&mut m, 12, 12 << 32 | i, parent << 32 | i, 0);
            h.message(&m[crate::wire::HEADER_BYTES..]);
        }
        assert_eq!(h.submission(12, exec(2), 900, None).record, None);
        assert_eq!(h.joined_by_place, 0);
        // A captured graph of two nodes (a kernel, then a memset captured after it): both
        // flattened, in their order, after the executable graph's own nodes.
        let mut m = GraphNodes::default();
        m.message(&capture_msg(300, 0, 20, "k"));
        m.message(&node_msg(cuda_wire::NODE_CREATED, 300, 1, 21));
        m.message(&node_msg(cuda_wire::NODE_CREATED_CHILD, parent, 0, 22));
        m.message(&node_msg(cuda_wire::NODE_CREATED, parent, 1, 23));
        for i in 0..2u64 {
            let mut c = Vec::new();
            cuda_wire::put_graph_clone(&mut c, 13, 13 << 32 | i, parent << 32 | i, 0);
            m.message(&c[crate::wire::HEADER_BYTES..]);
        }
        let at = |i: u64| 13u64 << 32 | i;
        assert_eq!(m.submission(13, at(2), 900, Some("k")).record.map(|c| c.id), Some(20));
        assert_eq!(m.submission(13, at(3), 900, None).record.map(|c| c.id), Some(21));
        assert_eq!(m.submission(13, at(4), 900, None).record, None);
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
