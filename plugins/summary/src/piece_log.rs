//! The pieces an [`IntervalUnion`](crate::union::IntervalUnion) has moved out of its map: sorted,
//! disjoint, delta-encoded (two varints each: the hole before the piece and its length, 2 to 6
//! bytes for kernels a few microseconds apart), and read back once, in order, at the end.
//!
//! The log is kept in memory up to [`SPILL_AT`] bytes (about 250,000 pieces); past that it is
//! appended, [`CHUNK`] bytes at a time, to an unnamed temporary file (in `TMPDIR`, gone when the
//! process exits), so a device or stream that runs millions of kernels holds a bounded buffer
//! instead of growing by a few bytes a kernel for as long as the recording lasts (8 ranks × 100k
//! kernels/s grew the summary sink by 6.3 MiB a second). The result stays exact: the file is
//! read back in full. If the file cannot be made or written (a full disk), the log stays in
//! memory from there on, as before; only the bytes written whole are read back from the file.

use std::fs::File;
use std::io::{BufReader, Read, Seek, SeekFrom, Write};

/// Bytes kept in memory before the log goes to a temporary file.
pub const SPILL_AT: usize = 1 << 20;
/// Bytes written at a time once the log is in a file.
pub const CHUNK: usize = 64 << 10;

/// Sorted disjoint pieces as varint pairs (hole before, length).
#[derive(Debug, Default)]
pub struct PieceLog {
    /// The bytes not in the file: the whole log while it is small, then the newest.
    bytes: Vec<u8>,
    /// The temporary file holding the log's first `written` bytes.
    file: Option<File>,
    written: u64,
    /// The file could not be made or written: the rest stays in memory.
    spill_failed: bool,
    spill_at: usize,
    /// Pieces logged.
    pub pieces: u64,
    /// End of the last piece.
    pub end: u64,
}

impl PieceLog {
    /// A log that goes to a temporary file past `spill_at` bytes (0: [`SPILL_AT`]).
    pub fn new(spill_at: usize) -> Self {
        Self { spill_at: if spill_at == 0 { SPILL_AT } else { spill_at }, ..Self::default() }
    }

    /// Appends `[start, end)`, which starts at or after the last piece's end.
    pub fn push(&mut self, start: u64, end: u64) {
        put_varint(&mut self.bytes, start - self.end);
        put_varint(&mut self.bytes, end - start);
        self.end = end;
        self.pieces += 1;
        let limit = if self.file.is_some() { CHUNK.min(self.spill_at) } else { self.spill_at };
        if self.bytes.len() >= limit && !self.spill_failed {
            self.spill();
        }
    }

    /// Bytes held in memory.
    pub fn bytes(&self) -> usize {
        self.bytes.capacity()
    }

    /// Bytes in the temporary file.
    pub fn spilled(&self) -> u64 {
        self.written
    }

    /// Moves the in-memory bytes to the end of the file (made on the first call).
    fn spill(&mut self) {
        if self.file.is_none() {
            match tempfile::tempfile() {
                Ok(f) => self.file = Some(f),
                Err(_) => {
                    self.spill_failed = true;
                    return;
                }
            }
        }
        let Some(file) = self.file.as_mut() else { return };
        // A write that failed part way leaves bytes after `written` that are never read.
        match file.write_all(&self.bytes) {
            Ok(()) => {
                self.written += self.bytes.len() as u64;
                self.bytes.clear();
                self.bytes.shrink_to(CHUNK.min(self.spill_at) + 16);
            }
            Err(_) => self.spill_failed = true,
        }
    }
}

impl IntoIterator for PieceLog {
    type Item = (u64, u64);
    type IntoIter = PieceIter;

    /// The pieces in order.
    ///
    /// # Panics
    ///
    /// When the temporary file written earlier cannot be read back (the summary would be wrong
    /// without it; the host reports the sink's panic).
    fn into_iter(self) -> PieceIter {
        let head: Box<dyn Read + Send> = match self.file {
            Some(mut f) => {
                if let Err(e) = f.seek(SeekFrom::Start(0)) {
                    panic!("failed to read back the summary's interval log from its temporary file: {e}");
                }
                Box::new(f.take(self.written))
            }
            None => Box::new(std::io::empty()),
        };
        let input = BufReader::with_capacity(CHUNK, head.chain(std::io::Cursor::new(self.bytes)));
        PieceIter { input, end: 0 }
    }
}

/// The log's bytes: the file's, then those still in memory.
type LogBytes = std::io::Chain<Box<dyn Read + Send>, std::io::Cursor<Vec<u8>>>;

/// The pieces of a [`PieceLog`], in order.
pub struct PieceIter {
    input: BufReader<LogBytes>,
    end: u64,
}

impl std::fmt::Debug for PieceIter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PieceIter").field("end", &self.end).finish_non_exhaustive()
    }
}

impl PieceIter {
    /// The next varint; `None` at the end of the log.
    fn varint(&mut self) -> Option<u64> {
        let (mut v, mut shift) = (0u64, 0);
        let mut b = [0u8];
        loop {
            match self.input.read(&mut b) {
                Ok(0) => return None,
                Ok(_) => {}
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    panic!("failed to read back the summary's interval log from its temporary file: {e}")
                }
            }
            v |= u64::from(b[0] & 0x7f) << shift;
            if b[0] < 0x80 {
                return Some(v);
            }
            shift += 7;
        }
    }
}

impl Iterator for PieceIter {
    type Item = (u64, u64);

    fn next(&mut self) -> Option<(u64, u64)> {
        let start = self.end + self.varint()?;
        self.end = start + self.varint()?;
        Some((start, self.end))
    }
}

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pieces(n: u64) -> impl Iterator<Item = (u64, u64)> {
        // Holes and lengths of 1 to 3 varint bytes.
        (0..n).map(|i| (i * 200_000 + (i % 7) * 20_000, i * 200_000 + (i % 7) * 20_000 + 50 + i % 40_000))
    }

    #[test]
    fn a_log_read_back_is_what_was_logged_in_memory_and_from_its_file() {
        for (spill_at, n) in [(16, 200_000), (1000, 200_000), (SPILL_AT, 50_000)] {
            let mut log = PieceLog::new(spill_at);
            for (s, e) in pieces(n) {
                log.push(s, e);
            }
            assert_eq!(log.pieces, n);
            if spill_at < SPILL_AT {
                assert!(log.spilled() > 0, "spill_at {spill_at}: the test should write the file");
                assert!(log.bytes() <= CHUNK + 64, "spill_at {spill_at}: {} bytes in memory", log.bytes());
            } else {
                assert_eq!(log.spilled(), 0);
            }
            assert!(log.into_iter().eq(pieces(n)), "spill_at {spill_at}");
        }
    }

    #[test]
    fn an_empty_log_has_no_pieces() {
        assert_eq!(PieceLog::new(0).into_iter().count(), 0);
    }
}
