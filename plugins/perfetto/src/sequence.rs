//! Packet sequences and their incremental state.
//!
//! Perfetto scopes interned data, packet defaults and sequence-local clocks to a packet
//! sequence (`trusted_packet_sequence_id`). The sink gives every timeline its own sequence (a
//! thread's API calls, a stream lane's device work, ...) so that:
//! - `TrackEventDefaults.track_uuid` names the track once instead of in every event;
//! - timestamps are deltas on an incremental clock (`CLOCK_INCREMENTAL`, 64): on one timeline
//!   they grow, so a delta takes two or three bytes instead of an absolute eight. An event older
//!   than its sequence's last one is written with an absolute `CLOCK_MONOTONIC` timestamp and
//!   leaves the delta chain alone.
//!
//! A sequence's incremental state (interned data, defaults, clock) starts with a packet flagged
//! `SEQ_INCREMENTAL_STATE_CLEARED` carrying the defaults and a clock snapshot, and every packet
//! after it is flagged `SEQ_NEEDS_INCREMENTAL_STATE`. The writer clears every sequence's state
//! at intervals ([`Sequences::reset_all`]): after a clear, names and stacks are interned again
//! before their next use, exactly as a Perfetto producer does after `incremental_state_cleared`.

use xpuprof_sdk::hash::{IdMap, IdSet};

use crate::proto::*;

/// What an interned id refers to; ids of different kinds may be equal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Kind {
    /// `InternedData.event_names`.
    EventName = 1,
    /// `InternedData.debug_annotation_names`.
    AnnotationName,
    /// `InternedData.debug_annotation_string_values`.
    AnnotationValue,
    /// `InternedData.function_names`.
    FunctionName,
    /// `InternedData.frames`.
    Frame,
    /// `InternedData.callstacks`.
    Callstack,
    /// `InternedData.mappings`.
    Mapping,
    /// `InternedData.build_ids`.
    BuildId,
    /// `InternedData.mapping_paths`.
    MappingPath,
}

/// One packet sequence.
#[derive(Debug)]
pub struct Sequence {
    /// `trusted_packet_sequence_id`.
    pub id: u32,
    /// The default track of its events, if it has one.
    track: Option<u64>,
    /// Last timestamp on the incremental clock.
    last: u64,
    /// The reset generation its incremental state belongs to (0 = never started).
    generation: u64,
    /// Interned ids emitted since the last clear.
    emitted: Emitted,
}

impl Sequence {
    /// Clears the sequence's incremental state for reset generation `generation`, before an
    /// event at `ts`; `start` receives the packet that restarts it.
    #[cold]
    #[inline(never)]
    fn restart(&mut self, generation: u64, ts: u64, start: &mut Option<Box<TracePacket>>) {
        // Trace processor rejects a sequence's clock snapshot that goes back in time (and then
        // stops converting its clock): restart no earlier than the last one. An older event is
        // then written with an absolute timestamp.
        let base = ts.max(self.last);
        *start = Some(Box::new(restart(self, base)));
        self.generation = generation;
        self.last = base;
        self.emitted.clear();
    }

    /// Whether `iid` of `kind` still has to be emitted on this sequence; marks it emitted.
    #[inline(always)]
    pub fn needs(&mut self, kind: Kind, iid: u64) -> bool {
        self.emitted.insert(kind, iid)
    }
}

/// Iids below this are kept in bit sets (all of them but a frame without a module's mapping).
const FLAT: u64 = 1 << 24;

/// The interned ids a sequence has, by kind: a bit set per kind indexed by iid (iids are small
/// numbers counted from 1, or the host's stack and module ids), a hash set beyond [`FLAT`].
/// Every event asks whether its names are there: a bit test instead of a hash lookup.
#[derive(Debug, Default)]
struct Emitted {
    bits: [Vec<u64>; 9],
    large: IdSet<u64>,
}

impl Emitted {
    #[inline(always)]
    fn insert(&mut self, kind: Kind, iid: u64) -> bool {
        let bits = &mut self.bits[kind as usize - 1];
        let (word, bit) = ((iid >> 6) as usize, 1u64 << (iid & 63));
        match bits.get_mut(word) {
            Some(w) if iid < FLAT => {
                let new = *w & bit == 0;
                *w |= bit;
                new
            }
            _ => self.insert_slow(kind, iid),
        }
    }

