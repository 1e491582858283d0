//! # xpuprof-cupti-wire: what the CUPTI agent and the cupti host plugin agree on beyond `xpuprof-wire`
//!
//! The CUPTI agent's stream is made of `xpuprof-wire`'s common messages (raw CUPTI activity
//! records, launch sites, API names, strings, drops, clock pairs, and the CUDA graph nodes of
//! [`MSG_GRAPH_NODE`](xpuprof_wire::MSG_GRAPH_NODE)); it has no backend-private message. What is
//! CUPTI's own is its options (`XPUPROF_CUPTI_OPTS`), declared here once ([`CuptiOpts`]): the
//! host plugin fills them from its `[source.cupti]` table and the session's capture windows and
//! writes them, the agent reads them back. One crate for both ends, so they agree on every key
//! and word.

mod options;

pub use options::{Api, CuptiOpts, Dormancy, Range, RangeEnd};
