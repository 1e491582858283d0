//! Memory maps: the one parser of the kernel's `/proc/<pid>/maps` text, and the
//! [`MSG_MODULES`](crate::MSG_MODULES) message that carries a process's executable mappings to the
//! host. Agents read their own maps with it; the host (the toolbox's address normaliser, the eBPF
//! source) reads its targets' maps with it, so both sides agree on every line.

use crate::{begin_message, end_message, Reader, MSG_MODULES};

/// One mapping. The path is a `String` unless its holder shares paths otherwise
/// (`Mapping<Arc<str>>`: the eBPF source's caches compare them by pointer; [`Mapping::map_path`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mapping<P = String> {
    /// First address.
    pub start: u64,
    /// One past the last address.
    pub end: u64,
    /// File offset of `start`.
    pub offset: u64,
    /// Executable.
    pub exec: bool,
    /// Path as the kernel shows it (`/usr/lib/libc.so.6`, `[vdso]`; spaces kept, a
    /// ` (deleted)` suffix removed), empty for anonymous memory.
    pub path: P,
}

impl<P: AsRef<str>> Mapping<P> {
    /// True for a mapping of a regular file (not `[vdso]`, `[heap]`, anonymous, memfd, device).
    pub fn is_file(&self) -> bool {
        let path = self.path.as_ref();
        path.starts_with('/') && !path.starts_with("/memfd:") && !path.starts_with("/dev/")
    }

    /// True when `addr` lies inside the mapping.
    pub fn contains(&self, addr: u64) -> bool {
        self.start <= addr && addr < self.end
    }

    /// File offset of `addr`, which must lie inside the mapping.
    pub fn file_offset(&self, addr: u64) -> u64 {
        addr - self.start + self.offset
    }

    /// The same mapping with its path turned into another type.
    pub fn map_path<Q>(self, f: impl FnOnce(P) -> Q) -> Mapping<Q> {
        Mapping { start: self.start, end: self.end, offset: self.offset, exec: self.exec, path: f(self.path) }
    }
}

/// Parses one line of a maps file (`start-end perms offset dev inode [path]`); `None` for a
/// malformed line.
pub fn parse_line(line: &str) -> Option<Mapping> {
    let mut it = line.splitn(6, ' ');
    let (range, perms, offset) = (it.next()?, it.next()?, it.next()?);
    let _dev = it.next()?;
    let _inode = it.next()?;
    // The path is padded with spaces to a column and may itself contain spaces.
    let path = it.next().unwrap_or("").trim_start();
    let path = path.strip_suffix(" (deleted)").unwrap_or(path);
    let (start, end) = range.split_once('-')?;
    Some(Mapping {
        start: u64::from_str_radix(start, 16).ok()?,
        end: u64::from_str_radix(end, 16).ok()?,
        offset: u64::from_str_radix(offset, 16).ok()?,
        exec: perms.as_bytes().get(2) == Some(&b'x'),
        path: path.to_owned(),
    })
}

/// Every well-formed mapping of a maps text, in the file's (address) order.
pub fn parse(text: &str) -> Vec<Mapping> {
    text.lines().filter_map(parse_line).collect()
}

/// Appends a [`MSG_MODULES`] message with the executable mappings among `maps`; pseudo-paths
/// (`[vdso]`) are sent as anonymous.
pub fn encode_modules(maps: &[Mapping], out: &mut Vec<u8>) {
    let at = begin_message(out, MSG_MODULES);
    let count_at = out.len();
    out.extend_from_slice(&0u32.to_le_bytes());
    let mut n = 0u32;
    for m in maps.iter().filter(|m| m.exec) {
        let path = if m.path.starts_with('[') { "" } else { m.path.as_str() };
        out.extend_from_slice(&m.start.to_le_bytes());
        out.extend_from_slice(&m.end.to_le_bytes());
        out.extend_from_slice(&m.offset.to_le_bytes());
        out.extend_from_slice(&(path.len() as u32).to_le_bytes());
        out.extend_from_slice(path.as_bytes());
        n += 1;
    }
    out[count_at..count_at + 4].copy_from_slice(&n.to_le_bytes());
    end_message(out, at);
}

/// Reads a [`MSG_MODULES`] payload: executable mappings sorted by address (a truncated entry
/// ends the list).
pub fn decode_modules(payload: &[u8]) -> Vec<Mapping> {
    let mut r = Reader::new(payload);
    let n = r.u32();
    let mut maps = Vec::with_capacity((n as usize).min(1 << 16));
    for _ in 0..n {
        let (start, end, offset, len) = (r.u64(), r.u64(), r.u64(), r.u32());
        let path = String::from_utf8_lossy(r.bytes(len as usize)).into_owned();
        if r.short {
            break;
        }
        maps.push(Mapping { start, end, offset, exec: true, path });
    }
    maps.sort_by_key(|m| m.start);
    maps
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::split_messages;

    const TEXT: &str = "55d0-55e0 r--p 00000000 08:01 5                          /usr/bin/app\n\
                        55e0-55f0 r-xp 00001000 08:01 5                          /usr/bin/app\n\
                        7e00-7e10 r-xp 00002000 08:01 6                          /opt/my dir/lib x.so (deleted)\n\
                        7f00-7f10 r-xp 00000000 00:00 0 \n\
                        7fff-8000 r-xp 00000000 00:00 0                          [vdso]\n\
                        garbage\n";

    #[test]
    fn parses_paths_with_spaces_and_pseudo_paths() {
        let m = parse(TEXT);
        assert_eq!(m.len(), 5);
        assert_eq!(
            m[1],
            Mapping { start: 0x55e0, end: 0x55f0, offset: 0x1000, exec: true, path: "/usr/bin/app".into() }
        );
        assert!(!m[0].exec);
        assert_eq!(m[2].path, "/opt/my dir/lib x.so");
        assert_eq!((m[3].path.as_str(), m[3].is_file()), ("", false));
        assert_eq!((m[4].path.as_str(), m[4].is_file()), ("[vdso]", false));
        assert_eq!(m[1].file_offset(0x55e8), 0x1008);
    }

    #[test]
    fn modules_message_round_trips_executable_mappings() {
        let mut b = Vec::new();
        encode_modules(&parse(TEXT), &mut b);
        let (msgs, _) = split_messages(&b);
        let back = decode_modules(msgs[0].payload);
        let paths: Vec<&str> = back.iter().map(|m| m.path.as_str()).collect();
        assert_eq!(paths, ["/usr/bin/app", "/opt/my dir/lib x.so", "", ""]);
    }
}
