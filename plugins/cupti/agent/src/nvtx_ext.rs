//! NVTX's extension modules as the agent's injection receives them: the payload extension's
//! schema and enumeration registrations are kept ([`crate::payload_schemas`]), so the extended
//! payloads of the ranges a library pushes (NCCL's message size and communicator,
//! [`crate::nccl`]) can be read.
//!
//! NVTX loads an extension (`nvToolsExtPayload.h` and the others) at its first call: it opens
//! the same injection library as for its core calls (`NVTX_INJECTION64_PATH`, this agent) and
//! calls `InitializeInjectionNvtxExtension` with the module's description (`nvtxExtModuleInfo_t`:
//! module id, compatibility id, segments of function slots indexed by the extension's callback
//! ids); the injection writes its functions into the slots, and slots left empty become no-ops.
//! Every copy of NVTX compiled into the process (NCCL's, PyTorch's) has its own slots and calls
//! this once.
//!
//! CUPTI has its own `InitializeInjectionNvtxExtension`: the module is handed to it first, as
//! without xpuprof, and the agent then takes the two registration slots of the payload module,
//! keeping CUPTI's functions there to call after its own (their result, CUPTI's schema id, is
//! the one returned). Other modules are CUPTI's alone.

use std::os::raw::{c_int, c_void};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;

use crate::payload_schemas::{self as schemas, EnumAttr, Registry, SchemaAttr};

/// `nvtxExtModuleSegment_t`.
#[repr(C)]
#[derive(Debug)]
pub struct ModuleSegment {
    /// Segment id.
    pub segment_id: usize,
    /// Slots in `slots`.
    pub slot_count: usize,
    /// The function slots, indexed by the extension's callback ids.
    pub slots: *mut isize,
}

/// `nvtxExtModuleInfo_t`.
#[repr(C)]
#[derive(Debug)]
pub struct ModuleInfo {
    /// NVTX version.
    pub nvtx_ver: u16,
    /// Size of this struct.
    pub struct_size: u16,
    /// Which extension (`NVTX_EXT_*_MODULEID`).
    pub module_id: u16,
    /// Its compatibility id (`NVTX_EXT_*_COMPATID`).
    pub compat_id: u16,
    /// Segments in `segments`.
    pub segments_count: usize,
    /// The segments.
    pub segments: *mut ModuleSegment,
    /// The extension's export function, or null.
    pub get_export_function: *const c_void,
    /// Extension information (the payload extension's type sizes).
    pub ext_info: *const c_void,
}

/// `NVTX_EXT_PAYLOAD_MODULEID`.
const PAYLOAD_MODULE: u16 = 2;
/// The payload extension's compatibility ids of version 1 (`0x0103` today).
const PAYLOAD_COMPAT_MAJOR: u16 = 0x01;
/// `NVTX3EXT_CBID_nvtxPayloadSchemaRegister` and `..EnumRegister`: slot indexes.
const SLOT_SCHEMA: usize = 0;
const SLOT_ENUM: usize = 1;
/// `NVTX_EXTENSION_FRESH` and `NVTX_EXTENSION_DISABLED`: a slot without a function.
const FRESH: isize = 0;
const DISABLED: isize = 1;

type InitExtension = unsafe extern "C" fn(*mut ModuleInfo) -> c_int;
type SchemaRegister = unsafe extern "C" fn(*const c_void, *const SchemaAttr) -> u64;
type EnumRegister = unsafe extern "C" fn(*const c_void, *const EnumAttr) -> u64;

/// CUPTI's registration functions, called after the agent's (0: none).
static CUPTI_SCHEMA: AtomicUsize = AtomicUsize::new(0);
static CUPTI_ENUM: AtomicUsize = AtomicUsize::new(0);

/// Called by NVTX when it loads an extension module (see the module's documentation).
///
/// # Safety
/// `info` is null or NVTX's module description, its segments and slots writable for the call.
#[no_mangle]
pub unsafe extern "C" fn InitializeInjectionNvtxExtension(info: *mut ModuleInfo) -> c_int {
    // SAFETY: the caller's contract.
    std::panic::catch_unwind(|| unsafe { initialize(info) }).unwrap_or(0)
}

/// CUPTI's `InitializeInjectionNvtxExtension`, when it has one (looked up once).
fn cupti_init(path: &str) -> Option<InitExtension> {
    static LIB: OnceLock<Option<(libloading::Library, Option<InitExtension>)>> = OnceLock::new();
    let entry = LIB.get_or_init(|| {
        // SAFETY: the agent loaded this CUPTI already; loading it again takes a reference.
        let lib = unsafe { libloading::Library::new(path) }.ok()?;
        // SAFETY: CUPTI exports it with NVTX's `NvtxExtInitializeInjectionFunc_t` signature.
        let f = unsafe { lib.get::<InitExtension>(b"InitializeInjectionNvtxExtension\0") }.ok().map(|s| *s);
        Some((lib, f))
    });
    entry.as_ref().and_then(|(_, f)| *f)
}

