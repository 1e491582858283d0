//! The k-way merge of the location streams by global sequence number, skipping damage: a
//! chunk that fails its checksum is left out whole, a malformed record alone when its length
//! frames it (else the rest of its chunk), and the sequence numbers never delivered are counted.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::io::{Seek, SeekFrom};

use xpuprof_sdk::codec::Cursor;
use xpuprof_sdk::hash::IdMap;
use xpuprof_sdk::model::Record;

use crate::error::ArchiveError;
use crate::events::LocState;
use crate::format::CHUNK_HEADER;
use crate::reader::{read_full, Damage, Indexed, Reader, ReplayStats};

/// Replay output is handed over in batches of this many records: 128 KiB of `Record`s, so
/// that every sink thread reads a batch while it is still in the core's cache (batches of 8,192
/// records, 2 MiB, left the cache between the first sink and the second: a replay to perfetto +
/// pprof took 9% more CPU time, to folded + chrome 10% more, and twice the peak memory).
const BATCH_RECORDS: usize = 512;

/// One location's read position.
#[derive(Debug)]
struct Stream {
    chunks: VecDeque<Indexed>,
    payload: Vec<u8>,
    pos: usize,
    left: u32,
    state: LocState,
    chunk_offset: u64,
}

/// The merge.
pub(crate) struct Merge<'a> {
    reader: &'a mut Reader,
    streams: Vec<Stream>,
    heap: BinaryHeap<Reverse<(u64, usize)>>,
    /// The sequence number expected next.
    next_seq: u64,
    /// The batch being filled holds a definition.
    definitions: bool,
    delivered: u64,
    skipped: u64,
    damage: Damage,
}

impl<'a> Merge<'a> {
    pub fn new(reader: &'a mut Reader) -> Self {
        let mut by_loc: IdMap<u32, VecDeque<Indexed>> = IdMap::default();
        for c in reader.chunks() {
            by_loc.entry(c.header.location).or_default().push_back(*c);
        }
        let version = reader.version();
        let mut locs: Vec<_> = by_loc.into_iter().collect();
        locs.sort_by_key(|(l, _)| *l);
        let streams = locs
            .into_iter()
            .map(|(_, chunks)| Stream {
                chunks,
                payload: Vec::new(),
                pos: 0,
                left: 0,
                state: LocState::new(0, version),
                chunk_offset: 0,
            })
            .collect();
        let mut damage = Damage::default();
        if let Some((offset, why)) = &reader.scan_damage().first {
            damage.first = Some((*offset, why.clone()));
            damage.places = reader.scan_damage().places;
        }
        Self {
            reader,
            streams,
            heap: BinaryHeap::new(),
            next_seq: 0,
            definitions: false,
            delivered: 0,
            skipped: 0,
            damage,
        }
    }

    pub fn into_stats(self) -> ReplayStats {
        let path = self.reader.path().to_owned();
        ReplayStats {
            records: self.delivered,
            skipped: self.skipped,
            damaged_places: self.damage.places,
            corruption: self.damage.first.map(|(offset, why)| ArchiveError::corrupt(path, offset, why)),
        }
    }

    /// Makes sure stream `i` has a record to read; false when it has no more.
    #[inline(always)]
    fn fill(&mut self, i: usize) -> bool {
        self.streams[i].left != 0 || self.load_next(i)
    }

    /// [`Merge::fill`] when stream `i`'s chunk is used up: loads its next intact chunk.
    #[inline(never)]
    fn load_next(&mut self, i: usize) -> bool {
        while self.streams[i].left == 0 {
            let Some(c) = self.streams[i].chunks.pop_front() else { return false };
            if let Err(why) = self.load(i, c) {
                self.damage.note(c.offset, why);
                self.streams[i].left = 0;
            }
        }
        true
    }

