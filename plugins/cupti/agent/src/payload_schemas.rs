//! The payload schemas a program registers through NVTX's payload extension
//! (`nvtxPayloadSchemaRegister`, `nvtxPayloadEnumRegister`, reached through [`crate::nvtx_ext`]),
//! kept so that a range's extended payload (`NVTX_PAYLOAD_TYPE_EXT`: a `nvtxPayloadData_t
//! { schemaId, size, payload }`) can be read field by field: each entry's name, type, offset
//! and size.
//!
//! A schema is kept per (domain, schema id), as NVTX scopes them. Entries at offset 0 after the
//! first are placed by natural alignment after the one before, as NVTX defines; an entry whose
//! type's size is not known (a nested schema never registered) is kept without a size, and the
//! entries after it that rely on alignment are not placed. Everything is bounded
//! ([`MAX_SCHEMAS`], [`MAX_ENTRIES`], [`MAX_NAME`]); a malformed registration is counted and
//! said once on stderr, never followed.
//!
//! The C layouts read here are NVTX's payload extension, version 1 (`nvToolsExtPayload.h`):
//! declared by hand from its public header (no NVTX header is installed on these machines),
//! their sizes and field offsets pinned in the tests.

use std::collections::HashMap;
use std::ffi::CStr;
use std::os::raw::c_char;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// Schemas kept at most (a program registers a few dozen).
pub const MAX_SCHEMAS: usize = 1024;
/// Entries read per schema at most.
pub const MAX_ENTRIES: usize = 64;
/// Bytes of an entry's name kept at most.
pub const MAX_NAME: usize = 256;
/// Enumerations kept at most.
const MAX_ENUMS: usize = 1024;

/// `NVTX_PAYLOAD_SCHEMA_ATTR_*`: which fields of [`SchemaAttr`] are set.
const ATTR_ENTRIES: u64 = 1 << 4;
const ATTR_NUM_ENTRIES: u64 = 1 << 5;
const ATTR_STATIC_SIZE: u64 = 1 << 6;
const ATTR_SCHEMA_ID: u64 = 1 << 8;
/// `NVTX_PAYLOAD_ENUM_ATTR_*`: which fields of [`EnumAttr`] are set.
const ENUM_ATTR_SIZE: u64 = 1 << 4;
const ENUM_ATTR_SCHEMA_ID: u64 = 1 << 5;
/// `NVTX_PAYLOAD_ENTRY_FLAG_POINTER`, and the array flags (`NVTX_PAYLOAD_ENTRY_FLAG_ARRAY_*`,
/// bits 4–6): such an entry's value is not inline.
const FLAG_POINTER: u64 = 1 << 1;
const FLAG_ARRAY: u64 = 7 << 4;
/// `NVTX_PAYLOAD_ENTRY_TYPE_SCHEMA_ID_STATIC_START`: types at and above it name a schema or an
/// enumeration registered by the program.
#[cfg(test)]
const SCHEMA_ID_STATIC_START: u64 = 1 << 24;
/// `NVTX_PAYLOAD_ENTRY_TYPE_SCHEMA_ID_DYNAMIC_START`: ids the tool gives out.
pub const SCHEMA_ID_DYNAMIC_START: u64 = 1 << 32;

/// `nvtxPayloadSchemaEntry_t` (v1).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct RawEntry {
    /// `NVTX_PAYLOAD_ENTRY_FLAG_*`.
    pub flags: u64,
    /// `NVTX_PAYLOAD_ENTRY_TYPE_*`, or a registered schema or enumeration id.
    pub ty: u64,
    /// The entry's name, or null.
    pub name: *const c_char,
    /// Its description, or null.
    pub description: *const c_char,
    /// Array length or union detail.
    pub array_or_union_detail: u64,
    /// Offset in the payload (0 after the first entry: placed by alignment).
    pub offset: u64,
    /// Semantic extensions.
    pub semantics: *const u8,
    /// Reserved.
    pub reserved: *const u8,
}

