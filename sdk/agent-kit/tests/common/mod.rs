//! What the agent kit's integration tests share: reading back what a launch-site registry drains.
// Each test crate uses the part it needs.
#![allow(dead_code)]

use xpuprof_agent_kit::launches::Registry;
use xpuprof_agent_kit::wire::launches::{parse, Entry, Launch};
use xpuprof_agent_kit::{timestamps, wire};

/// Every entry (stack definitions and launches) the registry's drain sends, in order.
pub fn drained_entries(r: &Registry) -> Vec<Entry> {
    let mut out = Vec::new();
    r.drain(&mut out, &timestamps::Clock::new(false));
    let (msgs, _) = wire::split_messages(&out);
    msgs.iter()
        .filter(|m| m.ty == wire::MSG_LAUNCHES)
        .flat_map(|m| parse(m.payload, wire::PROTOCOL).1)
        .collect()
}

/// The launch entries the registry's drain sends, in order.
pub fn drained_launches(r: &Registry) -> Vec<Launch> {
    drained_entries(r)
        .into_iter()
        .filter_map(|e| match e {
            Entry::Launch(l) => Some(l),
            Entry::Stack { .. } => None,
        })
        .collect()
}
