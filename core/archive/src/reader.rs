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
    /// Version and meta from the first intact header copy chunk.
    copy: Option<(u32, Meta)>,
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
/// trace file itself. A damaged file header is recovered from: the session facts and version
/// come from the header's copy chunk, the chunks are found by scanning for intact ones, and the
/// damage is counted and reported by the replay like damage anywhere else.
pub fn open(path: &Path) -> Result<Reader, ArchiveError> {
    let path = resolve(path)?;
    let mut file = File::open(&path).map_err(|e| ArchiveError::io("open", &path, e))?;
    let header = read_header(&path, &mut file)?;
    let version = match &header {
        Header::Intact { version, .. } => *version,
        Header::Damaged(found) => found.version.unwrap_or(VERSION),
    };
    let mut r = Reader {
        path,
        file,
        meta: Meta::default(),
        version,
        chunks: Vec::new(),
        total: None,
        scan_damage: Damage::default(),
        copy: None,
    };
    match header {
        Header::Intact { meta, start, .. } => {
            r.meta = meta;
            r.scan(start)?;
        }
        Header::Damaged(found) => r.recover(found)?,
    }
    Ok(r)
}

/// What the file header says.
enum Header {
    /// Read and checked: the session facts, where the chunks start, the format version.
    Intact { meta: Meta, start: u64, version: u32 },
    /// Damaged: what could be read of it.
    Damaged(Found),
}

/// What was found of a damaged header.
struct Found {
    /// Where the damage is.
    offset: u64,
    /// What is wrong.
    why: &'static str,
    /// The version field when it is one this reader speaks.
    version: Option<u32>,
    /// The version field.
    field: u32,
    /// Whether the file magic was intact.
    magic: bool,
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

fn read_header(path: &Path, file: &mut File) -> Result<Header, ArchiveError> {
    let io = |e| ArchiveError::io("read", path, e);
    let mut fixed = [0u8; 16];
    let n = read_full(file, &mut fixed).map_err(io)?;
    let magic = n >= MAGIC.len() && &fixed[..MAGIC.len()] == MAGIC;
    let field = u32::from_le_bytes([fixed[8], fixed[9], fixed[10], fixed[11]]);
    let version = (OLDEST_VERSION..=VERSION).contains(&field).then_some(field);
    let damaged = |offset, why| Ok(Header::Damaged(Found { offset, why, version, field, magic }));
    if !magic {
        return damaged(0, "bad file magic");
    }
    if n < 16 {
        return damaged(n as u64, "the header is truncated");
    }
    if version.is_none() {
        return damaged(8, "format version unknown");
    }
    let len = u32::from_le_bytes([fixed[12], fixed[13], fixed[14], fixed[15]]);
    if len > MAX_PAYLOAD {
        return damaged(12, "header metadata length is implausibly large");
    }
    let mut meta = vec![0u8; len as usize + 4];
    if read_full(file, &mut meta).map_err(io)? < meta.len() {
        return damaged(16, "the header is truncated");
    }
    let (m, crc) = meta.split_at(len as usize);
    if header_crc(field, &fixed, m).to_le_bytes() != crc {
        return damaged(16, "header checksum mismatch");
    }
    let Some(meta) = Meta::decode(m) else { return damaged(16, "malformed header metadata") };
    Ok(Header::Intact { meta, start: 16 + u64::from(len) + 4, version: field })
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
            if h.location == COPY_LOCATION {
                offset = match self.header_copy(offset, len)? {
                    Some(next) => next,
                    None => return Ok(()),
                };
                continue;
            }
            self.chunks.push(Indexed { offset, header: h });
            offset += CHUNK_HEADER as u64 + u64::from(h.payload_len);
        }
    }

    /// Reads the header copy chunk at `offset`: kept when intact (the first one), noted as
    /// damage when not. Returns where the next chunk starts: after it when intact, else the
    /// next intact chunk (its length may be what is damaged).
    fn header_copy(&mut self, offset: u64, len: u64) -> Result<Option<u64>, ArchiveError> {
        let payload = self.intact_payload(offset)?;
        let Some(copy) = payload.as_deref().and_then(parse_copy) else {
            self.scan_damage.note(offset, "damaged copy of the file header");
            return self.resync(offset + 1, len);
        };
        self.copy.get_or_insert(copy);
        Ok(Some(offset + (CHUNK_HEADER + payload.map_or(0, |p| p.len())) as u64))
    }

    /// Recovers from a damaged file header: notes the damage, finds the first intact chunk,
    /// indexes the chunks from there, and takes the version and session facts from the header
    /// copy. Without a copy (versions 1 and 2), the version field is used where it is one this
    /// reader speaks, and the session facts are left empty.
    fn recover(&mut self, found: Found) -> Result<(), ArchiveError> {
        let Found { offset, why, version, field, magic } = found;
        let len = self.file.metadata().map_err(|e| self.io(e))?.len();
        let first = self.resync(0, len)?;
        if !magic && first.is_none() {
            return Err(ArchiveError::NotAnArchive {
                path: self.path.clone(),
                reason: "the file does not start with an xpuprof archive header".into(),
            });
        }
        self.scan_damage.note(offset, format!("damaged file header ({why})"));
        if let Some(first) = first {
            self.scan(first)?;
        } else {
            self.scan_damage.note(len, "no intact chunk follows the damaged file header");
        }
        let path = self.path.clone();
        match self.copy.take() {
            Some((v, meta)) if (OLDEST_VERSION..=VERSION).contains(&v) => {
                (self.version, self.meta) = (v, meta);
                Ok(())
            }
            Some((found, _)) => Err(ArchiveError::Version { path, found, supported: VERSION }),
            None if version.is_some() => Ok(()),
            // An intact magic and a version this reader does not speak, with no copy to say
            // otherwise: most likely an archive from a newer xpuprof.
            None if magic && version.is_none() && offset == 8 => {
                Err(ArchiveError::Version { path, found: field, supported: VERSION })
            }
            None if magic => Err(ArchiveError::corrupt(
                path,
                offset,
                format!("damaged file header ({why}) and no intact copy of it"),
            )),
            None => Err(ArchiveError::NotAnArchive {
                path,
                reason: "the file does not start with an xpuprof archive header".into(),
            }),
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
        if self.header_at(at, len)?.is_err() {
            return Ok(false);
        }
        Ok(self.intact_payload(at)?.is_some())
    }

    /// The payload of the chunk at `at` when its header parses and its checksum matches.
    fn intact_payload(&mut self, at: u64) -> Result<Option<Vec<u8>>, ArchiveError> {
        let mut raw = [0u8; CHUNK_HEADER];
        self.file.seek(SeekFrom::Start(at)).map_err(|e| self.io(e))?;
        if read_full(&mut self.file, &mut raw).map_err(|e| self.io(e))? < CHUNK_HEADER {
            return Ok(None);
        }
        let Ok(h) = ChunkHeader::parse(&raw) else { return Ok(None) };
        let mut payload = vec![0u8; h.payload_len as usize];
        let n = read_full(&mut self.file, &mut payload).map_err(|e| self.io(e))?;
        Ok((n == payload.len() && h.check(&raw, &payload)).then_some(payload))
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