/// # Safety
/// As [`InitializeInjectionNvtxExtension`].
unsafe fn initialize(info: *mut ModuleInfo) -> c_int {
    crate::ensure_started();
    let Some(a) = crate::agent() else { return 0 };
    if !a.config.opts.nvtx || info.is_null() {
        return 0;
    }
    // SAFETY: NVTX's module description, forwarded unchanged as CUPTI expects.
    let status = cupti_init(&a.lib.path).map_or(0, |f| unsafe { f(info) });
    // SAFETY: the caller's contract: a valid module description.
    let m = unsafe { &*info };
    if m.module_id != PAYLOAD_MODULE || m.compat_id >> 8 != PAYLOAD_COMPAT_MAJOR {
        return status;
    }
    if m.segments_count < 1 || m.segments.is_null() {
        return status;
    }
    // SAFETY: `segments_count` segments at `segments`.
    let segments = unsafe { std::slice::from_raw_parts(m.segments, m.segments_count) };
    let Some(first) = segments.first().filter(|s| s.slot_count > SLOT_ENUM && !s.slots.is_null()) else {
        return status;
    };
    // SAFETY: each segment's `slot_count` slots are writable for the call.
    let all = |s: &ModuleSegment| unsafe { std::slice::from_raw_parts_mut(s.slots, s.slot_count) };
    if status == 0 {
        // CUPTI declined the module: none of what it may have written stays.
        for s in segments.iter().filter(|s| !s.slots.is_null()) {
            all(s).iter_mut().for_each(|slot| *slot = FRESH);
        }
    }
    let slots = all(first);
    let theirs = |v: isize| if v == FRESH || v == DISABLED { 0 } else { v as usize };
    CUPTI_SCHEMA.store(theirs(slots[SLOT_SCHEMA]), Ordering::Relaxed);
    CUPTI_ENUM.store(theirs(slots[SLOT_ENUM]), Ordering::Relaxed);
    slots[SLOT_SCHEMA] = schema_register as SchemaRegister as usize as isize;
    slots[SLOT_ENUM] = enum_register as EnumRegister as usize as isize;
    1
}

/// The registry, created on first use.
fn with_registry<T>(f: impl FnOnce(&mut Registry) -> T) -> Option<T> {
    let mut g = schemas::REGISTRY.lock().ok()?;
    Some(f(g.get_or_insert_with(Registry::default)))
}

/// `nvtxPayloadSchemaRegister` as the agent's slot: keeps the schema, then hands it to CUPTI.
///
/// # Safety
/// Called by NVTX with the program's arguments: `attr` null or a valid schema description.
unsafe extern "C" fn schema_register(domain: *const c_void, attr: *const SchemaAttr) -> u64 {
    let theirs = match CUPTI_SCHEMA.load(Ordering::Relaxed) {
        0 => None,
        // SAFETY: a function CUPTI wrote into this slot, with this signature.
        f => Some(unsafe { std::mem::transmute::<usize, SchemaRegister>(f)(domain, attr) }),
    };
    let theirs = theirs.filter(|id| *id != 0 && *id != u64::MAX);
    let kept = std::panic::catch_unwind(|| {
        if attr.is_null() {
            return Err(schemas::Refused::Malformed("null attributes"));
        }
        // SAFETY: the caller's contract: a valid schema description.
        let attr = unsafe { &*attr };
        // SAFETY: as above: its entries and names are valid.
        with_registry(|r| unsafe { r.schema(domain as u64, attr, theirs) })
            .unwrap_or(Err(schemas::Refused::Full))
    });
    match kept {
        Ok(Ok(id)) => {
            schemas::ANY.store(true, Ordering::Relaxed);
            id
        }
        Ok(Err(why)) => {
            schemas::count(why);
            theirs.unwrap_or(u64::MAX)
        }
        Err(_) => theirs.unwrap_or(u64::MAX),
    }
}

/// `nvtxPayloadEnumRegister` as the agent's slot: keeps the enumeration's size, then hands it
/// to CUPTI.
///
/// # Safety
/// Called by NVTX with the program's arguments: `attr` null or a valid enumeration description.
unsafe extern "C" fn enum_register(domain: *const c_void, attr: *const EnumAttr) -> u64 {
    let theirs = match CUPTI_ENUM.load(Ordering::Relaxed) {
        0 => None,
        // SAFETY: a function CUPTI wrote into this slot, with this signature.
        f => Some(unsafe { std::mem::transmute::<usize, EnumRegister>(f)(domain, attr) }),
    };
    let theirs = theirs.filter(|id| *id != 0 && *id != u64::MAX);
    if attr.is_null() {
        schemas::count(schemas::Refused::Malformed("null enumeration attributes"));
        return theirs.unwrap_or(u64::MAX);
    }
    // SAFETY: the caller's contract.
    let attr = unsafe { &*attr };
    match with_registry(|r| r.enumeration(domain as u64, attr, theirs)) {
        Some(Ok(id)) => id,
        Some(Err(why)) => {
            schemas::count(why);
            theirs.unwrap_or(u64::MAX)
        }
        None => theirs.unwrap_or(u64::MAX),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::{offset_of, size_of};

    #[test]
    fn layouts_are_nvtx_ext_module_info() {
        assert_eq!(size_of::<ModuleSegment>(), 24);
        assert_eq!(size_of::<ModuleInfo>(), 40);
        assert_eq!((offset_of!(ModuleInfo, module_id), offset_of!(ModuleInfo, compat_id)), (4, 6));
        assert_eq!((offset_of!(ModuleInfo, segments_count), offset_of!(ModuleInfo, segments)), (8, 16));
    }
}
