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
//! id), and so do `cudaGraphClone` and child-graph nodes; a copy made inside a traced call (a
//! child-graph node's embedded copies, made in `cuGraphAddChildGraphNode`) is reported with that
//! call. The host follows the copies back to the created node
//! ([`xpuprof_cupti_wire::MSG_GRAPH_NODE`]).
//!
//! A kernel node created by a launch (stream capture) is reported with the kernel's name
//! (`CUpti_CallbackData::symbolName` of the launch): instantiation flattens a child graph's
//! nodes into the executable graph, and CUPTI reports no callback for those flattened nodes, so
//! the host can only find their creating call by the kernel they run
//! ([`cuda_wire::NODE_CREATED_KERNEL`]).
//!
//! Graph building is not a hot path (a node is built once, replayed many times): each node is
//! one small message pushed to the channel during the call.

use std::cell::Cell;
use std::ffi::CStr;
use std::os::raw::{c_char, c_void};

use xpuprof_agent_kit::channel::Chunk;
use xpuprof_agent_kit::wire;
use xpuprof_cupti_wire as cuda_wire;

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
    /// The kernel name CUPTI gave the active launch (null otherwise) and the nesting depth of
    /// the call that gave it, cleared when that call returns.
    static SYMBOL: Cell<(*const c_char, u32)> = const { Cell::new((std::ptr::null(), 0)) };
}

/// API entry of a launch-class call with correlation id `correlation`; `symbol` is the
/// callback data's `symbolName` (the kernel's name for launches, else null or garbage-free
/// null-terminated text CUPTI keeps for the call).
pub fn enter(correlation: u32, symbol: *const c_char) {
    CURRENT.with(|c| {
        let (depth, outer) = c.get();
        // The runtime call's name, else that of the driver launch inside it.
        if depth == 0 || SYMBOL.with(Cell::get).0.is_null() {
            SYMBOL.with(|s| s.set((symbol, depth + 1)));
        }
        c.set((depth + 1, if depth == 0 { correlation } else { outer }));
    });
}

/// API exit of a launch-class call.
pub fn exit() {
    CURRENT.with(|c| {
        let (depth, outer) = c.get();
        if SYMBOL.with(Cell::get).1 >= depth {
            SYMBOL.with(|s| s.set((std::ptr::null(), 0)));
        }
        c.set((depth.saturating_sub(1), if depth <= 1 { 0 } else { outer }));
    });
}

/// The kernel name of the launch active on this thread, if any.
fn current_symbol() -> Option<&'static [u8]> {
    let p = SYMBOL.with(Cell::get).0;
    // SAFETY: CUPTI's symbolName is a NUL-terminated string alive for the duration of the
    // call whose entry set it (it is cleared at that call's exit); it is read only inside it.
    (!p.is_null()).then(|| unsafe { CStr::from_ptr(p) }.to_bytes()).filter(|b| !b.is_empty())
}

/// The correlation id of the launch-class call active on this thread, or 0.
pub(crate) fn current() -> u32 {
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
    let mut m = Vec::with_capacity(wire::HEADER_BYTES + cuda_wire::GRAPH_NODE_BYTES);
    if cbid == CBID_NODE_CREATED {
        let call = u64::from(current());
        let kernel = (g.nodeType == ffi::CUgraphNodeType_enum::CU_GRAPH_NODE_TYPE_KERNEL && call != 0)
            .then(current_symbol)
            .flatten();
        match kernel {
            Some(name) => cuda_wire::put_graph_kernel_node(&mut m, graph, node, call, name),
            None => cuda_wire::put_graph_node(&mut m, cuda_wire::NODE_CREATED, graph, node, call),
        }
    } else {
        match a.lib.graph_node_id(g.originalNode) {
            Ok(original) => cuda_wire::put_graph_clone(&mut m, graph, node, original, u64::from(current())),
            Err(_) => return,
        }
    }
    a.core.channel.push(Chunk::Bytes(m));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_outermost_call_is_current_until_it_returns() {
        assert_eq!(current(), 0);
        enter(7, std::ptr::null());
        enter(8, c"k".as_ptr());
        assert_eq!(
            current_symbol(),
            Some(&b"k"[..]),
            "the driver launch's kernel when the runtime call has none"
        );
        enter(9, c"other".as_ptr());
        assert_eq!(current_symbol(), Some(&b"k"[..]));
        exit();
        exit();
        assert_eq!(current_symbol(), None, "gone with the call that gave it");
        enter(10, std::ptr::null());
        assert_eq!(current(), 7, "a driver call inside a runtime call keeps the runtime call's id");
        exit();
        assert_eq!(current(), 7);
        exit();
        assert_eq!(current(), 0);
        assert_eq!(current_symbol(), None);
        exit();
        assert_eq!(current(), 0, "an unbalanced exit stays at zero");
    }
}