/// `nvtxPayloadSchemaAttr_t` (v1).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct SchemaAttr {
    /// `NVTX_PAYLOAD_SCHEMA_ATTR_*` bits of the fields set.
    pub field_mask: u64,
    /// The schema's name, or null.
    pub name: *const c_char,
    /// `NVTX_PAYLOAD_SCHEMA_TYPE_*`.
    pub ty: u64,
    /// `NVTX_PAYLOAD_SCHEMA_FLAG_*`.
    pub flags: u64,
    /// The entries.
    pub entries: *const RawEntry,
    /// How many.
    pub num_entries: usize,
    /// Size of a payload of this schema.
    pub payload_static_size: usize,
    /// Packing alignment.
    pub pack_align: usize,
    /// The program's id for it (`>= SCHEMA_ID_STATIC_START`).
    pub schema_id: u64,
    /// Extensions.
    pub extension: *const u8,
}

/// `nvtxPayloadEnumAttr_t` (v1).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct EnumAttr {
    /// `NVTX_PAYLOAD_ENUM_ATTR_*` bits of the fields set.
    pub field_mask: u64,
    /// The enumeration's name, or null.
    pub name: *const c_char,
    /// Its values (`nvtxPayloadEnum_t`), not read.
    pub entries: *const u8,
    /// How many.
    pub num_entries: usize,
    /// Size of a value.
    pub size_of_enum: usize,
    /// The program's id for it.
    pub schema_id: u64,
    /// Extensions.
    pub extension: *const u8,
}

/// One field of a schema.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// Its name (`Message size [bytes]`), empty when none.
    pub name: Box<str>,
    /// `NVTX_PAYLOAD_ENTRY_TYPE_*` or a registered id.
    pub ty: u64,
    /// Where it is in the payload, when known.
    pub offset: Option<u64>,
    /// Its size in bytes, when known.
    pub size: Option<u16>,
    /// An integer stored inline (not a pointer, an array or a float), read by [`Schema::uint`].
    pub integer: bool,
}

/// A registered schema.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Schema {
    /// Its id.
    pub id: u64,
    /// The size of its payloads, 0 when not given.
    pub static_size: u64,
    /// Its fields, in order.
    pub entries: Vec<Entry>,
}

impl Schema {
    /// The value of integer entry `i` in `payload` (zero-extended), when it lies within it.
    pub fn uint(&self, i: usize, payload: &[u8]) -> Option<u64> {
        let e = self.entries.get(i).filter(|e| e.integer)?;
        let (at, size) = (usize::try_from(e.offset?).ok()?, usize::from(e.size?));
        let bytes = payload.get(at..at.checked_add(size)?)?;
        let mut word = [0u8; 8];
        word[..size.min(8)].copy_from_slice(&bytes[..size.min(8)]);
        Some(u64::from_le_bytes(word))
    }
}

/// Why a registration was not kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    /// A null or inconsistent attribute struct (entries missing, too many).
    Malformed(&'static str),
    /// [`MAX_SCHEMAS`] reached.
    Full,
}

/// The registered schemas and enumerations.
#[derive(Debug, Default)]
pub struct Registry {
    schemas: HashMap<(u64, u64), Arc<Schema>>,
    enums: HashMap<(u64, u64), u16>,
    next_dynamic: u64,
}

/// Size and alignment of a predefined entry type on LP64 (`nvtxPayloadEntryTypeInfo_t`), and
/// whether it is an integer.
fn predefined(ty: u64) -> Option<(u16, bool)> {
    Some(match ty {
        1 | 2 | 11 | 12 | 25 | 32 => (1, true),
        3 | 4 | 13 | 14 | 26 => (2, true),
        5 | 6 | 15 | 16 | 24 | 27 | 68 | 69 | 73 => (4, true),
        7..=10 | 17 | 18 | 22 | 23 | 70 | 74 | 80 => (8, true),
        33 | 34 => (16, true),
        42 | 50 => (2, false),
        19 | 43 | 52 => (4, false),
        20 | 44 | 75..=78 => (8, false),
        21 | 45 => (16, false),
        _ => return None,
    })
}

