//! The `TrackEvent` of the packet being built, reused from event to event, and its encoding.
//!
//! Fields are written in field-number order (what prost writes for `proto::TrackEvent`):
//! `debug_annotations` (4), `legacy_event` (6: `bind_id` 8 and `flow_direction` 13, the flow
//! of a launch, see `xpuprof_toolbox::timeline::Flows`), `type` (9), `name_iid` (10), `track_uuid` (11), `name`
//! (23), `double_counter_value` (44), `callstack_iid` (56).

use crate::pb::{self, Enc};

/// Arguments an event can carry (correlation, bytes, result, grid, block).
const MAX_ARGS: usize = 5;

/// `LegacyEvent.FlowDirection.FLOW_IN`: the slice is an end of its `bind_id`'s flow.
pub const FLOW_IN: i32 = 1;
/// `LegacyEvent.FlowDirection.FLOW_OUT`: the slice starts its `bind_id`'s flow.
pub const FLOW_OUT: i32 = 2;

/// The value of a debug annotation.
#[derive(Debug, Clone, Copy)]
pub enum Value {
    /// `uint_value`.
    Uint(u64),
    /// `int_value`.
    Int(i64),
    /// `string_value_iid`: an interned annotation value.
    Str(u64),
}

/// A debug annotation: an interned name and a value.
#[derive(Debug, Clone, Copy)]
pub struct Arg {
    /// `name_iid`.
    pub name: u64,
    /// The value.
    pub value: Value,
}

/// A track event.
#[derive(Debug)]
pub struct Event {
    /// `type` (`proto::event_type`).
    pub kind: Option<i32>,
    /// `name_iid`.
    pub name_iid: Option<u64>,
    /// `track_uuid`, when not the sequence's default track.
    pub track_uuid: Option<u64>,
    /// `name`, for names that are not interned (losses).
    pub name: Option<String>,
    /// `double_counter_value`.
    pub counter: Option<f64>,
    /// The flow this slice starts or ends: `legacy_event.bind_id` and its `flow_direction`
    /// ([`FLOW_OUT`] or [`FLOW_IN`]).
    pub bind: Option<(u64, i32)>,
    /// `callstack_iid`: the interned callstack of the slice (a launch's stack).
    pub callstack: Option<u64>,
    /// `flow_ids` and `terminating_flow_ids`: a collective's flow through its slices on every
    /// rank (`flow_ids` only: trace processor chains the events naming one in time order).
    pub flows: (Option<u64>, Option<u64>),
    args: [Arg; MAX_ARGS],
    nargs: usize,
}

impl Default for Event {
    fn default() -> Self {
        Self {
            kind: None,
            name_iid: None,
            track_uuid: None,
            name: None,
            counter: None,
            bind: None,
            callstack: None,
            flows: (None, None),
            args: [Arg { name: 0, value: Value::Uint(0) }; MAX_ARGS],
            nargs: 0,
        }
    }
}

impl Event {
    /// Adds an argument (at most five per event; more are not written).
    pub fn arg(&mut self, name: u64, value: Value) {
        if self.nargs < MAX_ARGS {
            self.args[self.nargs] = Arg { name, value };
            self.nargs += 1;
        }
    }

    /// The arguments added so far.
    pub fn args(&self) -> &[Arg] {
        &self.args[..self.nargs]
    }

    /// Empties the event for the next one.
    pub fn clear(&mut self) {
        self.kind = None;
        self.name_iid = None;
        self.track_uuid = None;
        self.name = None;
        self.counter = None;
        self.bind = None;
        self.callstack = None;
        self.flows = (None, None);
        self.nargs = 0;
    }

    /// The most bytes [`Event::write`] can append.
    #[inline(always)]
    pub fn max_len(&self) -> usize {
        // Per argument: key and length (2), name (1 + 10), value (2 + 10); type, name iid and
        // track (11 each), counter (9), legacy event (2 + 11 + 2), callstack (12), the name
        // (2 + 10 + text).
        const FIXED: usize = MAX_ARGS * 25 + 3 * 11 + 9 + 15 + 12 + 12 + 20;
        FIXED + self.name.as_ref().map_or(0, String::len)
    }

    /// Appends the event's fields (the body of `TracePacket.track_event`).
    #[inline(always)]
    pub fn write(&self, b: &mut Enc<'_>) {
        for a in self.args() {
            // Lengths known up front: key + name, then the value's key (two bytes for field 17)
            // and varint.
            let (field, key_len, v) = match a.value {
                Value::Uint(v) => (3, 1, v),
                Value::Int(v) => (4, 1, v as u64),
                Value::Str(iid) => (17, 2, iid),
            };
            let name_len = if a.name < 0x80 { 2 } else { 1 + pb::varint_len(a.name) };
            b.message_head(4, name_len + key_len + pb::varint_len(v));
            b.uint(1, a.name);
            b.uint(field, v);
        }
        if let Some((id, direction)) = self.bind {
            b.message_head(6, 1 + pb::varint_len(id) + 2);
            b.uint(8, id);
            b.int(13, i64::from(direction));
        }
        if let Some(k) = self.kind {
            b.int(9, i64::from(k));
        }
        if let Some(n) = self.name_iid {
            b.uint(10, n);
        }
        if let Some(t) = self.track_uuid {
            b.uint(11, t);
        }
        if let Some(n) = &self.name {
            b.bytes(23, n.as_bytes());
        }
        if let Some(v) = self.counter {
            b.double(44, v);
        }
        if let Some(cs) = self.callstack {
            b.uint(56, cs);
        }
        if let Some(id) = self.flows.0 {
            b.fixed64(47, id);
        }
        if let Some(id) = self.flows.1 {
            b.fixed64(48, id);
        }
    }
}

/// Encodes `e` alone, as the body of a `TrackEvent` (tests).
#[cfg(test)]
pub fn encode(e: &Event) -> Vec<u8> {
    let mut v = Vec::new();
    Enc::reserved(&mut v, e.max_len(), |b| e.write(b));
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::{self, DebugAnnotation, TrackEvent};
    use prost::Message;

    #[test]
    fn writes_the_bytes_prost_writes() {
        let mut e = Event::default();
        e.arg(1, Value::Uint(300));
        e.arg(3, Value::Int(-1));
        e.arg(4, Value::Str(7));
        (e.kind, e.name_iid, e.track_uuid) = (Some(proto::event_type::SLICE_BEGIN), Some(9), Some(1 << 62));
        (e.name, e.counter, e.bind, e.callstack) =
            (Some("lost 3".into()), Some(2.5), Some((5, FLOW_OUT)), Some(300));
        let ours = encode(&e);
        let annotation = |name, uint_value, int_value, string_value_iid| DebugAnnotation {
            name_iid: Some(name),
            uint_value,
            int_value,
            string_value: None,
            string_value_iid,
        };
        let theirs = TrackEvent {
            r#type: e.kind,
            track_uuid: e.track_uuid,
            name_iid: e.name_iid,
            name: e.name.clone(),
            double_counter_value: e.counter,
            flow_ids: vec![],
            terminating_flow_ids: vec![],
            legacy_event: Some(proto::LegacyEvent { bind_id: Some(5), flow_direction: Some(FLOW_OUT) }),
            callstack_iid: Some(300),
            debug_annotations: vec![
                annotation(1, Some(300), None, None),
                annotation(3, None, Some(-1), None),
                annotation(4, None, None, Some(7)),
            ],
        };
        assert_eq!(ours, theirs.encode_to_vec());
        e.clear();
        assert!(encode(&e).is_empty());
    }
}
