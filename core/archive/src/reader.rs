//! Reading an archive back: the chunk index, then a merge of the location streams in global
//! sequence order.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use xpuprof_sdk::hash::IdMap;

use xpuprof_sdk::codec::Cursor;

use crate::error::ArchiveError;
use crate::events::LocState;
use crate::format::*;

/// Replay output is handed over in batches of about this size.
const BATCH_BYTES: usize = 256 * 1024;

/// What a replay delivered.
#[derive(Debug)]
pub struct ReplayStats {
    /// Records delivered.
    pub records: u64,
    /// The first damage found (file and byte offset); everything before it was delivered.
    pub corruption: Option<ArchiveError>,
}

#[derive(Debug, Clone, Copy)]
struct Indexed {
    /// Offset of the chunk header in the file.
    offset: u64,
    header: ChunkHeader,
}

/// An open archive.
#[derive(Debug)]
pub struct Reader {
    path: PathBuf,
    file: File,
    meta: Meta,
    chunks: Vec<Indexed>,
    /// Total records according to the end marker, when present.
    total: Option<u64>,
    /// Where and why the chunk index stops early, if it does.
    scan_error: Option<(u64, &'static str)>,
}

/// Finds the trace file: `path` itself, `path/trace.xpa` or `path/archive/trace.xpa`.
fn resolve(path: &Path) -> Result<PathBuf, ArchiveError> {
    if path.is_file() {
        return Ok(path.to_owned());
    }
    for candidate in [path.join(FILE_NAME), path.join("archive").join(FILE_NAME)] {
        if candidate.is_file() {
            return Ok(candidate);
        }
    }
    let reason = if path.exists() {
        format!("neither {FILE_NAME} nor archive/{FILE_NAME} is in it; record with `--sink archive`")
    } else {
        "no such file or directory".to_owned()
    };
    Err(ArchiveError::NotAnArchive { path: path.to_owned(), reason })
}

/// Opens an archive: the `<out>/archive` directory, the `<out>` directory containing it, or the
/// trace file itself.
pub fn open(path: &Path) -> Result<Reader, ArchiveError> {
    let path = resolve(path)?;
    let mut file = File::open(&path).map_err(|e| ArchiveError::io("open", &path, e))?;
    let (meta, start) = read_header(&path, &mut file)?;
    let mut r = Reader { path, file, meta, chunks: Vec::new(), total: None, scan_error: None };
    r.scan(start)?;
    Ok(r)
}

/// Reads up to `buf.len()` bytes; returns how many were read (fewer only at the end).
fn read_full(file: &mut File, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match file.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

fn read_header(path: &Path, file: &mut File) -> Result<(Meta, u64), ArchiveError> {
    let io = |e| ArchiveError::io("read", path, e);
    let mut fixed = [0u8; 16];
    if read_full(file, &mut fixed).map_err(io)? < 16 || &fixed[..8] != MAGIC {
        return Err(ArchiveError::NotAnArchive {
            path: path.to_owned(),
            reason: "the file does not start with an xpuprof archive header".into(),
        });
    }
    let version = u32::from_le_bytes([fixed[8], fixed[9], fixed[10], fixed[11]]);
    if version != VERSION {
        return Err(ArchiveError::Version { path: path.to_owned(), found: version, supported: VERSION });
    }
    let len = u32::from_le_bytes([fixed[12], fixed[13], fixed[14], fixed[15]]);
    if len > MAX_PAYLOAD {
        return Err(ArchiveError::corrupt(path, 12, "header metadata length is implausibly large"));
    }
    let mut meta = vec![0u8; len as usize + 4];
    if read_full(file, &mut meta).map_err(io)? < meta.len() {
        return Err(ArchiveError::corrupt(path, 16, "the header is truncated"));
    }
    let (m, crc) = meta.split_at(len as usize);
    if crc32fast::hash(m).to_le_bytes() != crc {
        return Err(ArchiveError::corrupt(path, 16, "header checksum mismatch"));
    }
    let meta = Meta::decode(m).ok_or_else(|| ArchiveError::corrupt(path, 16, "malformed header metadata"))?;
    Ok((meta, 16 + len as u64 + 4))
}

impl Reader {
    /// Session facts from the header.
    pub fn meta(&self) -> &Meta {
        &self.meta
    }

    /// The archive file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Reads every chunk header, stopping at the first damage.
    fn scan(&mut self, mut offset: u64) -> Result<(), ArchiveError> {
        let len = self.file.metadata().map_err(|e| ArchiveError::io("read", &self.path, e))?.len();
        self.file.seek(SeekFrom::Start(offset)).map_err(|e| ArchiveError::io("read", &self.path, e))?;
        loop {
            if offset == len {
                let why = "the archive ends without its end marker: the recording was cut short";
                self.scan_error = Some((offset, why));
                return Ok(());
            }
            let mut raw = [0u8; CHUNK_HEADER];
            let n =
                read_full(&mut self.file, &mut raw).map_err(|e| ArchiveError::io("read", &self.path, e))?;
            let header =
                if n < CHUNK_HEADER { Err("truncated chunk header") } else { ChunkHeader::parse(&raw) };
            let header = match header {
                Ok(h) if offset + (CHUNK_HEADER as u64) + u64::from(h.payload_len) > len => {
                    Err("truncated chunk")
                }
                other => other,
            };
            let h = match header {
                Ok(h) => h,
                Err(why) => {
                    self.scan_error = Some((offset, why));
                    return Ok(());
                }
            };
            if h.location == END_LOCATION {
                if h.payload_len != 0 || h.records != 0 || !h.check(&raw, &[]) {
                    self.scan_error = Some((offset, "damaged end marker"));
                } else {
                    self.total = Some(h.first_seq);
                }
                return Ok(());
            }
            self.chunks.push(Indexed { offset, header: h });
            offset += CHUNK_HEADER as u64 + u64::from(h.payload_len);
            self.file.seek(SeekFrom::Start(offset)).map_err(|e| ArchiveError::io("read", &self.path, e))?;
        }
    }

    /// Calls `f` with batches of records encoded with `xpuprof_sdk::codec`, in exactly the
    /// order the archive sink received them, so a replay through any sink is byte-identical to
    /// the live run. Stops at the first damage and reports it (file and byte offset) in the
    /// stats, having delivered everything before it. Never panics.
    pub fn replay(&mut self, f: &mut dyn FnMut(&[u8])) -> Result<ReplayStats, ArchiveError> {
        let mut m = Merge::new(self);
        let corruption = m.run(f);
        Ok(ReplayStats { records: m.delivered, corruption })
    }
}

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

/// The k-way merge of location streams by sequence number.
struct Merge<'a> {
    reader: &'a mut Reader,
    streams: Vec<Stream>,
    heap: BinaryHeap<Reverse<(u64, usize)>>,
    delivered: u64,
    /// Damage found inside a chunk, with its offset, the earliest one kept.
    damage: Option<ArchiveError>,
}

impl<'a> Merge<'a> {
    fn new(reader: &'a mut Reader) -> Self {
        let mut by_loc: IdMap<u32, VecDeque<Indexed>> = IdMap::default();
        for c in &reader.chunks {
            by_loc.entry(c.header.location).or_default().push_back(*c);
        }
        let mut locs: Vec<_> = by_loc.into_iter().collect();
        locs.sort_by_key(|(l, _)| *l);
        let streams = locs
            .into_iter()
            .map(|(_, chunks)| Stream {
                chunks,
                payload: Vec::new(),
                pos: 0,
                left: 0,
                state: LocState::new(0),
                chunk_offset: 0,
            })
            .collect();
        Self { reader, streams, heap: BinaryHeap::new(), delivered: 0, damage: None }
    }

