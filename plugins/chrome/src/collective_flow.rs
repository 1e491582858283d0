//! One flow through the slices of a collective on every rank: a flow event of the Trace Event
//! format's first form after each collective slice, `s` at the first slice of the collective in
//! the trace and `t` at each next one, on the slice's own track at its middle, so it binds to
//! that slice (the enclosing slice, for both event types), named `allreduce #412 on
//! communicator 1`. Which slices belong together is the toolbox's numbering
//! ([`xpuprof_toolbox::collectives`]).

use xpuprof_sdk::model::DeviceOp;
use xpuprof_toolbox::collectives::{label, Link};

use crate::json::{quoted, Push};
use crate::writer::begin;

/// How a complete event's prefix starts (`tracks.rs`); the rest names its pid, tid and `ts`.
const HEAD: &[u8] = br#"{"ph":"X""#;

/// Appends the flow event of collective slice `op` (whose complete event began with `prefix`).
pub fn write(line: &mut Vec<u8>, first: &mut bool, prefix: &[u8], op: &DeviceOp, link: Link) {
    let Some(rest) = prefix.strip_prefix(HEAD) else { return };
    begin(line, first);
    line.s(if link.first { r#"{"ph":"s""# } else { r#"{"ph":"t""# });
    line.extend_from_slice(rest);
    line.us(op.start + op.end.saturating_sub(op.start) / 2);
    line.s(r#","id":"#).n(link.flow).s(r#","cat":"collective","name":"#);
    line.s(&quoted(&label(op.collective, &link.key))).s("}");
}
