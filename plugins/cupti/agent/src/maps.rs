//! The executable mappings of this process (`/proc/self/maps`), so the host can turn return
//! addresses into module + file offset.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::RwLock;

use crate::wire;

/// One executable mapping.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mapping {
    /// First address.
    pub start: u64,
    /// One past the last address.
    pub end: u64,
    /// File offset of `start`.
    pub offset: u64,
    /// File path, empty for anonymous (JIT) code.
    pub path: String,
}

/// Parses the executable mappings out of a `/proc/<pid>/maps` text.
pub fn parse(maps: &str) -> Vec<Mapping> {
    let mut out = Vec::new();
    for line in maps.lines() {
        let mut it = line.split_whitespace();
        let (Some(range), Some(perms), Some(off)) = (it.next(), it.next(), it.next()) else { continue };
        if perms.as_bytes().get(2) != Some(&b'x') {
            continue;
        }
        let path = it.nth(2).unwrap_or("").to_owned();
        let Some((a, b)) = range.split_once('-') else { continue };
        let (Ok(start), Ok(end), Ok(offset)) =
            (u64::from_str_radix(a, 16), u64::from_str_radix(b, 16), u64::from_str_radix(off, 16))
        else {
            continue;
        };
        let path = if path.starts_with('[') { String::new() } else { path };
        out.push(Mapping { start, end, offset, path });
    }
    out
}

/// Encodes a module message.
pub fn encode(maps: &[Mapping], out: &mut Vec<u8>) {
    let at = wire::begin_message(out, wire::MSG_MODULES);
    out.extend_from_slice(&(maps.len() as u32).to_le_bytes());
    for m in maps {
        out.extend_from_slice(&m.start.to_le_bytes());
        out.extend_from_slice(&m.end.to_le_bytes());
        out.extend_from_slice(&m.offset.to_le_bytes());
        out.extend_from_slice(&(m.path.len() as u32).to_le_bytes());
        out.extend_from_slice(m.path.as_bytes());
    }
    wire::end_message(out, at);
}

/// The ranges known to the host, and whether a stack used an address outside them.
#[derive(Debug, Default)]
pub struct Known {
    ranges: RwLock<Vec<(u64, u64)>>,
    stale: AtomicBool,
}

impl Known {
    /// Re-reads `/proc/self/maps`; returns the module message to send.
    pub fn refresh(&self) -> Vec<u8> {
        let maps = parse(&std::fs::read_to_string("/proc/self/maps").unwrap_or_default());
        let mut ranges: Vec<(u64, u64)> = maps.iter().map(|m| (m.start, m.end)).collect();
        ranges.sort_unstable();
        if let Ok(mut r) = self.ranges.write() {
            *r = ranges;
        }
        self.stale.store(false, Ordering::Release);
        let mut out = Vec::new();
        encode(&maps, &mut out);
        out
    }

    /// Notes the addresses of a new stack; marks the map stale if one is outside every range.
    pub fn check(&self, addrs: &[u64]) {
        let Ok(r) = self.ranges.read() else { return };
        let outside = addrs.iter().any(|&a| {
            let i = r.partition_point(|&(s, _)| s <= a);
            i == 0 || a >= r[i - 1].1
        });
        if outside {
            self.stale.store(true, Ordering::Release);
        }
    }

    /// True (once) when a refresh is due.
    pub fn take_stale(&self) -> bool {
        self.stale.swap(false, Ordering::AcqRel)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_executable_mappings() {
        let text = "55d0-55e0 r--p 00000000 08:01 5 /usr/bin/app\n\
                    55e0-55f0 r-xp 00001000 08:01 5 /usr/bin/app\n\
                    7f00-7f10 r-xp 00000000 00:00 0 \n\
                    7fff-8000 r-xp 00000000 00:00 0 [vdso]\n";
        let m = parse(text);
        assert_eq!(m.len(), 3);
        assert_eq!(m[0], Mapping { start: 0x55e0, end: 0x55f0, offset: 0x1000, path: "/usr/bin/app".into() });
        assert_eq!(m[1].path, "");
        assert_eq!(m[2].path, "");
    }

    #[test]
    fn flags_addresses_outside_known_ranges() {
        let k = Known::default();
        *k.ranges.write().unwrap() = vec![(0x1000, 0x2000), (0x5000, 0x6000)];
        k.check(&[0x1500, 0x5fff]);
        assert!(!k.take_stale());
        k.check(&[0x1500, 0x3000]);
        assert!(k.take_stale());
        assert!(!k.take_stale());
    }
}
