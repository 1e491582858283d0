//! # xpuprof-cupti-wire: what the CUPTI agent and the cupti host plugin agree on beyond `xpuprof-wire`
//!
//! The CUPTI agent's stream is made of `xpuprof-wire`'s common messages (raw CUPTI activity
//! records, launch sites, API names, strings, drops, clock pairs) and messages of CUDA's own,
//! defined here: the CUDA graph nodes of [`MSG_GRAPH_NODE`], the collective arguments of a
//! launch ([`MSG_COLLECTIVE_ARGS`]: NCCL's message size and communicator), and the PC sampling
//! messages of
//! [`pc_sampling`] (stall-reason tables, cubins, samples). CUPTI's options
//! (`XPUPROF_CUPTI_OPTS`) are declared here once too ([`CuptiOpts`]): the host plugin fills them
//! from its `[source.cupti]` table and the session's capture windows and writes them, the agent
//! reads them back. One crate for both ends, so they agree on every byte, key and word.

mod collective_args;
mod device;
mod graph_node;
mod options;
pub mod pc_sampling;

pub use collective_args::{
    CollectiveArgs, ARGS_BYTES, ARGS_COMMUNICATOR, ARGS_OP, COLLECTIVE_ARGS_BYTES, MSG_COLLECTIVE_ARGS,
};
pub use device::{DeviceDesc, DEVICE_BYTES, MSG_DEVICE};
pub use graph_node::{
    put_graph_clone, put_graph_kernel_node, put_graph_node, GRAPH_NODE_BYTES, MSG_GRAPH_NODE, NODE_CLONED,
    NODE_CREATED, NODE_CREATED_KERNEL,
};
pub use options::{Api, CuptiOpts, Dormancy, Range, RangeEnd};
