//! Writing an archive while the session records.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use xpuprof_sdk::hash::IdMap;

use xpuprof_sdk::model::Record;

use crate::error::ArchiveError;
use crate::events::LocState;
use crate::format::{file_header, ChunkHeader, Meta, END_LOCATION, FILE_NAME};

/// A location's chunk is written once its payload reaches this size.
const CHUNK_TARGET: usize = 64 * 1024;
/// Every open chunk is written once this many records arrived since the last time...
const STALE_RECORDS: u64 = 1 << 16;
/// ...or this much time passed, so a crash loses little.
const STALE_TIME: Duration = Duration::from_millis(250);

/// Locations remembered in [`Writer::location`]'s small cache.
const RECENT: usize = 4;

/// Where an event is stored: the global stream (definitions and process-wide events), a host
/// thread, or a device stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum LocKey {
    Global,
    Thread { pid: u32, tid: u32 },
    Stream { pid: u32, device: u32, stream: u32 },
}

fn location_of(r: &Record) -> LocKey {
    match r {
        Record::ApiCall(e) => LocKey::Thread { pid: e.pid, tid: e.tid },
        Record::LaunchSite(e) => LocKey::Thread { pid: e.pid, tid: e.tid },
        Record::CpuSample(e) => LocKey::Thread { pid: e.pid, tid: e.tid },
        Record::Marker(e) | Record::Range(e) => LocKey::Thread { pid: e.pid, tid: e.tid },
        Record::DeviceOp(e) => LocKey::Stream { pid: e.pid, device: e.device.0, stream: e.stream.0 },
        _ => LocKey::Global,
    }
}

#[derive(Debug)]
struct OpenChunk {
    /// The encoder's state; `None` once the location has been idle for a whole flush period
    /// (every chunk starts from fresh predictions, so nothing is lost by dropping it): memory
    /// follows the threads and streams alive, not every one the session ever saw.
    state: Option<Box<LocState>>,
    buf: Vec<u8>,
    first_seq: u64,
    records: u32,
}

/// What a finished archive holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WriteStats {
    /// Records written.
    pub records: u64,
    /// Size of the archive file in bytes.
    pub bytes: u64,
    /// Locations (global stream, threads, device streams).
    pub locations: u32,
}

/// Appends records to an archive; see the crate docs for the format.
#[derive(Debug)]
pub struct Writer {
    path: PathBuf,
    file: File,
    seq: u64,
    locations: IdMap<LocKey, u32>,
    /// The locations written last (most records go to a few threads and streams in turn),
    /// looked at before `locations`.
    recent: [Option<(LocKey, u32)>; RECENT],
    chunks: Vec<OpenChunk>,
    out: Vec<u8>,
    bytes: u64,
    flushed_seq: u64,
    flushed_at: Instant,
}

impl Writer {
    /// Creates `dir` (the archive directory, `<out>/archive`) and its trace file.
    pub fn create(dir: &Path, meta: &Meta) -> Result<Self, ArchiveError> {
        std::fs::create_dir_all(dir).map_err(|e| ArchiveError::io("create", dir, e))?;
        Self::create_in(dir, FILE_NAME, meta)
    }

    /// Creates the trace file `relative` (e.g. `archive/trace.xpa`) under the output directory
    /// `out` without following symbolic links ([`xpuprof_sdk::output::create_file`]).
    pub fn create_in(out: &Path, relative: &str, meta: &Meta) -> Result<Self, ArchiveError> {
        let (file, path) = xpuprof_sdk::output::create_file(out, relative)
            .map_err(|e| ArchiveError::io("create", e.path.clone(), e.source))?;
        Self::with_file(file, path, meta)
    }

    fn with_file(mut file: File, path: PathBuf, meta: &Meta) -> Result<Self, ArchiveError> {
        let header = file_header(meta);
        file.write_all(&header).map_err(|e| ArchiveError::io("write", &path, e))?;
        let mut w = Self {
            path,
            file,
            seq: 0,
            locations: IdMap::default(),
            recent: [None; RECENT],
            chunks: Vec::new(),
            out: Vec::with_capacity(CHUNK_TARGET + 1024),
            bytes: header.len() as u64,
            flushed_seq: 0,
            flushed_at: Instant::now(),
        };
        w.location(LocKey::Global);
        Ok(w)
    }

    /// The archive file being written.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Bytes written to the file so far.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    #[inline]
    fn location(&mut self, key: LocKey) -> usize {
        if let Some((_, id)) = self.recent.iter().flatten().find(|(k, _)| *k == key) {
            return *id as usize;
        }
        let id = self.location_slow(key);
        self.recent.rotate_right(1);
        self.recent[0] = Some((key, id as u32));
        id
    }

