//! One collective's slices on every rank linked by arrows: after each collective slice, a
//! zero-length complete event on the same track (so it nests in the slice), named
//! `allreduce #412 on communicator 1`, carrying the collective's flow as a flow event v2 like the
//! launch arrows (`docs/formats.md`): `flow_out` at the first slice of the collective in the
//! trace, `flow_in` at each next one, so the arrows go from the first rank's slice to the
//! others'. The viewers pair a flow's ends in time order, and the trace places a collective's
//! slices in start order per stream only, so the first one's marker sits 100 ns into its slice
//! and the others' 100 ns before their ends: the ranks' slices of one collective overlap (each
//! ends after the last rank arrived), so the start comes first. A slice of its own, because the collective slice may already end its launch's arrow
//! and an event binds one flow. The ids have bit 52 set, apart from the launch arrows'. Which
//! slices belong together is the toolbox's numbering ([`xpuprof_toolbox::collectives`]).

use xpuprof_sdk::model::DeviceOp;
use xpuprof_toolbox::collectives::{label, Link};

use crate::json::{quoted, Push};
use crate::writer::begin;

/// Appends the marker of collective slice `op`, whose complete event began with `prefix` (its
/// track and `"ts":`).
pub fn write(line: &mut Vec<u8>, first: &mut bool, prefix: &[u8], op: &DeviceOp, link: Link) {
    begin(line, first);
    line.extend_from_slice(prefix);
    let inset = (op.end.saturating_sub(op.start) / 2).min(100);
    line.us(if link.first { op.start + inset } else { op.end - inset });
    line.s(r#","dur":0,"cat":"collective","name":"#).s(&quoted(&label(op.collective, &link.key)));
    line.s(r#","bind_id":"#).n(link.flow);
    line.s(if link.first { r#","flow_out":true}"# } else { r#","flow_in":true}"# });
}
