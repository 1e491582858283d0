//! The archive file layout: header, chunks, checksums (see `docs/formats.md`).
//!
//! ```text
//! file   = header copy-chunk chunk* end-chunk
//! header = "XPUARCH\0" version:u32le meta_len:u32le meta crc32(version..meta):u32le
//! chunk  = "XPCK" location:u32le first_seq:u64le records:u32le payload_len:u32le
//!          crc32(location..payload_len ++ payload):u32le payload
//! ```
//! The copy chunk (version 3) has location [`COPY_LOCATION`], no records, and the version and
//! meta as its payload: a reader whose header is damaged finds it by scanning for an intact
//! chunk. (Versions 1 and 2 have no copy, and their header checksum covers the meta alone.)
//! The end chunk has location [`END_LOCATION`] and no records; its absence means the recording
//! was cut short.

use xpuprof_sdk::codec::{put_bytes, put_varint, Cursor};

/// File magic.
pub const MAGIC: &[u8; 8] = b"XPUARCH\0";
/// Format version written by this crate: 3 = version 2's records, the header checksum covering
/// the version and length too, and a checksummed copy of the header in the first chunk
/// (2 = event columns generated from the model schema).
pub const VERSION: u32 = 3;
/// First version with the header copy chunk and the header checksum over version..meta.
pub const COPY_VERSION: u32 = 3;
/// Oldest format version the reader accepts (1 = the frozen layout of [`crate::layout_v1`]).
pub const OLDEST_VERSION: u32 = 1;
/// Chunk magic.
pub const CHUNK_MAGIC: &[u8; 4] = b"XPCK";
/// Chunk header size in bytes.
pub const CHUNK_HEADER: usize = 28;
/// Location of the end-of-archive chunk.
pub const END_LOCATION: u32 = u32::MAX;
/// Location of the chunk holding the header's copy (version and meta).
pub const COPY_LOCATION: u32 = u32::MAX - 1;
/// Largest payload a reader accepts (a writer flushes far below this).
pub const MAX_PAYLOAD: u32 = 64 << 20;
/// File name of the trace inside the archive directory.
pub const FILE_NAME: &str = "trace.xpa";

/// Session facts stored in the archive header, so `xpuprof report` can give sinks the same
/// session information as the live run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Meta {
    /// The profiled command and its arguments.
    pub command: Vec<String>,
    /// Names of the session's sources.
    pub sources: Vec<String>,
    /// Names of the session's sinks.
    pub sinks: Vec<String>,
    /// Session start, session clock ns.
    pub start_time: u64,
    /// `xpuprof_sdk::codec::CODEC_VERSION` of the writer.
    pub codec_version: u32,
    /// Version of the crate that wrote the archive.
    pub writer: String,
    /// Name of the host that recorded; empty in archives written before it was kept.
    pub host: String,
    /// The wall clock and the session clock read together at the start of the recording, which
    /// lines up the recordings of several hosts (`xpuprof report --merge`); `None` in archives
    /// written before it was kept.
    pub clock_pair: Option<ClockPair>,
}

/// Longest host name kept, in bytes (a POSIX host name has at most 255).
const MAX_HOST: usize = 255;

/// This host's name (`/proc/sys/kernel/hostname`), printable and bounded; `localhost` when it
/// cannot be read. Read once.
pub fn host_name() -> &'static str {
    static HOST: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    HOST.get_or_init(|| clean_host(&std::fs::read("/proc/sys/kernel/hostname").unwrap_or_default()))
}

/// A host name for people: printable ASCII only (others become `?`), bounded, trimmed.
fn clean_host(raw: &[u8]) -> String {
    let s: String =
        raw.iter().take(MAX_HOST).map(|&b| if b.is_ascii_graphic() { b as char } else { '?' }).collect();
    let s = s.trim_matches('?');
    if s.is_empty() {
        "localhost".to_owned()
    } else {
        s.to_owned()
    }
}

/// The wall clock (`CLOCK_REALTIME`) and the session clock (`CLOCK_MONOTONIC`) read at one
/// moment, to within `uncertainty_ns`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ClockPair {
    /// Wall-clock time, ns since the Unix epoch.
    pub wall_ns: u64,
    /// Session-clock time at the same moment, ns.
    pub session_ns: u64,
    /// Half the time between the two session-clock readings around the wall-clock reading:
    /// `session_ns` is within this of the moment `wall_ns` was read.
    pub uncertainty_ns: u64,
}