/// # Safety
/// `p` is null or a NUL-terminated string alive for the call.
unsafe fn name_of(p: *const c_char) -> Box<str> {
    if p.is_null() {
        return "".into();
    }
    // SAFETY: the caller's contract.
    let s = unsafe { CStr::from_ptr(p) }.to_bytes();
    String::from_utf8_lossy(&s[..s.len().min(MAX_NAME)]).into()
}

impl Registry {
    /// Keeps the schema `attr` registers in `domain`; returns its id (the program's, or one
    /// given out from [`SCHEMA_ID_DYNAMIC_START`] when it has none).
    ///
    /// # Safety
    /// `attr` points to a `nvtxPayloadSchemaAttr_t` whose set fields are valid: `entries`
    /// points to `num_entries` entries whose names are NUL-terminated strings or null.
    pub unsafe fn schema(&mut self, domain: u64, attr: &SchemaAttr) -> Result<u64, Refused> {
        let mask = attr.field_mask;
        if mask & ATTR_ENTRIES == 0 || mask & ATTR_NUM_ENTRIES == 0 || attr.entries.is_null() {
            return Err(Refused::Malformed("no entries"));
        }
        if attr.num_entries == 0 || attr.num_entries > MAX_ENTRIES {
            return Err(Refused::Malformed("entry count out of range"));
        }
        if self.schemas.len() >= MAX_SCHEMAS {
            return Err(Refused::Full);
        }
        let id = match mask & ATTR_SCHEMA_ID != 0 {
            true => attr.schema_id,
            false => {
                self.next_dynamic += 1;
                SCHEMA_ID_DYNAMIC_START + self.next_dynamic
            }
        };
        // SAFETY: the caller's contract: `num_entries` entries at `entries`.
        let raw = unsafe { std::slice::from_raw_parts(attr.entries, attr.num_entries) };
        let mut entries = Vec::with_capacity(raw.len());
        let mut next = Some(0u64);
        for (i, r) in raw.iter().enumerate() {
            let inline = r.flags & (FLAG_POINTER | FLAG_ARRAY) == 0;
            let (size, integer) = if !inline {
                (Some(8), false)
            } else if let Some((s, int)) = predefined(r.ty) {
                (Some(s), int)
            } else if let Some(&s) = self.enums.get(&(domain, r.ty)) {
                (Some(s), true)
            } else {
                let nested = self.schemas.get(&(domain, r.ty)).map(|s| s.static_size);
                (nested.and_then(|s| u16::try_from(s).ok()).filter(|s| *s > 0), false)
            };
            let offset = if i == 0 || r.offset != 0 {
                Some(r.offset)
            } else {
                let align = u64::from(size.unwrap_or(1).clamp(1, 8));
                next.map(|n| n.div_ceil(align) * align)
            };
            next = offset.zip(size).map(|(o, s)| o + u64::from(s));
            // SAFETY: the caller's contract: names are NUL-terminated strings or null.
            let name = unsafe { name_of(r.name) };
            entries.push(Entry { name, ty: r.ty, offset, size, integer });
        }
        let static_size = if mask & ATTR_STATIC_SIZE != 0 { attr.payload_static_size as u64 } else { 0 };
        self.schemas.insert((domain, id), Arc::new(Schema { id, static_size, entries }));
        Ok(id)
    }

    /// Keeps the size of the enumeration `attr` registers in `domain`; returns its id.
    pub fn enumeration(&mut self, domain: u64, attr: &EnumAttr) -> Result<u64, Refused> {
        let mask = attr.field_mask;
        if mask & ENUM_ATTR_SIZE == 0 || attr.size_of_enum == 0 || attr.size_of_enum > 8 {
            return Err(Refused::Malformed("enumeration size missing or out of range"));
        }
        if self.enums.len() >= MAX_ENUMS {
            return Err(Refused::Full);
        }
        let id = match mask & ENUM_ATTR_SCHEMA_ID != 0 {
            true => attr.schema_id,
            false => {
                self.next_dynamic += 1;
                SCHEMA_ID_DYNAMIC_START + self.next_dynamic
            }
        };
        self.enums.insert((domain, id), attr.size_of_enum as u16);
        Ok(id)
    }

