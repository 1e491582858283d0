//! Memory maps of the target's processes, read from `/proc/<pid>/maps` while they are alive and
//! cached so that samples of a process that has exited still normalise.

use std::cell::Cell;
use std::io;
use std::sync::Arc;

use xpuprof_sdk::hash::IdMap;

/// One file-backed or anonymous mapping: the wire crate's, with a shared path (stack caches
/// compare paths by pointer).
pub type Mapping = xpuprof_wire::maps::Mapping<Arc<str>>;

/// A snapshot of one process's maps, sorted by address.
#[derive(Debug, Clone, Default)]
pub struct ProcMaps {
    mappings: Vec<Mapping>,
    /// Index of the last mapping found: consecutive frames are mostly in the same file.
    hint: Cell<usize>,
}

impl ProcMaps {
    /// Reads `/proc/<pid>/maps`.
    ///
    /// Fails for a process that has started to exit: while its address space is torn down a
    /// read can see only part of it (recent kernels read maps without the mmap lock), so such a
    /// snapshot would be wrong; the mappings the kernel sends at exit are used instead.
    pub fn read(pid: u32) -> io::Result<Self> {
        let text = std::fs::read_to_string(format!("/proc/{pid}/maps"))?;
        // A zombie (exited, not yet reaped) shows no maps.
        if text.is_empty() || is_exiting(pid) {
            return Err(io::Error::from_raw_os_error(libc::ESRCH));
        }
        Ok(Self::parse(&text))
    }

    /// Parses the text of a maps file; malformed lines are skipped.
    pub fn parse(text: &str) -> Self {
        let mut mappings: Vec<Mapping> = text.lines().filter_map(parse_line).collect();
        mappings.sort_by_key(|m| m.start);
        Self { mappings, hint: Cell::new(0) }
    }

    /// The mapping containing `addr`.
    pub fn find(&self, addr: u64) -> Option<&Mapping> {
        if let Some(m) = self.mappings.get(self.hint.get()) {
            if m.start <= addr && addr < m.end {
                return Some(m);
            }
        }
        let i = self.mappings.partition_point(|m| m.start <= addr);
        let found = self.mappings[..i].last().filter(|m| addr < m.end);
        if found.is_some() {
            self.hint.set(i - 1);
        }
        found
    }

    /// Adds `m`, replacing the mappings it overlaps.
    pub fn insert(&mut self, m: Mapping) {
        self.mappings.retain(|o| o.end <= m.start || o.start >= m.end);
        let at = self.mappings.partition_point(|o| o.start < m.start);
        self.mappings.insert(at, m);
    }

    /// Every mapping, by address.
    pub fn iter(&self) -> impl Iterator<Item = &Mapping> {
        self.mappings.iter()
    }

    /// Executable mappings of regular files, one per distinct path.
    pub fn exec_files(&self) -> impl Iterator<Item = &Mapping> {
        let mut seen = std::collections::HashSet::new();
        self.mappings.iter().filter(move |m| m.exec && m.is_file() && seen.insert(m.path.clone()))
    }
}

/// `PF_EXITING` in the task flags: set when `do_exit` starts, before the address space goes.
const PF_EXITING: u64 = 0x4;

/// True when `pid` has started to exit or is gone (flags are field 9 of `/proc/<pid>/stat`).
fn is_exiting(pid: u32) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else { return true };
    // The command name (field 2) is in parentheses and may contain spaces: skip past it.
    let fields = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    let flags = fields.split_whitespace().nth(6).and_then(|f| f.parse::<u64>().ok());
    flags.is_none_or(|f| f & PF_EXITING != 0)
}

/// One line, with the parser every source and agent shares.
fn parse_line(line: &str) -> Option<Mapping> {
    Some(xpuprof_wire::maps::parse_line(line)?.map_path(Arc::from))
}

/// Snapshots of one process: the current image and, after an exec, the one before it.
#[derive(Debug, Default)]
struct PidMaps {
    current: ProcMaps,
    /// Session-clock time the snapshot was read.
    read_at: u64,
    /// Maps before the last exec, and when that exec happened.
    before_exec: Option<(u64, ProcMaps)>,
    /// The last attempt to read the maps failed: the process has exited.
    gone: bool,
    /// Changes with every change of `current` (for caches built from it).
    generation: u64,
}

/// Per-process cache of maps snapshots.
#[derive(Debug, Default)]
pub struct MapsCache {
    pids: IdMap<u32, PidMaps>,
}