impl ClockPair {
    /// Reads the pair now: the wall clock between two readings of the session clock, the
    /// tightest of a few tries.
    pub fn now() -> Self {
        let mut best = Self { uncertainty_ns: u64::MAX, ..Self::default() };
        for _ in 0..8 {
            let before = xpuprof_sdk::clock::now_ns();
            let wall = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX));
            let after = xpuprof_sdk::clock::now_ns();
            let half = after.saturating_sub(before).div_ceil(2);
            if half < best.uncertainty_ns {
                best = Self { wall_ns: wall, session_ns: before + half, uncertainty_ns: half };
            }
        }
        best
    }

    /// Wall-clock time minus session-clock time: what turns this host's session clock into
    /// wall-clock time.
    pub fn epoch_offset(&self) -> i128 {
        i128::from(self.wall_ns) - i128::from(self.session_ns)
    }
}

fn put_list(out: &mut Vec<u8>, l: &[String]) {
    put_varint(out, l.len() as u64);
    for s in l {
        put_bytes(out, s.as_bytes());
    }
}

fn get_list(c: &mut Cursor<'_>) -> Vec<String> {
    let n = c.varint();
    let mut v = Vec::new();
    for _ in 0..n {
        if c.at_end() {
            break;
        }
        v.push(String::from_utf8_lossy(c.bytes()).into_owned());
    }
    v
}

impl Meta {
    /// Encodes the meta block.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        put_list(&mut out, &self.command);
        put_list(&mut out, &self.sources);
        put_list(&mut out, &self.sinks);
        put_varint(&mut out, self.start_time);
        put_varint(&mut out, self.codec_version.into());
        put_bytes(&mut out, self.writer.as_bytes());
        // Appended session facts: older readers stop before them, newer ones read the
        // defaults from older archives, which end here.
        put_bytes(&mut out, self.host.as_bytes());
        match &self.clock_pair {
            None => put_varint(&mut out, 0),
            Some(p) => {
                put_varint(&mut out, 1);
                put_varint(&mut out, p.wall_ns);
                put_varint(&mut out, p.session_ns);
                put_varint(&mut out, p.uncertainty_ns);
            }
        }
        out
    }

    /// Decodes a meta block; `None` when it is malformed.
    pub fn decode(b: &[u8]) -> Option<Self> {
        let mut c = Cursor::new(b);
        let m = Self {
            command: get_list(&mut c),
            sources: get_list(&mut c),
            sinks: get_list(&mut c),
            start_time: c.varint(),
            codec_version: c.u32(),
            writer: String::from_utf8_lossy(c.bytes()).into_owned(),
            host: String::new(),
            clock_pair: None,
        };
        let mut m = m;
        if !c.is_bad() && !c.at_end() {
            m.host = String::from_utf8_lossy(c.bytes()).into_owned();
            if c.varint() == 1 {
                let (wall_ns, session_ns, uncertainty_ns) = (c.varint(), c.varint(), c.varint());
                m.clock_pair = Some(ClockPair { wall_ns, session_ns, uncertainty_ns });
            }
        }
        (!c.is_bad()).then_some(m)
    }
}

/// The header of the file holding `meta`, followed by its copy chunk.
pub fn file_header(meta: &Meta) -> Vec<u8> {
    let m = meta.encode();
    let mut out = Vec::with_capacity(2 * m.len() + 60);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&VERSION.to_le_bytes());
    out.extend_from_slice(&(m.len() as u32).to_le_bytes());
    out.extend_from_slice(&m);
    out.extend_from_slice(&crc32fast::hash(&out[MAGIC.len()..]).to_le_bytes());
    let mut copy = Vec::with_capacity(m.len() + 4);
    copy.extend_from_slice(&VERSION.to_le_bytes());
    copy.extend_from_slice(&m);
    ChunkHeader::write(COPY_LOCATION, 0, 0, &copy, &mut out);
    out
}

/// The header checksum stored after the meta: of the meta alone before [`COPY_VERSION`], of
/// the version, length and meta since. `fixed` is the header's first 16 bytes.
pub fn header_crc(version: u32, fixed: &[u8; 16], meta: &[u8]) -> u32 {
    if version < COPY_VERSION {
        return crc32fast::hash(meta);
    }
    let mut h = crc32fast::Hasher::new();
    h.update(&fixed[MAGIC.len()..]);
    h.update(meta);
    h.finalize()
}