    /// Schema `id` of `domain`.
    pub fn get(&self, domain: u64, id: u64) -> Option<Arc<Schema>> {
        self.schemas.get(&(domain, id)).cloned()
    }

    /// Whether `domain` registered any schema.
    pub fn has_domain(&self, domain: u64) -> bool {
        self.schemas.keys().any(|(d, _)| *d == domain)
    }
}

/// The process's registry.
pub static REGISTRY: Mutex<Option<Registry>> = Mutex::new(None);
/// Registrations refused as malformed, and at the bounds.
pub static MALFORMED: AtomicU64 = AtomicU64::new(0);
/// Registrations refused at [`MAX_SCHEMAS`] or the enumerations' bound.
pub static OVER_BOUND: AtomicU64 = AtomicU64::new(0);

/// Counts a refusal; the first of each kind is said on stderr.
pub fn count(r: Refused) {
    let (counter, what) = match r {
        Refused::Malformed(why) => (&MALFORMED, why),
        Refused::Full => (&OVER_BOUND, "too many schemas"),
    };
    if counter.fetch_add(1, Ordering::Relaxed) == 0 {
        crate::say(&format!(
            "ignored an NVTX payload schema registration ({what}); payloads of that schema are not read"
        ));
    }
}

/// Schema `id` of `domain`, if registered.
pub fn lookup(domain: u64, id: u64) -> Option<Arc<Schema>> {
    REGISTRY.lock().ok()?.as_ref()?.get(domain, id)
}