    fn load(&mut self, i: usize, c: Indexed) -> Result<(), &'static str> {
        let file = self.reader.file();
        let s = &mut self.streams[i];
        let mut raw = [0u8; CHUNK_HEADER];
        file.seek(SeekFrom::Start(c.offset)).map_err(|_| "failed to seek to the chunk")?;
        if read_full(file, &mut raw).map_err(|_| "failed to read the chunk header")? < CHUNK_HEADER {
            return Err("truncated chunk header");
        }
        s.payload.resize(c.header.payload_len as usize, 0);
        if read_full(file, &mut s.payload).map_err(|_| "failed to read the chunk")? < s.payload.len() {
            return Err("truncated chunk");
        }
        if !c.header.check(&raw, &s.payload) {
            return Err("chunk checksum mismatch");
        }
        s.pos = 0;
        s.left = c.header.records;
        s.state.reset(c.header.first_seq);
        s.chunk_offset = c.offset;
        Ok(())
    }

    /// The sequence number of stream `i`'s next record, without consuming it.
    fn peek(&self, i: usize) -> u64 {
        let s = &self.streams[i];
        let mut c = Cursor::new(&s.payload[s.pos.min(s.payload.len())..]);
        let header = c.u8();
        let delta = if header >> 4 == 0 { c.varint() } else { u64::from(header >> 4) };
        s.state.last_seq().wrapping_add(delta)
    }

    fn push(&mut self, i: usize) {
        if self.fill(i) {
            let seq = self.peek(i);
            self.heap.push(Reverse((seq, i)));
        }
    }

    /// Hands `f` the records in global order, in batches of [`BATCH_RECORDS`] (`f` takes them
    /// out of the vector; what it leaves is cleared), with whether the batch holds a definition.
    pub fn run(&mut self, f: &mut dyn FnMut(&mut Vec<Record>, bool)) {
        for i in 0..self.streams.len() {
            self.push(i);
        }
        let mut out = Vec::with_capacity(BATCH_RECORDS);
        let mut next = self.heap.pop().map(|Reverse((_, i))| i);
        while let Some(i) = next {
            self.step(i, &mut out);
            if out.len() >= BATCH_RECORDS {
                f(&mut out, std::mem::take(&mut self.definitions));
                out.clear();
            }
            if !self.fill(i) {
                next = self.heap.pop().map(|Reverse((_, j))| j);
                continue;
            }
            // What pushing stream i and popping the heap's least would give, in one step: stream
            // i goes on while it is still the least (no heap work at all), else it takes the
            // least's place in the heap (one sift instead of a push and a pop: the heap was 3% of
            // a replay, records of a launch alternate between thread and stream locations).
            let head = Reverse((self.peek(i), i));
            if let Some(mut top) = self.heap.peek_mut() {
                if *top > head {
                    let Reverse((_, j)) = std::mem::replace(&mut *top, head);
                    next = Some(j);
                }
            }
        }
        if !out.is_empty() {
            f(&mut out, self.definitions);
        }
        self.end();
    }

    /// The first sequence number stream `i` cannot hold: its next chunk's first one, or the
    /// end marker's total.
    fn seq_bound(&self, i: usize) -> u64 {
        let next = self.streams[i].chunks.front().map(|c| c.header.first_seq);
        next.or(self.reader.total()).unwrap_or(u64::MAX)
    }

    /// Decodes stream `i`'s next record onto `out`, or skips what is damaged.
    #[inline(always)]
    fn step(&mut self, i: usize, out: &mut Vec<Record>) {
        let bound = self.seq_bound(i);
        let s = &mut self.streams[i];
        let at = s.chunk_offset + (CHUNK_HEADER + s.pos) as u64;
        if s.pos >= s.payload.len() {
            s.left = 0;
            self.damage.note(at, "the chunk ends before its last record");
            return;
        }
        let mut c = Cursor::new(&s.payload[s.pos..]);
        let before = out.len();
        let decoded = s.state.decode_into(&mut c, out);
        if let Some(r) = out.get(before) {
            self.definitions |= r.is_definition();
        }
        s.pos += c.position();
        s.left -= 1;
        let seq = match decoded {
            Ok(seq) if seq < bound => seq,
            Ok(_) => {
                // A sequence number past the stream's next chunk: the deltas are damaged, and
                // every later record of this chunk depends on them.
                out.truncate(before);
                s.left = 0;
                self.damage.note(at, "record sequence number out of range");
                return;
            }
            Err(m) => {
                if !m.framed {
                    s.left = 0;
                }
                self.damage.note(at, m.why);
                return;
            }
        };
        if s.left == 0 && s.pos != s.payload.len() {
            self.damage.note(at, "chunk has bytes after its last record");
        }
        if seq < self.next_seq {
            out.truncate(before);
            self.damage.note(at, format!("record {seq} appears twice or out of order"));
            return;
        }
        if seq > self.next_seq {
            self.skipped += seq - self.next_seq;
            // Usually the records of a damaged chunk, already noted; a gap alone is damage too.
            if self.damage.places == 0 {
                let why = format!("records {} to {} are missing", self.next_seq, seq - 1);
                self.damage.note(self.streams[i].chunk_offset, why);
            }
        }
        self.next_seq = seq + 1;
        self.delivered += 1;
    }

    fn end(&mut self) {
        match self.reader.total() {
            Some(t) if t > self.next_seq => {
                self.skipped += t - self.next_seq;
                let at = self.reader.chunks().last().map_or(0, |c| c.offset);
                let why =
                    format!("the end marker counts {t} records but the last one found is {}", self.next_seq);
                self.damage.note(at, why);
            }
            _ => {}
        }
    }
}