    fn location_slow(&mut self, key: LocKey) -> usize {
        let next = self.chunks.len() as u32;
        let id = *self.locations.entry(key).or_insert(next);
        if id == next {
            self.chunks.push(OpenChunk { state: None, buf: Vec::new(), first_seq: 0, records: 0 });
        }
        id as usize
    }

    /// Appends one record.
    pub fn write(&mut self, r: &Record) -> Result<(), ArchiveError> {
        let loc = self.location(location_of(r));
        let seq = self.seq;
        self.seq += 1;
        let c = &mut self.chunks[loc];
        if c.records == 0 {
            c.first_seq = seq;
        }
        let state = match &mut c.state {
            Some(s) if c.records > 0 => s,
            Some(s) => {
                s.reset(seq);
                s
            }
            None => c.state.insert(Box::new(LocState::new(seq, crate::VERSION))),
        };
        state.encode(seq, r, &mut c.buf);
        c.records += 1;
        if c.buf.len() >= CHUNK_TARGET || c.records == u32::MAX {
            self.flush_chunk(loc)?;
        }
        Ok(())
    }

    /// Call after each batch: writes every open chunk when enough records or time passed since
    /// the last time, so a crash leaves at most that much unwritten.
    pub fn end_batch(&mut self) -> Result<(), ArchiveError> {
        if self.seq - self.flushed_seq >= STALE_RECORDS || self.flushed_at.elapsed() >= STALE_TIME {
            self.flush_all()?;
        }
        Ok(())
    }

    fn flush_all(&mut self) -> Result<(), ArchiveError> {
        for loc in 0..self.chunks.len() {
            let c = &mut self.chunks[loc];
            if c.records == 0 {
                // Idle since the last flush: free its encoder state and buffer.
                c.state = None;
                c.buf = Vec::new();
            }
            self.flush_chunk(loc)?;
        }
        self.flushed_seq = self.seq;
        self.flushed_at = Instant::now();
        Ok(())
    }

    fn flush_chunk(&mut self, loc: usize) -> Result<(), ArchiveError> {
        let c = &mut self.chunks[loc];
        if c.records == 0 {
            return Ok(());
        }
        self.out.clear();
        ChunkHeader::write(loc as u32, c.first_seq, c.records, &c.buf, &mut self.out);
        c.buf.clear();
        c.records = 0;
        self.file.write_all(&self.out).map_err(|e| ArchiveError::io("write", &self.path, e))?;
        self.bytes += self.out.len() as u64;
        Ok(())
    }

    /// Writes everything still open and the end marker.
    pub fn finish(mut self) -> Result<WriteStats, ArchiveError> {
        self.flush_all()?;
        self.out.clear();
        ChunkHeader::write(END_LOCATION, self.seq, 0, &[], &mut self.out);
        self.file.write_all(&self.out).map_err(|e| ArchiveError::io("write", &self.path, e))?;
        self.bytes += self.out.len() as u64;
        self.file.sync_all().map_err(|e| ArchiveError::io("write", &self.path, e))?;
        Ok(WriteStats { records: self.seq, bytes: self.bytes, locations: self.chunks.len() as u32 })
    }
}

#[cfg(test)]
mod tests {
    use xpuprof_sdk::model::{CpuSample, Record};

    use super::*;
    use crate::Meta;

    fn sample(tid: u32, time: u64) -> Record {
        Record::CpuSample(CpuSample::default().pid(tid).tid(tid).time(time).weight(1))
    }

    #[test]
    fn idle_locations_free_their_encoder_state_and_come_back_intact() {
        let dir = tempfile::tempdir().unwrap();
        let meta = Meta {
            command: vec!["sh".into()],
            sources: vec!["ebpf".into()],
            sinks: vec!["archive".into()],
            start_time: 0,
            codec_version: xpuprof_sdk::codec::CODEC_VERSION,
            writer: "test".into(),
            ..Meta::default()
        };
        let mut w = Writer::create(&dir.path().join("archive"), &meta).unwrap();
        // 1000 short-lived threads, one sample each.
        for tid in 1..=1000 {
            w.write(&sample(tid, u64::from(tid))).unwrap();
        }
        let held = |w: &Writer| w.chunks.iter().filter(|c| c.state.is_some() || c.buf.capacity() > 0).count();
        w.flush_all().unwrap();
        assert_eq!(held(&w), 1000, "written chunks keep their state for one period");
        w.flush_all().unwrap();
        assert_eq!(held(&w), 0, "locations idle for a whole period must free their state");
        // A location that comes back starts a fresh chunk, and everything reads back.
        w.write(&sample(5, 2000)).unwrap();
        assert_eq!(held(&w), 1);
        let path = w.path().to_owned();
        assert_eq!(w.finish().unwrap().records, 1001);
        let mut reader = crate::open(&path).unwrap();
        let mut n = 0;
        reader.replay(&mut |b| n += xpuprof_sdk::codec::decode_all(b).unwrap().len()).unwrap();
        assert_eq!(n, 1001);
    }
}