impl MapsCache {
    /// Reads the maps of `pid` now, replacing the cached snapshot; false if the process is gone.
    pub fn refresh(&mut self, pid: u32) -> bool {
        let now = xpuprof_sdk::clock::now_ns();
        match ProcMaps::read(pid) {
            Ok(maps) => {
                let e = self.pids.entry(pid).or_default();
                e.current = maps;
                e.generation += 1;
                e.read_at = now;
                e.gone = false;
                true
            }
            Err(_) => {
                self.pids.entry(pid).or_default().gone = true;
                false
            }
        }
    }

    /// Notes that `pid` called exec at `time`: later events use fresh maps.
    pub fn exec(&mut self, pid: u32, time: u64) {
        let e = self.pids.entry(pid).or_default();
        let old = std::mem::take(&mut e.current);
        e.before_exec = Some((time, old));
        e.read_at = 0;
        e.generation += 1;
        self.refresh(pid);
    }

    /// Adds a mapping the kernel reported for `pid` as it exited (its final image).
    pub fn add_final(&mut self, pid: u32, m: Mapping) {
        let e = self.pids.entry(pid).or_default();
        e.current.insert(m);
        e.generation += 1;
    }

    /// Sets the snapshot of `pid` as if read at session time 0 (tests: a snapshot taken before
    /// the process mapped what it maps now).
    #[cfg(test)]
    pub(crate) fn set_snapshot(&mut self, pid: u32, maps: ProcMaps) {
        let e = self.pids.entry(pid).or_default();
        e.current = maps;
        e.read_at = 0;
        e.generation += 1;
    }

    /// Drops everything cached about `pid` (an exited process whose events are all handled).
    pub fn forget(&mut self, pid: u32) {
        self.pids.remove(&pid);
    }

    /// Processes with cached maps.
    pub fn len(&self) -> usize {
        self.pids.len()
    }

    /// True when no process has cached maps.
    pub fn is_empty(&self) -> bool {
        self.pids.is_empty()
    }

    /// True when the maps of `pid` could not be read the last time (it has exited).
    pub fn is_gone(&self, pid: u32) -> bool {
        self.pids.get(&pid).is_some_and(|e| e.gone)
    }

    /// The cached snapshot of `pid`, if any.
    pub fn get(&self, pid: u32) -> Option<&ProcMaps> {
        self.pids.get(&pid).map(|e| &e.current)
    }

    /// The cached snapshot of `pid` and its generation (which changes whenever it does).
    pub fn get_versioned(&self, pid: u32) -> Option<(u64, &ProcMaps)> {
        self.pids.get(&pid).map(|e| (e.generation, &e.current))
    }

    /// The mapping that contained `addr` in `pid` at session time `time`.
    ///
    /// On a miss the maps are read again, but only when the snapshot is older than the event
    /// (a library mapped since), so unmapped addresses (JIT code) cost no extra reads.
    pub fn find(&mut self, pid: u32, time: u64, addr: u64) -> Option<&Mapping> {
        let stale = match self.pids.get(&pid) {
            None => true,
            Some(e) => match &e.before_exec {
                Some((exec_time, _)) if time < *exec_time => false,
                // A process whose maps could not be read has exited: reading again won't help.
                _ => !e.gone && e.read_at < time && e.current.find(addr).is_none(),
            },
        };
        if stale {
            self.refresh(pid);
        }
        self.at(pid, time)?.find(addr)
    }

    /// True when every address of `addrs` lay in a mapping of `pid` at session time `time`;
    /// on a miss the maps are read again as [`Self::find`] does.
    pub fn covers(&mut self, pid: u32, time: u64, addrs: &[u64]) -> bool {
        let first_miss = |c: &Self| match c.at(pid, time) {
            Some(m) => addrs.iter().copied().find(|&a| m.find(a).is_none()),
            None => addrs.first().copied(),
        };
        let Some(miss) = first_miss(self) else { return true };
        // Reads the maps again when they are older than the event (a library mapped since).
        self.find(pid, time, miss);
        first_miss(self).is_none()
    }

    /// The snapshot of `pid` that was current at session time `time`.
    fn at(&self, pid: u32, time: u64) -> Option<&ProcMaps> {
        let e = self.pids.get(&pid)?;
        match &e.before_exec {
            Some((exec_time, old)) if time < *exec_time => Some(old),
            _ => Some(&e.current),
        }
    }
}

pub use xpuprof_toolbox::normalise::openable_path;

