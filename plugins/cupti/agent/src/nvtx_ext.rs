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
//! CUPTI has its own `InitializeInjectionNvtxExtension`, which NVTX never reached before the
//! agent had one (NVTX loads the agent, not CUPTI): it is not called, so CUPTI sees what it saw
//! before. The agent answers for the payload module alone, with its two registration slots; the
//! other slots, and the other modules, stay empty (no-ops), as they were.

use std::os::raw::{c_int, c_void};
use std::sync::atomic::Ordering;

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
type SchemaRegister = unsafe extern "C" fn(*const c_void, *const SchemaAttr) -> u64;
type EnumRegister = unsafe extern "C" fn(*const c_void, *const EnumAttr) -> u64;

/// Called by NVTX when it loads an extension module (see the module's documentation).
///
/// # Safety
/// `info` is null or NVTX's module description, its segments and slots writable for the call.
#[no_mangle]
pub unsafe extern "C" fn InitializeInjectionNvtxExtension(info: *mut ModuleInfo) -> c_int {
    // SAFETY: the caller's contract.
    std::panic::catch_unwind(|| unsafe { initialize(info) }).unwrap_or(0)
}

/// # Safety
/// As [`InitializeInjectionNvtxExtension`].
unsafe fn initialize(info: *mut ModuleInfo) -> c_int {
    crate::ensure_started();
    let Some(a) = crate::agent() else { return 0 };
    if !a.config.opts.nvtx || info.is_null() {
        return 0;
    }
    // SAFETY: the caller's contract: a valid module description.
    let m = unsafe { &*info };
    if m.module_id != PAYLOAD_MODULE || m.compat_id >> 8 != PAYLOAD_COMPAT_MAJOR {
        return 0;
    }
    if m.segments_count < 1 || m.segments.is_null() {
        return 0;
    }
    // SAFETY: the first of `segments_count` segments.
    let first = unsafe { &*m.segments };
    if first.slot_count <= SLOT_ENUM || first.slots.is_null() {
        return 0;
    }
    // SAFETY: the segment's `slot_count` slots are writable for the call.
    let slots = unsafe { std::slice::from_raw_parts_mut(first.slots, first.slot_count) };
    slots[SLOT_SCHEMA] = schema_register as SchemaRegister as usize as isize;
    slots[SLOT_ENUM] = enum_register as EnumRegister as usize as isize;
    1
}

/// The registry, created on first use.
fn with_registry<T>(f: impl FnOnce(&mut Registry) -> T) -> Option<T> {
    let mut g = schemas::REGISTRY.lock().ok()?;
    Some(f(g.get_or_insert_with(Registry::default)))
}

/// What NVTX returns for a registration no tool took (`NVTX_EXT_FN_RETURN_INVALID`).
const INVALID: u64 = u64::MAX;

/// `nvtxPayloadSchemaRegister` as the agent's slot: keeps the schema, returns its id.
///
/// # Safety
/// Called by NVTX with the program's arguments: `attr` null or a valid schema description.
unsafe extern "C" fn schema_register(domain: *const c_void, attr: *const SchemaAttr) -> u64 {
    let kept = std::panic::catch_unwind(|| {
        if attr.is_null() {
            return Err(schemas::Refused::Malformed("null attributes"));
        }
        // SAFETY: the caller's contract: a valid schema description.
        let attr = unsafe { &*attr };
        // SAFETY: as above: its entries and names are valid.
        with_registry(|r| unsafe { r.schema(domain as u64, attr) }).unwrap_or(Err(schemas::Refused::Full))
    });
    match kept {
        Ok(Ok(id)) => {
            schemas::ANY.store(true, Ordering::Relaxed);
            id
        }
        Ok(Err(why)) => {
            schemas::count(why);
            INVALID
        }
        Err(_) => INVALID,
    }
}

/// `nvtxPayloadEnumRegister` as the agent's slot: keeps the enumeration's size, returns its id.
///
/// # Safety
/// Called by NVTX with the program's arguments: `attr` null or a valid enumeration description.
unsafe extern "C" fn enum_register(domain: *const c_void, attr: *const EnumAttr) -> u64 {
    if attr.is_null() {
        schemas::count(schemas::Refused::Malformed("null enumeration attributes"));
        return INVALID;
    }
    // SAFETY: the caller's contract.
    let attr = unsafe { &*attr };
    match with_registry(|r| r.enumeration(domain as u64, attr)) {
        Some(Ok(id)) => id,
        Some(Err(why)) => {
            schemas::count(why);
            INVALID
        }
        None => INVALID,
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
