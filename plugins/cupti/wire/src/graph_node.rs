//! [`MSG_GRAPH_NODE`]: a node of a recorded CUDA graph and the call that made it.
//!
//! Payload: `kind u8` ([`NODE_CREATED`], [`NODE_CLONED`] or [`NODE_CREATED_KERNEL`]),
//! `pad u8 × 3`, `graph u32, node u64, origin u64`: the node was created by the API call whose
//! correlation id is `origin` (0: outside any traced call), or cloned from node `origin` (graph
//! instantiation, cloning, child graphs); a kernel node created by a launch (stream capture) also
//! carries the kernel's name after these fields, and a clone made inside a traced call (the
//! copies a child-graph node embeds, made inside `cuGraphAddChildGraphNode`) carries that call's
//! correlation id (`call u64`) after them. Sent during the call, so before that call's launch
//! entry and before any record of the node's executions.
//!
//! The number, 13, lies in `xpuprof-wire`'s common range because the message was defined there
//! before the numbers were shared out; `xpuprof-wire` keeps it taken
//! ([`MSG_BACKEND_LEGACY`](xpuprof_wire::MSG_BACKEND_LEGACY)), so streams and fixtures written
//! then read the same today.

use xpuprof_wire::put_message;

/// A graph node was created or cloned.
pub const MSG_GRAPH_NODE: u8 = xpuprof_wire::MSG_BACKEND_LEGACY;

/// [`MSG_GRAPH_NODE`] kind: created by the call whose correlation id is `origin`.
pub const NODE_CREATED: u8 = 1;
/// [`MSG_GRAPH_NODE`] kind: a copy of node `origin`.
pub const NODE_CLONED: u8 = 2;
/// [`MSG_GRAPH_NODE`] kind: a kernel node created by the launch whose correlation id is
/// `origin` (stream capture); the kernel's name (as CUPTI's kernel records name it) follows the
/// fixed payload.
pub const NODE_CREATED_KERNEL: u8 = 3;
/// Size of a [`MSG_GRAPH_NODE`] payload's fixed part.
pub const GRAPH_NODE_BYTES: usize = 24;

/// Appends a [`MSG_GRAPH_NODE`] message.
pub fn put_graph_node(out: &mut Vec<u8>, kind: u8, graph: u32, node: u64, origin: u64) {
    put_message(
        out,
        MSG_GRAPH_NODE,
        &[&[kind, 0, 0, 0], &graph.to_le_bytes(), &node.to_le_bytes(), &origin.to_le_bytes()],
    );
}

/// Appends a [`MSG_GRAPH_NODE`] message of kind [`NODE_CLONED`] made inside the traced call
/// `call` (0: none).
pub fn put_graph_clone(out: &mut Vec<u8>, graph: u32, node: u64, original: u64, call: u64) {
    put_message(
        out,
        MSG_GRAPH_NODE,
        &[
            &[NODE_CLONED, 0, 0, 0],
            &graph.to_le_bytes(),
            &node.to_le_bytes(),
            &original.to_le_bytes(),
            &call.to_le_bytes(),
        ],
    );
}

/// Appends a [`MSG_GRAPH_NODE`] message of kind [`NODE_CREATED_KERNEL`].
pub fn put_graph_kernel_node(out: &mut Vec<u8>, graph: u32, node: u64, call: u64, kernel: &[u8]) {
    put_message(
        out,
        MSG_GRAPH_NODE,
        &[
            &[NODE_CREATED_KERNEL, 0, 0, 0],
            &graph.to_le_bytes(),
            &node.to_le_bytes(),
            &call.to_le_bytes(),
            kernel,
        ],
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The bytes of the committed fixtures: header, kind, padding, graph, node, origin, name.
    #[test]
    fn bytes_are_those_of_the_fixtures() {
        let mut b = Vec::new();
        put_graph_node(&mut b, NODE_CLONED, 7, 0x1122, 0x33);
        assert_eq!(&b[..8], &[28, 0, 0, 0, 13, 0, 0, 0]);
        assert_eq!(&b[8..12], &[2, 0, 0, 0]);
        assert_eq!(&b[12..16], &7u32.to_le_bytes());
        assert_eq!(&b[16..24], &0x1122u64.to_le_bytes());
        assert_eq!(&b[24..32], &0x33u64.to_le_bytes());
        let mut k = Vec::new();
        put_graph_kernel_node(&mut k, 1, 2, 3, b"k");
        assert_eq!((k.len(), k[4], k[8], k[32]), (33, 13, NODE_CREATED_KERNEL, b'k'));
    }
}