#[cfg(test)]
mod tests {
    use super::*;

    const MAPS: &str = "\
55d0c0a00000-55d0c0a01000 r--p 00000000 08:01 123 /usr/bin/work
55d0c0a01000-55d0c0a02000 r-xp 00001000 08:01 123 /usr/bin/work
7f0000000000-7f0000100000 r-xp 00028000 08:01 456                        /usr/lib/libc.so.6
7f0000200000-7f0000201000 rw-p 00000000 00:00 0
7ffd00000000-7ffd00002000 r-xp 00000000 00:00 0                          [vdso]
7f0000300000-7f0000301000 r-xp 00000000 08:01 789 /tmp/gone.so (deleted)
";

    #[test]
    fn finds_mappings_and_file_offsets() {
        let m = ProcMaps::parse(MAPS);
        let libc = m.find(0x7f0000000010).unwrap();
        assert_eq!(&*libc.path, "/usr/lib/libc.so.6");
        assert_eq!(libc.file_offset(0x7f0000000010), 0x28010);
        assert!(m.find(0x7f0000100000).is_none());
        assert!(!m.find(0x7ffd00000001).unwrap().is_file());
        assert_eq!(&*m.find(0x7f0000300000).unwrap().path, "/tmp/gone.so");
        let files: Vec<_> = m.exec_files().map(|m| m.path.to_string()).collect();
        assert_eq!(files, ["/usr/bin/work", "/usr/lib/libc.so.6", "/tmp/gone.so"]);
    }

    #[test]
    fn inserted_mappings_replace_what_they_overlap() {
        let mut m = ProcMaps::parse(MAPS);
        let new =
            Mapping { start: 0x7f0000080000, end: 0x7f0000090000, offset: 0, exec: true, path: "/x".into() };
        m.insert(new);
        assert_eq!(&*m.find(0x7f0000080010).unwrap().path, "/x");
        assert!(m.find(0x7f0000000010).is_none(), "the overlapped libc mapping is gone");
        assert_eq!(&*m.find(0x55d0c0a01000).unwrap().path, "/usr/bin/work");
    }

    #[test]
    fn a_process_that_cannot_be_read_is_gone_and_keeps_reported_mappings() {
        let mut c = MapsCache::default();
        let pid = 999_999_999; // no such process
        assert!(c.find(pid, 1, 0x1800).is_none());
        assert!(c.is_gone(pid));
        c.add_final(
            pid,
            Mapping { start: 0x1000, end: 0x2000, offset: 0x3000, exec: true, path: "/lib".into() },
        );
        assert_eq!(c.find(pid, 2, 0x1800).map(|m| m.file_offset(0x1800)), Some(0x3800));
    }

    #[test]
    fn covers_says_whether_every_address_is_mapped_and_reads_again_on_a_miss() {
        let mut c = MapsCache::default();
        let pid = std::process::id();
        let here =
            covers_says_whether_every_address_is_mapped_and_reads_again_on_a_miss as fn() as usize as u64;
        // A snapshot of this process without the test binary's code, read before the event.
        let own = ProcMaps::read(pid).unwrap();
        let without: Vec<String> = own
            .iter()
            .filter(|m| !(m.start <= here && here < m.end))
            .map(|m| format!("{:x}-{:x} r-xp {:08x} 00:00 0 {}", m.start, m.end, m.offset, m.path))
            .collect();
        c.set_snapshot(pid, ProcMaps::parse(&without.join("\n")));
        assert!(c.get(pid).unwrap().find(here).is_none());
        assert!(c.covers(pid, xpuprof_sdk::clock::now_ns(), &[here]), "read again: the code is mapped");
        let gone = 999_999_998;
        c.add_final(gone, Mapping { start: 0x1000, end: 0x2000, offset: 0, exec: true, path: "/l".into() });
        assert!(c.covers(gone, 1, &[0x1800]) && c.covers(gone, 1, &[]));
        assert!(!c.covers(gone, 1, &[0x1800, 0x2800]));
        assert!(c.is_gone(gone), "the miss tried to read its maps");
    }

    #[test]
    fn a_running_process_is_not_exiting() {
        assert!(!is_exiting(std::process::id()));
        assert!(is_exiting(999_999_999));
    }

    #[test]
    fn reads_this_process() {
        let m = ProcMaps::read(std::process::id()).unwrap();
        let f = reads_this_process as fn() as usize as u64;
        assert!(m.find(f).unwrap().exec);
    }
}
