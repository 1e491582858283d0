//! The unwind sections of an ELF file on disk, for stacks of other processes.

use std::ops::{Deref, Range};
use std::path::Path;
use std::sync::Arc;

use object::{Object, ObjectSection, ObjectSegment, ReadCache};

/// Section bytes shared by every process that maps the file.
#[derive(Debug, Clone, Default)]
pub struct Bytes(Arc<[u8]>);

impl Deref for Bytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.0
    }
}

/// One loadable segment: its file range and its address in the file's own layout.
#[derive(Debug, Clone)]
struct Segment {
    offset: u64,
    file_size: u64,
    vaddr: u64,
}

/// What the unwinder needs of one ELF file.
#[derive(Debug, Default)]
pub(crate) struct Image {
    segments: Vec<Segment>,
    pub text: Option<Range<u64>>,
    pub eh_frame: Option<(Range<u64>, Bytes)>,
    pub eh_frame_hdr: Option<(Range<u64>, Bytes)>,
    pub debug_frame: Option<Bytes>,
}

impl Image {
    /// Reads the sections of the file at `path` (only the parts needed: headers and unwind
    /// sections, not the whole file).
    pub fn open(path: &Path) -> Option<Image> {
        let file = std::fs::File::open(path).ok()?;
        let cache = ReadCache::new(file);
        let obj = object::File::parse(&cache).ok()?;
        Some(Self::from_object(&obj))
    }

    /// Reads the sections of an ELF image held in memory (the vDSO).
    pub fn parse(bytes: &[u8]) -> Option<Image> {
        let obj = object::File::parse(bytes).ok()?;
        Some(Self::from_object(&obj))
    }

    fn from_object<'d, R: object::ReadRef<'d>>(obj: &object::File<'d, R>) -> Image {
        let section = |name: &str| {
            let s = obj.section_by_name(name)?;
            let data = s.data().ok()?;
            Some((s.address()..s.address() + s.size(), Bytes(Arc::from(data))))
        };
        let segments = obj
            .segments()
            .map(|s| {
                let (offset, file_size) = s.file_range();
                Segment { offset, file_size, vaddr: s.address() }
            })
            .collect();
        Image {
            segments,
            text: obj.section_by_name(".text").map(|s| s.address()..s.address() + s.size()),
            eh_frame: section(".eh_frame"),
            eh_frame_hdr: section(".eh_frame_hdr"),
            debug_frame: section(".debug_frame").map(|(_, b)| b),
        }
    }

    /// The load bias of a mapping of this file at `start` from file offset `offset`
    /// (address = bias + the file's own virtual address).
    pub fn bias(&self, start: u64, offset: u64) -> Option<u64> {
        // The mapping starts at the page of the segment that created it (segments may share
        // a page at their boundary, so containment alone can pick the one before).
        let seg = self.segments.iter().find(|s| s.offset & !0xfff == offset).or_else(|| {
            self.segments.iter().find(|s| s.offset & !0xfff <= offset && offset < s.offset + s.file_size)
        })?;
        Some(start.wrapping_sub(seg.vaddr).wrapping_add(seg.offset).wrapping_sub(offset))
    }
}

/// This process's vDSO image (the same code every process on this kernel maps).
pub(crate) fn own_vdso() -> Option<Image> {
    // SAFETY: getauxval has no preconditions.
    let base = unsafe { libc::getauxval(libc::AT_SYSINFO_EHDR) };
    if base == 0 {
        return None;
    }
    let maps = std::fs::read_to_string("/proc/self/maps").ok()?;
    let vdso = xpuprof_wire::maps::parse(&maps).into_iter().find(|m| m.path == "[vdso]")?;
    let (s, e) = (vdso.start, vdso.end);
    if s != base || e <= s {
        return None;
    }
    // SAFETY: `[s, e)` is this process's vDSO mapping (readable, never unmapped).
    let bytes = unsafe { std::slice::from_raw_parts(s as *const u8, (e - s) as usize) };
    Image::parse(bytes)
}