    /// [`Emitted::insert`] of an iid beyond the bit set's words (or beyond [`FLAT`]).
    #[cold]
    #[inline(never)]
    fn insert_slow(&mut self, kind: Kind, iid: u64) -> bool {
        if iid >= FLAT {
            return self.large.insert(((kind as u64) << 56) | iid);
        }
        let bits = &mut self.bits[kind as usize - 1];
        let word = (iid >> 6) as usize;
        bits.resize((word + 1).next_power_of_two(), 0);
        bits[word] |= 1 << (iid & 63);
        true
    }

    fn clear(&mut self) {
        self.bits.iter_mut().for_each(|b| b.fill(0));
        self.large.clear();
    }
}

/// Where an event packet goes: its sequence and its timestamp there.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stamp {
    /// `trusted_packet_sequence_id`.
    pub sequence: u32,
    /// `timestamp`: a delta on the sequence's incremental clock, or absolute when `clock` is set.
    pub timestamp: u64,
    /// `timestamp_clock_id`, set when `timestamp` is absolute.
    pub clock: Option<u32>,
}

/// All sequences of the trace, by key.
#[derive(Debug)]
pub struct Sequences {
    list: Vec<Sequence>,
    /// Index in `list` of each key.
    by_key: IdMap<u64, usize>,
    /// Keys stamped lately and their indices (a direct-mapped cache): a slice's end, the names
    /// emitted between [`Sequences::stamp`] and the packet's end, and the next launch's
    /// timelines (its thread, its launch instants, its stream) find their sequence without a
    /// hash lookup.
    recent: [(u64, usize); RECENT],
    next_id: u32,
    generation: u64,
}

impl Default for Sequences {
    fn default() -> Self {
        Self {
            list: Vec::new(),
            by_key: IdMap::default(),
            recent: [(NO_KEY, 0); RECENT],
            next_id: 2,
            generation: 1,
        }
    }
}

/// Keys remembered by [`Sequences::index`].
const RECENT: usize = 8;
/// No key: no sequence has it (keys are track uuids, whose top bits name a kind).
const NO_KEY: u64 = u64::MAX;

/// The sequence of track descriptors and other packets that need no incremental state.
pub const METADATA_SEQUENCE: u32 = 1;

impl Sequences {
    /// Clears the incremental state of every sequence: each re-emits its defaults, clock and
    /// interned data before its next event.
    pub fn reset_all(&mut self) {
        self.generation += 1;
    }

    /// Number of sequences.
    pub fn len(&self) -> usize {
        self.list.len()
    }

    /// The sequence `key`, which [`Sequences::stamp`] created.
    #[inline]
    pub fn get_mut(&mut self, key: u64) -> &mut Sequence {
        let i = self.index(key).expect("sequence stamped before use");
        &mut self.list[i]
    }

    #[inline]
    fn index(&mut self, key: u64) -> Option<usize> {
        // Direct-mapped: a thread's key, its launch key (bit 59) and a stream lane's key (kind
        // in the top bits) fall in different slots.
        let slot = ((key >> 56) ^ (key >> 3) ^ key) as usize % RECENT;
        let (k, i) = self.recent[slot];
        if k == key {
            return Some(i);
        }
        let i = *self.by_key.get(&key)?;
        self.recent[slot] = (key, i);
        Some(i)
    }

    /// Prepares the sequence `key` (default track `track`) for an event at `ts` and returns
    /// where the event goes (its packets are flagged `SEQ_NEEDS_INCREMENTAL_STATE`). When the
    /// sequence starts or its state was cleared, `start` receives the packet that (re)starts it,
    /// to be written first.
    #[inline]
    pub fn stamp(
        &mut self,
        key: u64,
        track: Option<u64>,
        ts: u64,
        stamp: &mut Stamp,
        start: &mut Option<Box<TracePacket>>,
    ) -> &mut Sequence {
        let generation = self.generation;
        let i = match self.index(key) {
            Some(i) => i,
            None => {
                let id = self.next_id;
                self.next_id += 1;
                self.list.push(Sequence { id, track, last: 0, generation: 0, emitted: Emitted::default() });
                self.by_key.insert(key, self.list.len() - 1);
                self.list.len() - 1
            }
        };
        let seq = &mut self.list[i];
        if seq.generation != generation {
            seq.restart(generation, ts, start);
        }
        stamp.sequence = seq.id;
        if ts >= seq.last {
            (stamp.timestamp, stamp.clock) = (ts - seq.last, None);
            seq.last = ts;
        } else {
            (stamp.timestamp, stamp.clock) = (ts, Some(CLOCK_MONOTONIC));
        }
        seq
    }
}