    fn damaged(&mut self, offset: u64, why: &str) {
        if self
            .damage
            .as_ref()
            .is_none_or(|d| matches!(d, ArchiveError::Corrupt { offset: o, .. } if offset < *o))
        {
            self.damage = Some(ArchiveError::corrupt(&self.reader.path, offset, why));
        }
    }

    /// Makes sure stream `i` has a record to read; false when it has no more.
    fn fill(&mut self, i: usize) -> bool {
        while self.streams[i].left == 0 {
            let Some(c) = self.streams[i].chunks.pop_front() else { return false };
            if let Err(why) = self.load(i, c) {
                self.damaged(c.offset, why);
                self.streams[i].chunks.clear();
                return false;
            }
        }
        true
    }

    fn load(&mut self, i: usize, c: Indexed) -> Result<(), &'static str> {
        let file = &mut self.reader.file;
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
        s.state = LocState::new(c.header.first_seq);
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

    fn run(&mut self, f: &mut dyn FnMut(&[u8])) -> Option<ArchiveError> {
        for i in 0..self.streams.len() {
            self.push(i);
        }
        let mut out = Vec::with_capacity(BATCH_BYTES + 4096);
        let result = self.merge(&mut out, f);
        if !out.is_empty() {
            f(&out);
        }
        result
    }

    fn merge(&mut self, out: &mut Vec<u8>, f: &mut dyn FnMut(&[u8])) -> Option<ArchiveError> {
        while let Some(Reverse((seq, i))) = self.heap.pop() {
            if seq != self.delivered {
                return Some(self.gap(seq, i));
            }
            let s = &mut self.streams[i];
            let mut c = Cursor::new(&s.payload[s.pos..]);
            let at = s.chunk_offset + (CHUNK_HEADER + s.pos) as u64;
            let decoded = s.state.decode(&mut c, out);
            s.pos += c.position();
            s.left -= 1;
            if let Err(why) = decoded {
                return Some(ArchiveError::corrupt(&self.reader.path, at, why));
            }
            if s.left == 0 && s.pos != s.payload.len() {
                return Some(ArchiveError::corrupt(
                    &self.reader.path,
                    at,
                    "chunk has bytes after its last record",
                ));
            }
            self.delivered += 1;
            if out.len() >= BATCH_BYTES {
                f(out);
                out.clear();
            }
            self.push(i);
        }
        self.end_state()
    }

    /// Explains why record `self.delivered` is missing when the next one found is `seq`.
    fn gap(&mut self, seq: u64, i: usize) -> ArchiveError {
        if let Some(d) = self.damage.take() {
            return d;
        }
        if let Some((offset, why)) = self.reader.scan_error {
            return ArchiveError::corrupt(&self.reader.path, offset, why);
        }
        let at = self.streams[i].chunk_offset;
        let why = if seq < self.delivered {
            format!("record {seq} appears twice or out of order")
        } else {
            format!("record {} is missing (the next one found is {seq})", self.delivered)
        };
        ArchiveError::corrupt(&self.reader.path, at, why)
    }

    fn end_state(&mut self) -> Option<ArchiveError> {
        if let Some(d) = self.damage.take() {
            return Some(d);
        }
        if let Some((offset, why)) = self.reader.scan_error {
            return Some(ArchiveError::corrupt(&self.reader.path, offset, why));
        }
        match self.reader.total {
            Some(t) if t != self.delivered => Some(ArchiveError::corrupt(
                &self.reader.path,
                self.reader.chunks.last().map_or(0, |c| c.offset),
                format!("the end marker counts {t} records but {} were found", self.delivered),
            )),
            _ => None,
        }
    }
}
