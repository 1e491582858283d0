//! The `InternedData` of the packet being built, encoded as entries are added.
//!
//! One buffer per field of `InternedData`, kept in field-number order, so that the packet holds
//! the entries of each table in the order they were added (as a prost message would write them)
//! while an entry of one table (a callstack) can be written between entries of others (its
//! frames, their function names and mappings). The buffers are reused from packet to packet.

use crate::pb::{self, Enc};

/// `InternedData.event_names` (`EventName`).
pub const EVENT_NAMES: usize = 0;
/// `InternedData.debug_annotation_names` (`DebugAnnotationName`).
pub const ANNOTATION_NAMES: usize = 1;
/// `InternedData.function_names` (`InternedString`).
pub const FUNCTION_NAMES: usize = 2;
/// `InternedData.frames`.
const FRAMES: usize = 3;
/// `InternedData.callstacks`.
const CALLSTACKS: usize = 4;
/// `InternedData.build_ids` (`InternedString`).
pub const BUILD_IDS: usize = 5;
/// `InternedData.mapping_paths` (`InternedString`).
pub const MAPPING_PATHS: usize = 6;
/// `InternedData.mappings`.
const MAPPINGS: usize = 7;
/// `InternedData.debug_annotation_string_values` (`InternedString`).
pub const ANNOTATION_VALUES: usize = 8;

/// Field numbers of the tables above, in the same order (ascending).
const FIELDS: [u32; 9] = [2, 3, 5, 6, 7, 16, 17, 19, 29];

/// `TracePacket.interned_data`.
const INTERNED_DATA: u32 = 12;

/// The interned data of one packet, encoded.
#[derive(Debug, Default)]
pub struct Interned {
    tables: [Vec<u8>; 9],
    /// Something was added since the last clear (most packets have nothing interned).
    any: bool,
}

impl Interned {
    /// Empties every table, keeping the buffers.
    #[inline]
    pub fn clear(&mut self) {
        if self.any {
            self.tables.iter_mut().for_each(Vec::clear);
            self.any = false;
        }
    }

    /// Adds an entry `{ iid = 1, name/str = 2 }` to `table` (event and annotation names, and
    /// every `InternedString` table: the layouts are the same).
    pub fn name(&mut self, table: usize, iid: u64, text: &[u8]) {
        self.any = true;
        let b = &mut self.tables[table];
        pb::message_head(
            b,
            FIELDS[table],
            1 + pb::varint_len(iid) + 1 + pb::varint_len(text.len() as u64) + text.len(),
        );
        pb::uint(b, 1, iid);
        pb::bytes(b, 2, text);
    }

    /// Adds `Frame { iid, function_name_id, mapping_id, rel_pc }`.
    pub fn frame(&mut self, iid: u64, function: u64, mapping: u64, rel_pc: u64) {
        self.any = true;
        let b = &mut self.tables[FRAMES];
        let at = pb::begin(b, FIELDS[FRAMES]);
        pb::uint(b, 1, iid);
        pb::uint(b, 2, function);
        pb::uint(b, 3, mapping);
        pb::uint(b, 4, rel_pc);
        pb::end(b, at);
    }

    /// Starts `Callstack { iid, frame_ids... }`; add its frames with [`Interned::callstack_frame`]
    /// and end it with [`Interned::end_callstack`].
    pub fn begin_callstack(&mut self, iid: u64) -> usize {
        self.any = true;
        let b = &mut self.tables[CALLSTACKS];
        let at = pb::begin(b, FIELDS[CALLSTACKS]);
        pb::uint(b, 1, iid);
        at
    }

    /// Adds frame `iid` (root first) to the callstack begun at `at`.
    pub fn callstack_frame(&mut self, iid: u64) {
        pb::uint(&mut self.tables[CALLSTACKS], 2, iid);
    }

    /// Ends the callstack begun at `at`.
    pub fn end_callstack(&mut self, at: usize) {
        pb::end(&mut self.tables[CALLSTACKS], at);
    }

    /// Adds `Mapping { iid, build_id, path_string_ids... }`.
    pub fn mapping(&mut self, iid: u64, build_id: Option<u64>, paths: &[u64]) {
        self.any = true;
        let b = &mut self.tables[MAPPINGS];
        let at = pb::begin(b, FIELDS[MAPPINGS]);
        pb::uint(b, 1, iid);
        if let Some(id) = build_id {
            pb::uint(b, 2, id);
        }
        for &p in paths {
            pb::uint(b, 7, p);
        }
        pb::end(b, at);
    }

    /// The most bytes [`Interned::write`] can append.
    #[inline(always)]
    pub fn max_len(&self) -> usize {
        if !self.any {
            return 0;
        }
        11 + self.tables.iter().map(Vec::len).sum::<usize>()
    }

    /// Appends `interned_data` to the packet in `out`, if anything was added.
    #[inline(always)]
    pub fn write(&self, out: &mut Enc<'_>) {
        if !self.any {
            return;
        }
        self.write_tables(out);
    }

    #[inline(always)]
    fn write_tables(&self, out: &mut Enc<'_>) {
        let len: usize = self.tables.iter().map(Vec::len).sum();
        if len == 0 {
            return;
        }
        out.message_head(INTERNED_DATA, len);
        for t in &self.tables {
            out.slice(t);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto;
    use prost::Message;

    #[test]
    fn decodes_as_the_prost_message_with_entries_in_order() {
        let mut i = Interned::default();
        let at = i.begin_callstack(9);
        i.name(FUNCTION_NAMES, 1, b"main");
        i.mapping(4, Some(4), &[1, 2]);
        i.frame(1, 1, 4, 0x40);
        i.callstack_frame(1);
        i.end_callstack(at);
        i.name(EVENT_NAMES, 3, b"kernel");
        i.name(ANNOTATION_VALUES, 2, b"1x1x1");
        let mut out = Vec::new();
        Enc::reserved(&mut out, i.max_len(), |e| i.write(e));
        let p = proto::TracePacket::decode(out.as_slice()).unwrap();
        let d = p.interned_data.unwrap();
        assert_eq!(d.callstacks, vec![proto::Callstack { iid: Some(9), frame_ids: vec![1] }]);
        assert_eq!(d.function_names[0].str.as_deref(), Some(&b"main"[..]));
        assert_eq!(d.mappings[0].path_string_ids, vec![1, 2]);
        assert_eq!(d.frames[0].rel_pc, Some(0x40));
        assert_eq!(d.event_names[0].name.as_deref(), Some("kernel"));
        assert_eq!(d.debug_annotation_string_values[0].iid, Some(2));
        let mut again = Vec::new();
        proto::TracePacket { interned_data: Some(d), ..Default::default() }.encode(&mut again).unwrap();
        assert_eq!(out, again, "the bytes prost writes");
        i.clear();
        let mut none = Vec::new();
        Enc::reserved(&mut none, i.max_len(), |e| i.write(e));
        assert!(none.is_empty(), "nothing once cleared");
    }
}