/// Some schema was registered: until then a push costs one load here.
pub static ANY: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Whether `domain` registered any schema (cheap enough per push: a few dozen schemas).
pub fn known_domain(domain: u64) -> bool {
    if !ANY.load(Ordering::Relaxed) {
        return false;
    }
    REGISTRY.lock().ok().and_then(|g| g.as_ref().map(|r| r.has_domain(domain))).unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::{offset_of, size_of};

    #[test]
    fn layouts_are_nvtx_payload_v1() {
        assert_eq!(size_of::<RawEntry>(), 64);
        assert_eq!((offset_of!(RawEntry, ty), offset_of!(RawEntry, name)), (8, 16));
        assert_eq!(offset_of!(RawEntry, offset), 40);
        assert_eq!(size_of::<SchemaAttr>(), 80);
        assert_eq!((offset_of!(SchemaAttr, entries), offset_of!(SchemaAttr, num_entries)), (32, 40));
        assert_eq!(
            (offset_of!(SchemaAttr, payload_static_size), offset_of!(SchemaAttr, schema_id)),
            (48, 64)
        );
        assert_eq!(size_of::<EnumAttr>(), 56);
        assert_eq!((offset_of!(EnumAttr, size_of_enum), offset_of!(EnumAttr, schema_id)), (32, 40));
    }

    fn entry(ty: u64, name: &'static CStr, offset: u64) -> RawEntry {
        RawEntry {
            flags: 0,
            ty,
            name: name.as_ptr(),
            description: std::ptr::null(),
            array_or_union_detail: 0,
            offset,
            semantics: std::ptr::null(),
            reserved: std::ptr::null(),
        }
    }

    fn attr(entries: &[RawEntry], id: u64) -> SchemaAttr {
        SchemaAttr {
            field_mask: ATTR_ENTRIES | ATTR_NUM_ENTRIES | ATTR_STATIC_SIZE | ATTR_SCHEMA_ID,
            name: std::ptr::null(),
            ty: 1,
            flags: 0,
            entries: entries.as_ptr(),
            num_entries: entries.len(),
            payload_static_size: 24,
            pack_align: 0,
            schema_id: id,
            extension: std::ptr::null(),
        }
    }

    #[test]
    fn entries_are_placed_by_their_offsets_or_by_alignment_and_read() {
        let mut r = Registry::default();
        let redop = SCHEMA_ID_STATIC_START + 24;
        let e = EnumAttr {
            field_mask: ENUM_ATTR_SIZE | ENUM_ATTR_SCHEMA_ID,
            name: std::ptr::null(),
            entries: std::ptr::null(),
            num_entries: 0,
            size_of_enum: 4,
            schema_id: redop,
            extension: std::ptr::null(),
        };
        assert_eq!(r.enumeration(1, &e), Ok(redop));
        // NCCL's all-reduce schema of 2.25 and later: explicit offsets.
        let given = [
            entry(18, c"NCCL communicator ID", 0),
            entry(22, c"Message size [bytes]", 8),
            entry(redop, c"Reduction operation", 16),
        ];
        let id = SCHEMA_ID_STATIC_START + 5;
        // SAFETY: `given` and its names live through the call.
        assert_eq!(unsafe { r.schema(1, &attr(&given, id)) }, Ok(id));
        let s = r.get(1, id).unwrap();
        let payload: Vec<u8> =
            [0xabcu64.to_le_bytes(), (1u64 << 20).to_le_bytes(), 2u64.to_le_bytes()].concat();
        assert_eq!(
            (s.uint(0, &payload), s.uint(1, &payload), s.uint(2, &payload)),
            (Some(0xabc), Some(1 << 20), Some(2))
        );
        assert_eq!(s.uint(1, &payload[..12]), None, "a field past the payload's size is not read");
        // Offsets left 0 (NCCL 2.17's): placed after the one before, aligned.
        let aligned = [entry(5, c"Root", 0), entry(22, c"Message size [bytes]", 0)];
        // SAFETY: as above.
        unsafe { r.schema(1, &attr(&aligned, id + 1)) }.unwrap();
        assert_eq!(r.get(1, id + 1).unwrap().entries[1].offset, Some(8));
        assert!(r.get(2, id).is_none(), "schemas belong to their domain");
    }

    #[test]
    fn malformed_registrations_are_refused_and_the_registry_is_bounded() {
        let mut r = Registry::default();
        let mut a = attr(&[], 1);
        a.entries = std::ptr::null();
        // SAFETY: refused before the entries are read.
        assert!(matches!(unsafe { r.schema(1, &a) }, Err(Refused::Malformed(_))));
        let one = [entry(22, c"bytes", 0)];
        let mut many = attr(&one, 1);
        many.num_entries = MAX_ENTRIES + 1;
        // SAFETY: refused before the entries are read.
        assert!(matches!(unsafe { r.schema(1, &many) }, Err(Refused::Malformed(_))));
        for i in 0..MAX_SCHEMAS as u64 {
            // SAFETY: `one` lives through the call.
            unsafe { r.schema(1, &attr(&one, SCHEMA_ID_STATIC_START + i)) }.unwrap();
        }
        // SAFETY: as above.
        assert_eq!(unsafe { r.schema(1, &attr(&one, 7)) }, Err(Refused::Full));
        let entries = [entry(SCHEMA_ID_STATIC_START + 99_999, c"nested", 0), entry(22, c"after", 0)];
        let mut unknown = attr(&entries, 9);
        unknown.field_mask &= !ATTR_SCHEMA_ID;
        let mut fresh = Registry::default();
        // SAFETY: `entries` lives through the call.
        let id = unsafe { fresh.schema(1, &unknown) }.unwrap();
        assert!(id > SCHEMA_ID_DYNAMIC_START, "an id is given out when the program has none");
        let s = fresh.get(1, id).unwrap();
        assert_eq!(
            (s.entries[0].size, s.entries[1].offset),
            (None, None),
            "not placed after an unknown size"
        );
    }
}
