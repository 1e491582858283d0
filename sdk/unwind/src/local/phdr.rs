//! The loaded modules, from `dl_iterate_phdr`: code range and unwind sections of each, in place.

use std::ffi::CStr;
use std::ops::Range;
use std::os::raw::{c_int, c_void};

use framehop::{ExplicitModuleSectionInfo, Module};
use gimli::{BaseAddresses, EhFrameHdr, LittleEndian, Pointer};

use super::Mem;

/// One loaded object.
pub(super) struct Found {
    name: String,
    /// Load bias (`dlpi_addr`): address = bias + vaddr.
    bias: u64,
    /// Executable segments, as addresses.
    pub code: Range<u64>,
    /// `.eh_frame_hdr` and `.eh_frame`, as addresses with the bytes readable there.
    hdr: Option<Range<u64>>,
    eh_frame: Option<Range<u64>>,
}

impl Found {
    /// The framehop module (sections as slices of the mapped image).
    pub fn into_module(self) -> Module<Mem> {
        let svma = |r: &Range<u64>| r.start - self.bias..r.end - self.bias;
        let info = ExplicitModuleSectionInfo {
            base_svma: 0,
            text_svma: Some(svma(&self.code)),
            eh_frame_hdr_svma: self.hdr.as_ref().map(svma),
            eh_frame_hdr: self.hdr.as_ref().map(mem),
            eh_frame_svma: self.eh_frame.as_ref().map(svma),
            eh_frame: self.eh_frame.as_ref().map(mem),
            ..Default::default()
        };
        Module::new(self.name, self.code.clone(), self.bias, info)
    }
}

fn mem(r: &Range<u64>) -> Mem {
    // SAFETY: `r` lies inside a PT_LOAD segment's file-backed part of a loaded object, mapped
    // readable for as long as the object stays loaded. A module is replaced when the loader's
    // unload counter changes; an object whose code is on the stack being walked cannot be
    // unloaded during that walk.
    Mem(unsafe { std::slice::from_raw_parts(r.start as *const u8, (r.end - r.start) as usize) })
}

/// The loader's (objects loaded, objects unloaded) counters.
pub(super) fn counters() -> (u64, u64) {
    let mut c = (0u64, 0u64);
    extern "C" fn first(info: *mut libc::dl_phdr_info, _size: usize, data: *mut c_void) -> c_int {
        // SAFETY: the loader passes a valid info for the duration of the call; `data` is the
        // `(u64, u64)` below.
        let (info, c) = unsafe { (&*info, &mut *(data as *mut (u64, u64))) };
        *c = (info.dlpi_adds, info.dlpi_subs);
        1
    }
    // SAFETY: `first` only reads the info and writes `c`, which outlives the call.
    unsafe { libc::dl_iterate_phdr(Some(first), &mut c as *mut (u64, u64) as *mut c_void) };
    c
}

/// Every loaded object with executable code.
pub(super) fn modules() -> Vec<Found> {
    let mut out: Vec<Found> = Vec::new();
    extern "C" fn each(info: *mut libc::dl_phdr_info, _size: usize, data: *mut c_void) -> c_int {
        // SAFETY: as in `counters`; `data` is the Vec below.
        let (info, out) = unsafe { (&*info, &mut *(data as *mut Vec<Found>)) };
        if let Some(f) = found(info) {
            out.push(f);
        }
        0
    }
    // SAFETY: `each` reads the info and pushes to `out`, which outlives the call.
    unsafe { libc::dl_iterate_phdr(Some(each), &mut out as *mut Vec<Found> as *mut c_void) };
    out
}

fn found(info: &libc::dl_phdr_info) -> Option<Found> {
    if info.dlpi_phdr.is_null() {
        return None;
    }
    // SAFETY: the loader's program header table has `dlpi_phnum` entries.
    let phdrs = unsafe { std::slice::from_raw_parts(info.dlpi_phdr, info.dlpi_phnum as usize) };
    let bias = info.dlpi_addr;
    let loads: Vec<Range<u64>> = phdrs
        .iter()
        .filter(|p| p.p_type == libc::PT_LOAD)
        .map(|p| bias.wrapping_add(p.p_vaddr)..bias.wrapping_add(p.p_vaddr + p.p_filesz))
        .collect();
    let code = phdrs
        .iter()
        .filter(|p| p.p_type == libc::PT_LOAD && p.p_flags & libc::PF_X != 0)
        .map(|p| bias.wrapping_add(p.p_vaddr)..bias.wrapping_add(p.p_vaddr + p.p_memsz))
        .reduce(|a, b| a.start.min(b.start)..a.end.max(b.end))?;
    let name = if info.dlpi_name.is_null() {
        String::new()
    } else {
        // SAFETY: the loader's name is a NUL-terminated string valid during the callback.
        unsafe { CStr::from_ptr(info.dlpi_name) }.to_string_lossy().into_owned()
    };
    let hdr = phdrs.iter().find(|p| p.p_type == libc::PT_GNU_EH_FRAME).and_then(|p| {
        let start = bias.wrapping_add(p.p_vaddr);
        within(&loads, start..start + p.p_memsz)
    });
    let eh_frame = hdr.as_ref().and_then(|h| eh_frame_of(h, &loads));
    Some(Found { name, bias, code, hdr: hdr.filter(|_| eh_frame.is_some()), eh_frame })
}

/// `r` when it lies inside one of the loaded segments.
fn within(loads: &[Range<u64>], r: Range<u64>) -> Option<Range<u64>> {
    loads.iter().any(|l| l.start <= r.start && r.end <= l.end).then_some(r)
}

/// `.eh_frame` from the pointer in `.eh_frame_hdr`, up to the end of its segment (the FDEs the
/// index points at are inside it; nothing past the segment is read).
fn eh_frame_of(hdr: &Range<u64>, loads: &[Range<u64>]) -> Option<Range<u64>> {
    let bytes = mem(hdr);
    let bases = BaseAddresses::default().set_eh_frame_hdr(hdr.start);
    let parsed = EhFrameHdr::new(&bytes, LittleEndian).parse(&bases, 8).ok()?;
    let Pointer::Direct(start) = parsed.eh_frame_ptr() else { return None };
    let seg = loads.iter().find(|l| l.start <= start && start < l.end)?;
    Some(start..seg.end)
}