/// The version and meta held by a copy chunk's (checksum-verified) payload.
pub fn parse_copy(payload: &[u8]) -> Option<(u32, Meta)> {
    let (version, meta) = payload.split_first_chunk::<4>()?;
    Some((u32::from_le_bytes(*version), Meta::decode(meta)?))
}

/// A decoded chunk header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChunkHeader {
    /// Location the chunk belongs to.
    pub location: u32,
    /// Sequence number of its first record.
    pub first_seq: u64,
    /// Number of records.
    pub records: u32,
    /// Payload length.
    pub payload_len: u32,
    /// Expected CRC-32 of the header fields and payload.
    pub crc: u32,
}

impl ChunkHeader {
    /// Appends the header and `payload` to `out`.
    pub fn write(location: u32, first_seq: u64, records: u32, payload: &[u8], out: &mut Vec<u8>) {
        let start = out.len();
        out.extend_from_slice(CHUNK_MAGIC);
        out.extend_from_slice(&location.to_le_bytes());
        out.extend_from_slice(&first_seq.to_le_bytes());
        out.extend_from_slice(&records.to_le_bytes());
        out.extend_from_slice(&(payload.len() as u32).to_le_bytes());
        let mut h = crc32fast::Hasher::new();
        h.update(&out[start + 4..]);
        h.update(payload);
        out.extend_from_slice(&h.finalize().to_le_bytes());
        out.extend_from_slice(payload);
    }

    /// Parses a header; `Err` names what is wrong.
    pub fn parse(b: &[u8; CHUNK_HEADER]) -> Result<Self, &'static str> {
        if &b[..4] != CHUNK_MAGIC {
            return Err("bad chunk magic");
        }
        let u32_at = |i: usize| u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
        let mut seq = [0u8; 8];
        seq.copy_from_slice(&b[8..16]);
        let h = Self {
            location: u32_at(4),
            first_seq: u64::from_le_bytes(seq),
            records: u32_at(16),
            payload_len: u32_at(20),
            crc: u32_at(24),
        };
        if h.payload_len > MAX_PAYLOAD {
            return Err("chunk payload length is implausibly large");
        }
        Ok(h)
    }

    /// True when `payload` matches the header's checksum.
    pub fn check(&self, raw_header: &[u8; CHUNK_HEADER], payload: &[u8]) -> bool {
        let mut h = crc32fast::Hasher::new();
        h.update(&raw_header[4..24]);
        h.update(payload);
        h.finalize() == self.crc
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta() -> Meta {
        Meta {
            command: vec!["python3".into(), "train.py".into()],
            sources: vec!["scripted".into()],
            sinks: vec!["archive".into()],
            start_time: 5,
            codec_version: 1,
            writer: "test".into(),
            host: "node-1".into(),
            clock_pair: Some(ClockPair { wall_ns: 1 << 60, session_ns: 77, uncertainty_ns: 3 }),
        }
    }

    #[test]
    fn the_session_facts_round_trip_and_older_metas_read_without_them() {
        let m = meta();
        assert_eq!(Meta::decode(&m.encode()), Some(m.clone()));
        // A meta written before the host and the clock pair were kept ends after `writer`.
        let old = Meta { host: String::new(), clock_pair: None, ..m };
        let mut bytes = old.encode();
        bytes.truncate(bytes.len() - 2);
        assert_eq!(Meta::decode(&bytes), Some(old));
    }

    #[test]
    fn a_reader_of_the_older_fields_finds_them_unmoved() {
        let m = meta();
        let short = Meta { host: String::new(), clock_pair: None, ..m.clone() }.encode();
        let full = m.encode();
        assert_eq!(&full[..short.len() - 2], &short[..short.len() - 2]);
    }

    #[test]
    fn host_names_are_printable_and_bounded() {
        assert_eq!(clean_host(b"node-7\n"), "node-7");
        assert_eq!(clean_host(b"a\x1b[31mb"), "a?[31mb");
        assert_eq!(clean_host(&[b'x'; 1000]).len(), MAX_HOST);
        assert_eq!(clean_host(b""), "localhost");
        assert!(!host_name().is_empty());
    }

    #[test]
    fn a_clock_pair_is_read_within_its_uncertainty() {
        let p = ClockPair::now();
        assert!(p.wall_ns > 1_600_000_000_000_000_000, "{p:?}");
        assert!(p.session_ns > 0 && p.uncertainty_ns < 1_000_000_000, "{p:?}");
    }
}
