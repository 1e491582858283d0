//! Reading an archive back: the chunk index (stepping over damaged stretches to the next
//! intact chunk), then the merge of the location streams (`merge.rs`).

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use xpuprof_sdk::model::Record;

use crate::error::ArchiveError;
use crate::format::*;
use crate::merge::Merge;

/// What a replay delivered.
#[derive(Debug)]
pub struct ReplayStats {
    /// Records delivered.
    pub records: u64,
    /// Records lost to damage: sequence numbers that no intact record carried (in chunks that
    /// failed their checksum, malformed records, stretches skipped to the next intact chunk).
    pub skipped: u64,
    /// Places where damage was found.
    pub damaged_places: u64,
    /// The first damage found (file and byte offset); the replay went on past it.
    pub corruption: Option<ArchiveError>,
}

#[derive(Debug, Clone, Copy)]
pub(crate) struct Indexed {
    /// Offset of the chunk header in the file.
    pub offset: u64,
    pub header: ChunkHeader,
}

/// Damage found while indexing: the earliest place, and how many places.
#[derive(Debug, Default)]
pub(crate) struct Damage {
    pub first: Option<(u64, String)>,
    pub places: u64,
}

impl Damage {
    pub fn note(&mut self, offset: u64, why: impl Into<String>) {
        self.places += 1;
        if self.first.as_ref().is_none_or(|(o, _)| offset < *o) {
            self.first = Some((offset, why.into()));
        }
    }
}

/// An open archive.
#[derive(Debug)]
pub struct Reader {
    path: PathBuf,
    file: File,
    meta: Meta,
    /// Format version of the file.
    version: u32,
    chunks: Vec<Indexed>,
    /// Total records according to the end marker, when present.
    total: Option<u64>,
    /// Damage met while indexing.
    scan_damage: Damage,
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
    let (meta, start, version) = read_header(&path, &mut file)?;
    let mut r =
        Reader { path, file, meta, version, chunks: Vec::new(), total: None, scan_damage: Damage::default() };
    r.scan(start)?;
    Ok(r)
}

