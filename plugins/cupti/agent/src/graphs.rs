//! CUDA graph nodes: which API call created each node, and which node each copy came from, so
//! the host can show a replayed kernel under the stack where its node was captured or added.
//!
//! CUPTI calls the resource callback `CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED` on the thread
//! that creates a node, inside the creating call: a launch on a capturing stream
//! (`cudaStreamBeginCapture` … `cudaLaunchKernel`) or an explicit `cudaGraphAdd*Node` /
//! `cuGraphAdd*Node`. Both are launch-class calls here (see `start::is_launch_api`), so their
//! API-entry callback already recorded a launch site with the calling stack under the call's
//! correlation id; this module only remembers that correlation id per thread and reports
//! `node → correlation id`. `CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED` reports `copy → original`:
//! instantiation clones every node into the executable graph (kernel records carry the copy's
//! id), and so do `cudaGraphClone` and child-graph nodes. The host follows the copies back to
//! the created node ([`xpuprof_agent_kit::wire::MSG_GRAPH_NODE`]).
//!
//! Graph building is not a hot path (a node is built once, replayed many times): each node is
//! one small message pushed to the channel during the call.

use std::cell::Cell;
use std::os::raw::c_void;

use xpuprof_agent_kit::channel::Chunk;
use xpuprof_agent_kit::wire;

use crate::sys::ffi;
use crate::Agent;

/// `CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED`.
pub const CBID_NODE_CREATED: u32 = ffi::CUpti_CallbackIdResource::CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED;
/// `CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED`.
pub const CBID_NODE_CLONED: u32 = ffi::CUpti_CallbackIdResource::CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED;
/// The resource callback domain.
pub const DOMAIN_RESOURCE: u32 = ffi::CUpti_CallbackDomain::CUPTI_CB_DOMAIN_RESOURCE;

thread_local! {
    /// (launch-class calls active on this thread, correlation id of the outermost one).
    static CURRENT: Cell<(u32, u32)> = const { Cell::new((0, 0)) };
}

/// API entry of a launch-class call with correlation id `correlation`.
pub fn enter(correlation: u32) {
    CURRENT.with(|c| {
        let (depth, outer) = c.get();
        c.set((depth + 1, if depth == 0 { correlation } else { outer }));
    });
}

/// API exit of a launch-class call.
pub fn exit() {
    CURRENT.with(|c| {
        let (depth, outer) = c.get();
        c.set((depth.saturating_sub(1), if depth <= 1 { 0 } else { outer }));
    });
}

/// The correlation id of the launch-class call active on this thread, or 0.
fn current() -> u32 {
    CURRENT.with(|c| c.get().1)
}

/// The resource-domain callback: reports graph nodes created and cloned.
///
/// # Safety
/// `data` must be the `CUpti_ResourceData` CUPTI passes for resource callback `cbid`.
pub unsafe fn on_resource(a: &Agent, cbid: u32, data: *const c_void) {
    if cbid != CBID_NODE_CREATED && cbid != CBID_NODE_CLONED {
        return;
    }
    // SAFETY: for resource callbacks CUPTI passes a valid CUpti_ResourceData for the call.
    let r = unsafe { &*(data as *const ffi::CUpti_ResourceData) };
    if r.resourceDescriptor.is_null() {
        return;
    }
    // SAFETY: for the graph-node callbacks resourceDescriptor points to a CUpti_GraphData
    // (cupti_callbacks.h), valid for the callback's duration.
    let g = unsafe { &*(r.resourceDescriptor as *const ffi::CUpti_GraphData) };
    let Ok(node) = a.lib.graph_node_id(g.node) else { return };
    let graph = a.lib.graph_id(g.graph).unwrap_or(0);
    let (kind, origin) = if cbid == CBID_NODE_CREATED {
        (wire::NODE_CREATED, u64::from(current()))
    } else {
        match a.lib.graph_node_id(g.originalNode) {
            Ok(original) => (wire::NODE_CLONED, original),
            Err(_) => return,
        }
    };
    let mut m = Vec::with_capacity(wire::HEADER_BYTES + wire::GRAPH_NODE_BYTES);
    wire::put_graph_node(&mut m, kind, graph, node, origin);
    a.channel.push(Chunk::Bytes(m));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_outermost_call_is_current_until_it_returns() {
        assert_eq!(current(), 0);
        enter(7);
        enter(8);
        assert_eq!(current(), 7, "a driver call inside a runtime call keeps the runtime call's id");
        exit();
        assert_eq!(current(), 7);
        exit();
        assert_eq!(current(), 0);
        exit();
        assert_eq!(current(), 0, "an unbalanced exit stays at zero");
    }
}
