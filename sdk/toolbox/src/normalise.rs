//! Address normalisation: a return address of a process becomes module + file offset (what
//! the host's symbolizer reads from the file later, even after the process is gone), or stays a virtual
//! address when no file maps it (JIT code, a broken frame chain).
//!
//! The maps come from `xpuprof_wire::maps` (the one parser of the kernel's maps text); build ids
//! are read with the `object` crate.

use std::io;
use std::path::{Path, PathBuf};

use xpuprof_sdk::model::FrameId;
use xpuprof_sdk::Emitter;
use xpuprof_wire::maps::{self, Mapping};

use crate::Interner;

/// The executable mappings of one process, sorted by address.
#[derive(Debug, Clone, Default)]
pub struct ModuleMap {
    maps: Vec<Mapping>,
}

impl ModuleMap {
    /// A map of `mappings` (any order; only executable ones are kept).
    pub fn new(mut mappings: Vec<Mapping>) -> Self {
        mappings.retain(|m| m.exec);
        mappings.sort_by_key(|m| m.start);
        Self { maps: mappings }
    }

    /// Reads `/proc/<pid>/maps` (fails when the process is gone).
    pub fn read(pid: u32) -> io::Result<Self> {
        let text = std::fs::read_to_string(format!("/proc/{pid}/maps"))?;
        if text.is_empty() {
            return Err(io::Error::new(
                io::ErrorKind::NotFound,
                format!("process {pid} has no maps (exited)"),
            ));
        }
        Ok(Self::new(maps::parse(&text)))
    }

    /// The mapping containing `addr`.
    pub fn find(&self, addr: u64) -> Option<&Mapping> {
        let i = self.maps.partition_point(|m| m.start <= addr);
        self.maps[..i].last().filter(|m| addr < m.end)
    }

    /// The file mapping containing `addr` and the file offset of `addr` in it.
    pub fn file_offset(&self, addr: u64) -> Option<(&Mapping, u64)> {
        self.find(addr).filter(|m| m.is_file()).map(|m| (m, m.file_offset(addr)))
    }
}

/// The path to open for a file that `pid` maps: through `/proc/<pid>/root` so that files of
/// processes in other mount namespaces (containers) are found, falling back to the plain path.
pub fn openable_path(pid: u32, path: &str) -> PathBuf {
    let via_root = PathBuf::from(format!("/proc/{pid}/root{path}"));
    if via_root.exists() {
        via_root
    } else {
        Path::new(path).to_path_buf()
    }
}

/// The GNU build id of the ELF file at `path` (its `NT_GNU_BUILD_ID` note of owner `GNU`), empty
/// when it has none or cannot be read. Read with `object`, only the headers and notes: blazesym
/// 0.2's reader takes any note of type 3, and a library without a build id but with SystemTap
/// probes (`NT_STAPSDT` is 3 too) got a probe's descriptor as its build id.
pub fn build_id(path: &Path) -> Vec<u8> {
    use object::Object;
    let Ok(file) = std::fs::File::open(path) else { return Vec::new() };
    let cache = object::ReadCache::new(file);
    match object::File::parse(&cache).map(|elf| elf.build_id()) {
        Ok(Ok(Some(id))) => id.to_vec(),
        _ => Vec::new(),
    }
}

/// The frame of return address `ra` of process `pid` (the call instruction, `ra - 1`, is what
/// is normalised): a file-offset frame in the module mapping it (its build id read on first use
/// through `/proc/<pid>/root`), else a virtual frame the host normalises if it can.
pub fn return_address_frame(
    int: &mut Interner,
    em: &mut Emitter,
    pid: u32,
    maps: &ModuleMap,
    ra: u64,
) -> FrameId {
    let addr = ra.saturating_sub(1);
    match maps.file_offset(addr) {
        Some((m, offset)) => {
            let module = int.module(em, &m.path, || build_id(&openable_path(pid, &m.path)));
            int.file_frame(em, module, offset)
        }
        None => int.virtual_frame(em, pid, addr),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mapping(start: u64, end: u64, offset: u64, path: &str) -> Mapping {
        Mapping { start, end, offset, exec: true, path: path.into() }
    }

    #[test]
    fn finds_file_offsets_and_leaves_anonymous_code_virtual() {
        let m = ModuleMap::new(vec![
            mapping(0x7000, 0x8000, 0, ""),
            mapping(0x1000, 0x2000, 0x3000, "/usr/bin/app"),
            Mapping { exec: false, ..mapping(0x2000, 0x3000, 0, "/usr/bin/app") },
        ]);
        assert_eq!(m.file_offset(0x1010).map(|(m, o)| (m.path.as_str(), o)), Some(("/usr/bin/app", 0x3010)));
        assert!(m.find(0x2500).is_none(), "not executable");
        assert!(m.file_offset(0x7010).is_none(), "anonymous");
        assert!(m.find(0x1fff).is_some() && m.find(0x2000).is_none());
    }

    #[test]
    fn reads_this_process_and_its_build_id() {
        let m = ModuleMap::read(std::process::id()).unwrap();
        let here = reads_this_process_and_its_build_id as *const () as u64;
        let (file, _) = m.file_offset(here).expect("this code is file-backed");
        let exe = std::env::current_exe().unwrap();
        assert_eq!(std::fs::canonicalize(&file.path).unwrap(), std::fs::canonicalize(&exe).unwrap());
        assert!(build_id(&exe).len() >= 8, "rust test binaries carry a GNU build id");
        assert!(build_id(Path::new("/nonexistent")).is_empty());
        assert!(ModuleMap::read(u32::MAX).is_err());
    }

    /// A program with a SystemTap probe note: type 3 (as `NT_GNU_BUILD_ID`), owner `stapsdt`,
    /// a 12-byte descriptor starting with the probe's address.
    const PROBE_C: &str = r#"
__asm__(".pushsection .note.stapsdt,\"?\",\"note\"\n.balign 4\n"
        ".4byte 8, 12, 3\n.asciz \"stapsdt\"\n.balign 4\n"
        ".8byte 0x1122334455667788\n.4byte 0x99aabbcc\n.popsection");
int main(void) { return 0; }
"#;

    /// [`PROBE_C`] built by `cc` with the linker's build id option `build_id`.
    fn with_stapsdt_note(dir: &Path, build_id: &str) -> PathBuf {
        let src = dir.join("probe.c");
        std::fs::write(&src, PROBE_C).unwrap();
        let out = dir.join(format!("probe-{build_id}"));
        let status = std::process::Command::new("cc")
            .arg(&src)
            .arg("-o")
            .arg(&out)
            .arg(format!("-Wl,--build-id={build_id}"))
            .status()
            .expect("failed to run cc (the C compiler Rust links with)");
        assert!(status.success(), "cc failed on {}", src.display());
        out
    }

    #[test]
    fn build_ids_are_only_gnu_build_id_notes() {
        let dir = std::env::temp_dir().join(format!("xpuprof-build-id-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let probe = [0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11];
        assert_eq!(
            build_id(&with_stapsdt_note(&dir, "none")),
            Vec::<u8>::new(),
            "a probe note is no build id"
        );
        let id = build_id(&with_stapsdt_note(&dir, "sha1"));
        assert_eq!(id.len(), 20, "{id:02x?}");
        assert!(!id.starts_with(&probe));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