/// Reads up to `buf.len()` bytes; returns how many were read (fewer only at the end).
pub(crate) fn read_full(file: &mut File, buf: &mut [u8]) -> std::io::Result<usize> {
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

fn read_header(path: &Path, file: &mut File) -> Result<(Meta, u64, u32), ArchiveError> {
    let io = |e| ArchiveError::io("read", path, e);
    let mut fixed = [0u8; 16];
    if read_full(file, &mut fixed).map_err(io)? < 16 || &fixed[..8] != MAGIC {
        return Err(ArchiveError::NotAnArchive {
            path: path.to_owned(),
            reason: "the file does not start with an xpuprof archive header".into(),
        });
    }
    let version = u32::from_le_bytes([fixed[8], fixed[9], fixed[10], fixed[11]]);
    if !(OLDEST_VERSION..=VERSION).contains(&version) {
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
    Ok((meta, 16 + len as u64 + 4, version))
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

    pub(crate) fn file(&mut self) -> &mut File {
        &mut self.file
    }

    pub(crate) fn chunks(&self) -> &[Indexed] {
        &self.chunks
    }

    /// Format version of the file.
    pub(crate) fn version(&self) -> u32 {
        self.version
    }

    pub(crate) fn total(&self) -> Option<u64> {
        self.total
    }

    pub(crate) fn scan_damage(&self) -> &Damage {
        &self.scan_damage
    }

    fn io(&self, e: std::io::Error) -> ArchiveError {
        ArchiveError::io("read", &self.path, e)
    }

    /// Reads every chunk header. Damage is noted and skipped: the scan goes on at the next
    /// place where an intact chunk starts.
    fn scan(&mut self, mut offset: u64) -> Result<(), ArchiveError> {
        let len = self.file.metadata().map_err(|e| self.io(e))?.len();
        loop {
            if offset >= len {
                let why = "the archive ends without its end marker: the recording was cut short";
                self.scan_damage.note(len, why);
                return Ok(());
            }
            let h = match self.header_at(offset, len)? {
                Ok(h) => h,
                Err(why) => {
                    self.scan_damage.note(offset, why);
                    match self.resync(offset + 1, len)? {
                        Some(next) => {
                            offset = next;
                            continue;
                        }
                        None => return Ok(()),
                    }
                }
            };
            if h.location == END_LOCATION {
                self.end_marker(offset, &h, len)?;
                return Ok(());
            }
            self.chunks.push(Indexed { offset, header: h });
            offset += CHUNK_HEADER as u64 + u64::from(h.payload_len);
        }
    }

    /// The header of the chunk at `offset`, checked against the file's length.
    fn header_at(
        &mut self,
        offset: u64,
        len: u64,
    ) -> Result<Result<ChunkHeader, &'static str>, ArchiveError> {
        let mut raw = [0u8; CHUNK_HEADER];
        self.file.seek(SeekFrom::Start(offset)).map_err(|e| self.io(e))?;
        let n = read_full(&mut self.file, &mut raw).map_err(|e| self.io(e))?;
        if n < CHUNK_HEADER {
            return Ok(Err("truncated chunk header"));
        }
        Ok(match ChunkHeader::parse(&raw) {
            Ok(h) if offset + (CHUNK_HEADER as u64) + u64::from(h.payload_len) > len => {
                Err("truncated chunk")
            }
            Ok(h)
                if h.location == END_LOCATION
                    && (h.payload_len != 0 || h.records != 0 || !h.check(&raw, &[])) =>
            {
                Err("damaged end marker")
            }
            other => other,
        })
    }

    fn end_marker(&mut self, offset: u64, h: &ChunkHeader, len: u64) -> Result<(), ArchiveError> {
        self.total = Some(h.first_seq);
        let end = offset + CHUNK_HEADER as u64;
        if end < len {
            let junk = len - end;
            self.scan_damage.note(end, format!("{junk} bytes of unknown data after the end marker"));
        }
        Ok(())
    }

    /// The offset of the next intact chunk (its checksum matches) at or after `from`.
    fn resync(&mut self, from: u64, len: u64) -> Result<Option<u64>, ArchiveError> {
        const WINDOW: usize = 64 * 1024;
        let mut window = vec![0u8; WINDOW];
        let mut pos = from;
        while pos + CHUNK_HEADER as u64 <= len {
            self.file.seek(SeekFrom::Start(pos)).map_err(|e| self.io(e))?;
            let n = read_full(&mut self.file, &mut window).map_err(|e| self.io(e))?;
            let found: Vec<u64> = window[..n]
                .windows(CHUNK_MAGIC.len())
                .enumerate()
                .filter(|(_, w)| w == CHUNK_MAGIC)
                .map(|(k, _)| pos + k as u64)
                .collect();
            for at in found {
                if self.intact_at(at, len)? {
                    return Ok(Some(at));
                }
            }
            if n < WINDOW {
                break;
            }
            // Windows overlap by the magic's length less one, so no magic is split unseen.
            pos += (n - (CHUNK_MAGIC.len() - 1)) as u64;
        }
        Ok(None)
    }

    /// True when a chunk whose checksum matches starts at `at`.
    fn intact_at(&mut self, at: u64, len: u64) -> Result<bool, ArchiveError> {
        let Ok(h) = self.header_at(at, len)? else { return Ok(false) };
        let mut raw = [0u8; CHUNK_HEADER];
        self.file.seek(SeekFrom::Start(at)).map_err(|e| self.io(e))?;
        read_full(&mut self.file, &mut raw).map_err(|e| self.io(e))?;
        let mut payload = vec![0u8; h.payload_len as usize];
        let n = read_full(&mut self.file, &mut payload).map_err(|e| self.io(e))?;
        Ok(n == payload.len() && h.check(&raw, &payload))
    }

    /// Calls `f` with batches of records encoded with `xpuprof_sdk::codec`, in exactly the
    /// order the archive sink received them, so a replay through any sink is byte-identical to
    /// the live run. Damage (a chunk that fails its checksum, a malformed record, unreadable
    /// bytes) is skipped and counted, and the replay goes on with the next intact record; the
    /// stats count what was lost and name the first damage (file and byte offset). Never
    /// panics.
    pub fn replay(&mut self, f: &mut dyn FnMut(&[u8])) -> Result<ReplayStats, ArchiveError> {
        let mut buf = Vec::new();
        self.replay_records(&mut |records| {
            buf.clear();
            for r in records.iter() {
                xpuprof_sdk::codec::encode(r, &mut buf);
            }
            f(&buf);
        })
    }

    /// [`Reader::replay`] without the encoding: calls `f` with batches of decoded records
    /// (each record is decoded once, straight from the archive's columns), which `f` may take
    /// out of the vector (`std::mem::take`, `append`) or leave. What `xpuprof report` uses.
    pub fn replay_records(
        &mut self,
        f: &mut dyn FnMut(&mut Vec<Record>),
    ) -> Result<ReplayStats, ArchiveError> {
        self.replay_marked(&mut |records, _| f(records))
    }

    /// [`Reader::replay_records`], also telling `f` whether the batch holds a definition
    /// (`Record::is_definition`): most batches hold only events, and a caller that looks at the
    /// definitions (or must drop them) can then leave the batch's records alone.
    pub fn replay_marked(
        &mut self,
        f: &mut dyn FnMut(&mut Vec<Record>, bool),
    ) -> Result<ReplayStats, ArchiveError> {
        let mut m = Merge::new(self);
        m.run(f);
        Ok(m.into_stats())
    }
}
