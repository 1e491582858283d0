//! The target's memory map (`/proc/PID/maps`): which shared objects it has loaded, where, and
//! whether a given library is among them.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// One line of `/proc/PID/maps` that maps a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mapping {
    /// First address.
    pub start: u64,
    /// One past the last address.
    pub end: u64,
    /// Executable.
    pub exec: bool,
    /// File offset of `start`.
    pub offset: u64,
    /// Device (major, minor) of the file.
    pub dev: (u32, u32),
    /// Inode of the file.
    pub inode: u64,
    /// Path of the file, as the target sees it.
    pub path: String,
}

/// Parses the text of `/proc/PID/maps`, keeping the mappings of files.
pub fn parse(text: &str) -> Vec<Mapping> {
    text.lines().filter_map(parse_line).collect()
}

fn parse_line(line: &str) -> Option<Mapping> {
    let mut f = line.splitn(6, ' ');
    let (range, perms, offset, dev, inode) = (f.next()?, f.next()?, f.next()?, f.next()?, f.next()?);
    let path = f.next()?.trim_start();
    if !path.starts_with('/') {
        return None;
    }
    let (start, end) = range.split_once('-')?;
    let (major, minor) = dev.split_once(':')?;
    Some(Mapping {
        start: u64::from_str_radix(start, 16).ok()?,
        end: u64::from_str_radix(end, 16).ok()?,
        exec: perms.as_bytes().get(2) == Some(&b'x'),
        offset: u64::from_str_radix(offset, 16).ok()?,
        dev: (u32::from_str_radix(major, 16).ok()?, u32::from_str_radix(minor, 16).ok()?),
        inode: inode.parse().ok()?,
        path: path.trim_end_matches(" (deleted)").to_owned(),
    })
}

/// Reads `/proc/PID/maps`.
pub fn read(pid: u32) -> std::io::Result<Vec<Mapping>> {
    Ok(parse(&std::fs::read_to_string(format!("/proc/{pid}/maps"))?))
}

/// The path under which this process can read the file the target maps at `m`: the mapping
/// itself (`/proc/PID/map_files/START-END`), which is the file the target loaded even when it was
/// replaced or removed since (a rebuilt library at the same path); else the path inside the
/// target's root (`/proc/PID/root`, another mount namespace), else the path as is.
pub fn mapped_file(pid: u32, m: &Mapping) -> PathBuf {
    let proc = Path::new("/proc").join(pid.to_string());
    let exact = proc.join("map_files").join(format!("{:x}-{:x}", m.start, m.end));
    if std::fs::File::open(&exact).is_ok() {
        return exact;
    }
    let inside = proc.join("root").join(m.path.trim_start_matches('/'));
    if inside.exists() {
        inside
    } else {
        PathBuf::from(&m.path)
    }
}

/// The file name part of a path.
pub fn file_name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// The mapping at file offset 0 of `library`, if the target has loaded it: the same file
/// (device and inode), or what was at its path when the target loaded it (a library rebuilt or
/// reinstalled since: the target runs the old one, and [`mapped_file`] reads that one).
pub fn loaded<'a>(maps: &'a [Mapping], library: &Path) -> Option<&'a Mapping> {
    let meta = std::fs::metadata(library).ok();
    let id = meta.map(|m| (libc::major(m.dev()), libc::minor(m.dev()), m.ino()));
    let canonical = std::fs::canonicalize(library).unwrap_or_else(|_| library.to_path_buf());
    maps.iter().find(|m| {
        m.offset == 0
            && (id == Some((m.dev.0, m.dev.1, m.inode)) || Path::new(&m.path) == canonical.as_path())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const MAPS: &str = "\
55d0a000-55d0b000 r--p 00000000 fd:01 1234 /usr/bin/sleep
7f10a000-7f10c000 r--p 00000000 fd:01 42 /usr/lib/x86_64-linux-gnu/libc.so.6
7f10c000-7f2a0000 r-xp 00028000 fd:01 42 /usr/lib/x86_64-linux-gnu/libc.so.6
7f300000-7f301000 rw-p 00000000 00:00 0 
7ffd0000-7ffd2000 rw-p 00000000 00:00 0                          [stack]
7f400000-7f401000 r-xp 00000000 fd:01 77 /tmp/a b/lib agent.so (deleted)
";

    #[test]
    fn keeps_file_mappings_with_their_offsets() {
        let m = parse(MAPS);
        assert_eq!(m.len(), 4);
        assert_eq!(m[1].start, 0x7f10a000);
        assert_eq!((m[2].offset, m[2].exec, m[2].dev, m[2].inode), (0x28000, true, (0xfd, 1), 42));
        assert_eq!(m[3].path, "/tmp/a b/lib agent.so", "spaces kept, the deleted mark dropped");
        assert_eq!(file_name(&m[1].path), "libc.so.6");
    }
}