/// The packet that starts (or restarts) `seq`'s incremental state with its clock at `ts`.
fn restart(seq: &Sequence, ts: u64) -> TracePacket {
    let clock = |clock_id, is_incremental: bool| Clock {
        clock_id: Some(clock_id),
        timestamp: Some(ts),
        is_incremental: is_incremental.then_some(true),
    };
    TracePacket {
        trusted_packet_sequence_id: Some(seq.id),
        sequence_flags: Some(SEQ_INCREMENTAL_STATE_CLEARED),
        first_packet_on_sequence: (seq.generation == 0).then_some(true),
        trace_packet_defaults: Some(Box::new(TracePacketDefaults {
            timestamp_clock_id: Some(CLOCK_INCREMENTAL),
            track_event_defaults: seq.track.map(|t| TrackEventDefaults { track_uuid: Some(t) }),
        })),
        clock_snapshot: Some(Box::new(ClockSnapshot {
            clocks: vec![clock(CLOCK_MONOTONIC, false), clock(CLOCK_INCREMENTAL, true)],
            primary_trace_clock: Some(CLOCK_MONOTONIC as i32),
        })),
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deltas_on_one_sequence_and_absolute_times_when_going_back() {
        let mut s = Sequences::default();
        let (mut p, mut start) = (Stamp::default(), None);
        s.stamp(5, Some(9), 1000, &mut p, &mut start);
        let first = start.take().expect("a new sequence starts with a clear");
        assert_eq!(first.sequence_flags, Some(SEQ_INCREMENTAL_STATE_CLEARED));
        assert_eq!(first.first_packet_on_sequence, Some(true));
        assert_eq!(p.timestamp, 0);
        s.stamp(5, Some(9), 1250, &mut p, &mut start);
        assert!(start.is_none());
        assert_eq!((p.timestamp, p.clock), (250, None));
        s.stamp(5, Some(9), 1100, &mut p, &mut start);
        assert_eq!((p.timestamp, p.clock), (1100, Some(CLOCK_MONOTONIC)));
        s.stamp(5, Some(9), 1300, &mut p, &mut start);
        assert_eq!(p.timestamp, 50, "the going-back event left the delta chain alone");
    }

    #[test]
    fn reset_restarts_every_sequence_and_forgets_what_was_interned() {
        let mut s = Sequences::default();
        let (mut p, mut start) = (Stamp::default(), None);
        let seq = s.stamp(1, None, 10, &mut p, &mut start);
        assert!(seq.needs(Kind::EventName, 4));
        assert!(!seq.needs(Kind::EventName, 4));
        assert!(seq.needs(Kind::Frame, 4), "kinds are separate");
        s.reset_all();
        start = None;
        let seq = s.stamp(1, None, 20, &mut p, &mut start);
        let again = start.expect("restarted");
        assert_eq!(again.first_packet_on_sequence, None);
        assert!(seq.needs(Kind::EventName, 4));
        assert_eq!(p.timestamp, 0, "deltas start from the new snapshot");
    }

    #[test]
    fn a_restart_never_moves_the_clock_back() {
        let mut s = Sequences::default();
        let (mut p, mut start) = (Stamp::default(), None);
        s.stamp(1, None, 500, &mut p, &mut start);
        s.reset_all();
        start = None;
        s.stamp(1, None, 300, &mut p, &mut start);
        let snapshot = start.unwrap().clock_snapshot.unwrap();
        assert!(snapshot.clocks.iter().all(|c| c.timestamp == Some(500)), "{snapshot:?}");
        assert_eq!((p.timestamp, p.clock), (300, Some(CLOCK_MONOTONIC)));
    }
}
