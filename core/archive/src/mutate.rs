//! Damaging archives on purpose, for the fuzz tests of the reader and of `xpuprof report`
//! (`scripts/fuzz-archive.sh` runs them longer).
//!
//! A raw mutation flips, overwrites, inserts or cuts bytes anywhere: the checksums catch most of
//! it. A *repaired* mutation damages the bytes inside chunks and then recomputes every chunk's
//! checksum, so the damage reaches the record decoder behind the checksums.

use crate::format::{file_header, ChunkHeader, Meta, CHUNK_HEADER, CHUNK_MAGIC, COPY_LOCATION};

/// A small deterministic generator (xorshift64*), so a failing seed can be replayed.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator for `seed`.
    pub fn new(seed: u64) -> Self {
        Self(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// A number in `0..n` (`n` > 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }
}

/// Where each chunk of `bytes` starts and how long its payload is, following the chunk
/// headers from the end of the file header; stops at the first header that does not parse.
/// The header's copy chunk is left out (see [`header_region`]): the first chunk is the first
/// one of records.
pub fn chunks(bytes: &[u8]) -> Vec<(usize, usize)> {
    chunks_and_copy(bytes).into_iter().filter(|&(at, _)| location(bytes, at) != COPY_LOCATION).collect()
}

/// The bytes of the file header and its copy chunk (version 3 on): `0..end`.
pub fn header_region(bytes: &[u8]) -> usize {
    match chunks_and_copy(bytes).first() {
        Some(&(at, len)) if location(bytes, at) == COPY_LOCATION => at + CHUNK_HEADER + len,
        Some(&(at, _)) => at,
        None => bytes.len(),
    }
}

fn location(bytes: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([bytes[at + 4], bytes[at + 5], bytes[at + 6], bytes[at + 7]])
}

fn chunks_and_copy(bytes: &[u8]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let Some(meta_len) = bytes.get(12..16) else { return out };
    let meta_len = u32::from_le_bytes([meta_len[0], meta_len[1], meta_len[2], meta_len[3]]) as usize;
    let mut at = 16 + meta_len + 4;
    while let Some(raw) = bytes.get(at..at + CHUNK_HEADER) {
        let mut h = [0u8; CHUNK_HEADER];
        h.copy_from_slice(raw);
        let Ok(header) = ChunkHeader::parse(&h) else { break };
        let len = header.payload_len as usize;
        if at + CHUNK_HEADER + len > bytes.len() {
            break;
        }
        out.push((at, len));
        at += CHUNK_HEADER + len;
    }
    out
}

/// `bytes` (an archive of version 3 on) with its session facts replaced by `meta`: the file
/// header and its copy chunk rewritten, checksums and all. What the merge tests use to give a
/// recording another host's clock.
pub fn with_meta(bytes: &[u8], meta: &Meta) -> Vec<u8> {
    let mut out = file_header(meta);
    out.extend_from_slice(&bytes[header_region(bytes)..]);
    out
}

/// Recomputes the checksum of every chunk found in `bytes`.
pub fn repair_checksums(bytes: &mut [u8]) {
    for (at, len) in chunks(bytes) {
        if &bytes[at..at + 4] != CHUNK_MAGIC {
            continue;
        }
        let mut h = crc32fast::Hasher::new();
        h.update(&bytes[at + 4..at + 24]);
        h.update(&bytes[at + CHUNK_HEADER..at + CHUNK_HEADER + len]);
        bytes[at + 24..at + 28].copy_from_slice(&h.finalize().to_le_bytes());
    }
}

/// A raw mutation of `bytes`: one to four edits anywhere (flip, overwrite, insert, delete,
/// truncate), checksums left as they are.
pub fn raw(bytes: &[u8], rng: &mut Rng) -> Vec<u8> {
    let mut b = bytes.to_vec();
    for _ in 0..1 + rng.below(4) {
        if b.is_empty() {
            break;
        }
        let i = rng.below(b.len());
        match rng.below(5) {
            0 => b[i] ^= 1 << rng.below(8),
            1 => b[i] = rng.next_u64() as u8,
            2 => b.insert(i, rng.next_u64() as u8),
            3 => {
                b.remove(i);
            }
            _ => b.truncate(i),
        }
    }
    b
}

/// A mutation inside chunk payloads and headers (not the magic, not the checksum), with every
/// checksum recomputed afterwards, so the damage reaches the record decoder.
pub fn repaired(bytes: &[u8], rng: &mut Rng) -> Vec<u8> {
    let mut b = bytes.to_vec();
    let chunks: Vec<(usize, usize)> = chunks(&b).into_iter().filter(|(_, len)| *len > 0).collect();
    if chunks.is_empty() {
        return b;
    }
    for _ in 0..1 + rng.below(3) {
        let (at, len) = chunks[rng.below(chunks.len())];
        // Mostly payload bytes, sometimes a header field (location, sequence, count).
        let i = if rng.below(8) == 0 { at + 4 + rng.below(20) } else { at + CHUNK_HEADER + rng.below(len) };
        match rng.below(3) {
            0 => b[i] ^= 1 << rng.below(8),
            1 => b[i] = rng.next_u64() as u8,
            _ => b[i] = [0, 0x7f, 0x80, 0xff][rng.below(4)],
        }
    }
    repair_checksums(&mut b);
    b
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{sample, Meta, Writer};

    #[test]
    fn repaired_mutations_keep_checksums_valid() {
        let dir = std::env::temp_dir().join(format!("xpuprof-mutate-{}", std::process::id()));
        let mut w = Writer::create(&dir, &Meta::default()).unwrap();
        for r in sample::session() {
            w.write(&r).unwrap();
        }
        w.finish().unwrap();
        let bytes = std::fs::read(dir.join(crate::FILE_NAME)).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        let mut rng = Rng::new(7);
        let m = repaired(&bytes, &mut rng);
        assert_ne!(m, bytes);
        let mut again = m.clone();
        repair_checksums(&mut again);
        assert_eq!(again, m, "checksums were already repaired");
    }
}
