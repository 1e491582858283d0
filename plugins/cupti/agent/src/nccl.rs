//! NCCL's collectives' arguments, read from the NVTX ranges NCCL pushes around its API calls
//! and sent with the launches made inside them ([`MSG_COLLECTIVE_ARGS`]).
//!
//! NCCL (2.17 and later, unless `NCCL_NVTX_DISABLE` is set) pushes a range in its own domain
//! around each API call (`ncclAllReduce`, `ncclAllGather`, `ncclSend`...), whose attributes carry
//! an NVTX extended payload: one struct per call, of a schema NCCL registers through the payload
//! extension ([`crate::nvtx_ext`], [`crate::payload_schemas`]), with entries named
//! `Message size [bytes]` (per rank: `count × size of the data type`), `NCCL communicator ID`
//! (its `commHash`, the same on every rank; 2.25 and later) and others (reduction operation,
//! root, peer). When a call is not grouped, NCCL launches its kernel inside the range; the launch
//! then carries the collective's bytes and communicator to the host. The entries are found by
//! name, not by NCCL's schema numbers, so a version that adds or moves entries is still read; a
//! schema that states a count and a data type instead of bytes gets `count × type size`.
//!
//! Collectives inside `ncclGroupStart`/`ncclGroupEnd` launch at the group's end, after their
//! ranges closed: each closed range's arguments wait on the thread, summed, and go with the
//! group's first launch (one kernel runs a group's collectives); a launch outside NCCL's ranges
//! (the program's own work) drops what waits, as those collectives launched nothing. A range of
//! a schema the agent does not know is skipped. The callbacks run inside the program's C calls:
//! the thread's state is reached with `try_with`/`try_borrow_mut`, never panicking.

use std::cell::RefCell;
use std::os::raw::c_void;

use xpuprof_agent_kit::channel::Chunk;
use xpuprof_cupti_wire::{CollectiveArgs, ARGS_BYTES, ARGS_COMMUNICATOR, ARGS_OP};
use xpuprof_sdk::model::CollectiveOp;

use crate::annotations::nvtx::{self, ATTR_PAYLOAD, ATTR_PAYLOAD_COUNT, ATTR_PAYLOAD_TYPE, PAYLOAD_EXT};
use crate::capture::Capture;
use crate::payload_schemas::{self as schemas, Schema};
use crate::sys::ffi::{self, CUpti_nvtx_api_trace_cbid as N};
use crate::sys::{CuptiError, Lib};
use crate::Agent;

/// The NVTX calls read (NCCL's ranges are pushed and popped in its domain).
const CALLS: [u32; 2] = [N::CUPTI_CBID_NVTX_nvtxDomainRangePushEx, N::CUPTI_CBID_NVTX_nvtxDomainRangePop];

/// Turns on the NVTX callbacks this module reads.
pub fn enable(c: &mut Capture, lib: &Lib) -> Result<(), CuptiError> {
    for cbid in CALLS {
        c.enable_marker(lib, crate::markers::DOMAIN_NVTX, cbid)?;
    }
    Ok(())
}

/// What a collective's payload states.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Args {
    /// Message size in bytes.
    pub bytes: Option<u64>,
    /// Communicator id.
    pub communicator: Option<u64>,
    /// Which collective.
    pub op: Option<CollectiveOp>,
}

impl Args {
    /// Adds `o` (a grouped collective) to these: bytes summed, the communicator kept while
    /// every one names the same.
    fn add(&mut self, o: Args) {
        self.bytes = match (self.bytes, o.bytes) {
            (Some(a), Some(b)) => Some(a.saturating_add(b)),
            (a, b) => a.or(b),
        };
        if self.communicator != o.communicator {
            self.communicator = None;
        }
        if self.op != o.op {
            self.op = Some(CollectiveOp::Other);
        }
    }

    fn wire(&self, correlation: u32) -> CollectiveArgs {
        let flags = if self.bytes.is_some() { ARGS_BYTES } else { 0 }
            | if self.communicator.is_some() { ARGS_COMMUNICATOR } else { 0 }
            | if self.op.is_some() { ARGS_OP } else { 0 };
        CollectiveArgs {
            correlation,
            flags,
            bytes: self.bytes.unwrap_or(0),
            communicator: self.communicator.unwrap_or(0),
            op: self.op.unwrap_or_default(),
        }
    }
}

/// Where NCCL's fields are in a schema (entry indexes).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Fields {
    bytes: Option<usize>,
    count: Option<usize>,
    datatype: Option<usize>,
    communicator: Option<usize>,
    op: Option<CollectiveOp>,
}

/// NCCL's name of its schemas' message-size entry: a schema with it is NCCL's, numbered as
/// NCCL numbers them ([`op_of`]).
const NCCL_BYTES: &str = "Message size [bytes]";
/// NCCL's first static schema id (`NVTX_PAYLOAD_ENTRY_TYPE_SCHEMA_ID_STATIC_START`).
const NCCL_SCHEMA_BASE: u64 = 1 << 24;

/// The collective of NCCL's static schema `id` (`NVTX_SID_*`, the same numbers since 2.17).
fn op_of(id: u64) -> Option<CollectiveOp> {
    Some(match id.checked_sub(NCCL_SCHEMA_BASE)? {
        4 => CollectiveOp::AllGather,
        5 => CollectiveOp::AllReduce,
        6 => CollectiveOp::Broadcast,
        7 => CollectiveOp::ReduceScatter,
        8 => CollectiveOp::Reduce,
        9 | 10 => CollectiveOp::SendRecv,
        16 => CollectiveOp::AllToAll,
        17 | 18 => CollectiveOp::Other,
        _ => return None,
    })
}

/// Size of NCCL's data type `t` (`ncclDataType_t`: int8, uint8, int32, uint32, int64, uint64,
/// float16, float32, float64, bfloat16, float8 e4m3, float8 e5m2).
fn type_size(t: u64) -> Option<u64> {
    [1, 1, 4, 4, 8, 8, 2, 4, 8, 2, 1, 1].get(usize::try_from(t).ok()?).copied()
}

impl Fields {
    /// The entries of `s` that state a collective's bytes, count, data type and communicator.
    pub fn of(s: &Schema) -> Self {
        let mut f = Fields::default();
        for (i, e) in s.entries.iter().enumerate().filter(|(_, e)| e.integer) {
            let n = e.name.to_ascii_lowercase();
            if n.contains("[bytes]") || n == "bytes" || n.contains("message size") {
                f.bytes = f.bytes.or(Some(i));
            } else if n.contains("communicator") && !n.contains("parent") {
                f.communicator = f.communicator.or(Some(i));
            } else if n == "count" || n.contains("element count") {
                f.count = f.count.or(Some(i));
            } else if n.contains("datatype") || n.contains("data type") {
                f.datatype = f.datatype.or(Some(i));
            }
        }
        if s.entries.iter().any(|e| &*e.name == NCCL_BYTES) {
            f.op = op_of(s.id);
        }
        f
    }

    /// Whether the schema states anything of a collective's.
    pub fn any(&self) -> bool {
        self.bytes.is_some() || (self.count.is_some() && self.datatype.is_some())
    }

    /// The arguments a payload of schema `s` states.
    pub fn read(&self, s: &Schema, payload: &[u8]) -> Args {
        let at = |i: Option<usize>| i.and_then(|i| s.uint(i, payload));
        let bytes = at(self.bytes).or_else(|| {
            let (n, t) = (at(self.count)?, at(self.datatype)?);
            n.checked_mul(type_size(t)?)
        });
        Args { bytes, communicator: at(self.communicator).filter(|c| *c != 0), op: self.op }
    }
}

/// Where `nvtxEventAttributes_t` keeps its `size` (the payload fields are the annotations').
const ATTR_SIZE_FIELD: usize = 2;
/// Payload bytes read at most (NCCL's are 16 to 32).
const MAX_PAYLOAD: usize = 4096;

/// The arguments the extended payload of event attributes `attr` of `domain` states. Nothing
/// behind the program's pointers is loaded directly: the attributes, the `nvtxPayloadData_t`
/// and the payload are copied with the annotations' checked reads (an unreadable one is no
/// arguments, never a fault).
fn args_of(domain: u64, attr: u64) -> Option<Args> {
    let mut a = [0u8; ATTR_PAYLOAD + 8];
    if !nvtx::read(attr, &mut a) {
        return None;
    }
    let size = usize::from(u16::from_le_bytes([a[ATTR_SIZE_FIELD], a[ATTR_SIZE_FIELD + 1]]));
    if size < ATTR_PAYLOAD + 8 {
        return None;
    }
    let i32_at = |o: usize| i32::from_le_bytes(a[o..o + 4].try_into().expect("4 bytes"));
    let data = u64::from_le_bytes(a[ATTR_PAYLOAD..ATTR_PAYLOAD + 8].try_into().expect("8 bytes"));
    if i32_at(ATTR_PAYLOAD_TYPE) != PAYLOAD_EXT || i32_at(ATTR_PAYLOAD_COUNT) < 1 {
        return None;
    }
    // `nvtxPayloadData_t { u64 schemaId; size_t size; const void* payload }`.
    let mut d = [0u8; 24];
    if !nvtx::read(data, &mut d) {
        return None;
    }
    let word = |i: usize| u64::from_le_bytes(d[i * 8..i * 8 + 8].try_into().expect("8 bytes"));
    let (schema, len, payload) = (word(0), word(1), word(2));
    if len == 0 {
        return None;
    }
    let s = schemas::lookup(domain, schema)?;
    let fields = Fields::of(&s);
    if !fields.any() {
        return None;
    }
    let mut bytes = vec![0u8; (len as usize).min(MAX_PAYLOAD)];
    nvtx::read(payload, &mut bytes).then(|| fields.read(&s, &bytes))
}

/// This thread's NCCL state.
#[derive(Debug, Default)]
struct Thread {
    /// Open ranges of domains with schemas: (domain, what the range's payload states).
    open: Vec<(u64, Option<Args>)>,
    /// Arguments of closed ranges no launch took yet (grouped collectives).
    waiting: Option<Args>,
    /// The launch the innermost arguments went with (a runtime launch's inner driver call is
    /// the same launch).
    sent: u32,
}

thread_local! {
    static THREAD: RefCell<Thread> = RefCell::new(Thread::default());
}

/// Most ranges a thread keeps open here (deeper pushes are not read; their pops match nothing).
const MAX_OPEN: usize = 64;

/// An NVTX callback: NCCL's pushes and pops.
///
/// # Safety
/// `data` is the `CUpti_NvtxData` CUPTI passes for NVTX callback `cbid`.
pub unsafe fn on_nvtx(cbid: u32, data: *const c_void) {
    if !CALLS.contains(&cbid) || !schemas::ANY.load(std::sync::atomic::Ordering::Relaxed) {
        return;
    }
    // SAFETY: the caller's contract.
    let d = unsafe { &*(data as *const ffi::CUpti_NvtxData) };
    let params = d.functionParams as *const u64;
    if params.is_null() {
        return;
    }
    // SAFETY: both calls' parameters begin with the domain handle.
    let domain = unsafe { std::ptr::read_unaligned(params) };
    if !schemas::known_domain(domain) {
        return;
    }
    match cbid {
        N::CUPTI_CBID_NVTX_nvtxDomainRangePushEx => {
            // SAFETY: `domain, core.eventAttrib`: CUPTI's parameter block holds both.
            let args = args_of(domain, unsafe { std::ptr::read_unaligned(params.add(1)) });
            let _ = THREAD.try_with(|t| {
                let Ok(mut t) = t.try_borrow_mut() else { return };
                if t.open.len() < MAX_OPEN {
                    t.open.push((domain, args));
                }
            });
        }
        N::CUPTI_CBID_NVTX_nvtxDomainRangePop => {
            let _ = THREAD.try_with(|t| {
                let Ok(mut t) = t.try_borrow_mut() else { return };
                let Some(at) = t.open.iter().rposition(|(d, _)| *d == domain) else { return };
                let (_, args) = t.open.remove(at);
                // A collective's range that closes before any launch: it waits for the group's.
                if let (Some(a), 0) = (args, t.sent) {
                    t.waiting.get_or_insert_with(Args::default).add(a);
                }
                t.sent = 0;
            });
        }
        _ => {}
    }
}

/// A launch-class call `correlation` (the outermost on its thread) is entered: the arguments
/// of the innermost NCCL range open around it, or of the closed ranges waiting for a group's
/// launch, go with it.
pub fn launch(a: &Agent, correlation: u32) {
    let args = THREAD
        .try_with(|t| {
            let mut t = t.try_borrow_mut().ok()?;
            if t.open.is_empty() {
                // The program's own work: collectives still waiting launched nothing (a
                // one-rank in-place reduction), and are no group's.
                t.waiting = None;
                return None;
            }
            if t.sent == correlation {
                return None;
            }
            let innermost = t.open.iter().rev().find_map(|(_, a)| *a);
            let args = innermost.or_else(|| t.waiting.take())?;
            t.sent = correlation;
            Some(args)
        })
        .ok()
        .flatten();
    if let Some(args) = args {
        let mut m = Vec::with_capacity(
            xpuprof_agent_kit::wire::HEADER_BYTES + xpuprof_cupti_wire::COLLECTIVE_ARGS_BYTES,
        );
        args.wire(correlation).put(&mut m);
        a.core.channel.push(Chunk::Bytes(m));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::payload_schemas::Entry;

    fn schema(names: &[(&str, u64, u16)]) -> Schema {
        Schema {
            id: 1,
            static_size: 0,
            entries: names
                .iter()
                .map(|(n, o, s)| Entry {
                    name: (*n).into(),
                    ty: 18,
                    offset: Some(*o),
                    size: Some(*s),
                    integer: true,
                })
                .collect(),
        }
    }

    #[test]
    fn nccl_fields_are_found_by_name_in_every_schema_version() {
        // 2.25 and later: communicator, bytes, reduction operation.
        let mut s = schema(&[
            ("NCCL communicator ID", 0, 8),
            ("Message size [bytes]", 8, 8),
            ("Reduction operation", 16, 4),
        ]);
        s.id = NCCL_SCHEMA_BASE + 5;
        let payload = [0x1234u64.to_le_bytes(), (16u64 << 20).to_le_bytes(), 0u64.to_le_bytes()].concat();
        let f = Fields::of(&s);
        assert!(f.any());
        assert_eq!(
            f.read(&s, &payload),
            Args { bytes: Some(16 << 20), communicator: Some(0x1234), op: Some(CollectiveOp::AllReduce) }
        );
        // 2.17: bytes only (an all-gather).
        let mut old = schema(&[("Message size [bytes]", 0, 8)]);
        old.id = NCCL_SCHEMA_BASE + 4;
        assert_eq!(
            Fields::of(&old).read(&old, &payload),
            Args { bytes: Some(0x1234), communicator: None, op: Some(CollectiveOp::AllGather) }
        );
        // A count and a data type (float32) instead of bytes.
        let counted = schema(&[("count", 0, 8), ("datatype", 8, 4)]);
        let p = [256u64.to_le_bytes(), 7u64.to_le_bytes()].concat();
        assert_eq!(Fields::of(&counted).read(&counted, &p), Args { bytes: Some(1024), ..Args::default() });
        // Init's schema (communicator, ranks) states no collective.
        let init = schema(&[("NCCL communicator ID", 0, 8), ("No. of ranks", 8, 4)]);
        assert!(!Fields::of(&init).any());
    }

    #[test]
    fn grouped_collectives_add_up_and_keep_a_communicator_only_when_shared() {
        let op = Some(CollectiveOp::AllReduce);
        let mut a = Args { bytes: Some(10), communicator: Some(1), op };
        a.add(Args { bytes: Some(5), communicator: Some(1), op });
        assert_eq!(a, Args { bytes: Some(15), communicator: Some(1), op });
        a.add(Args { bytes: None, communicator: Some(2), op: Some(CollectiveOp::AllGather) });
        assert_eq!(a, Args { bytes: Some(15), communicator: None, op: Some(CollectiveOp::Other) });
        let w = a.wire(9);
        assert_eq!((w.correlation, w.flags, w.bytes()), (9, ARGS_BYTES | ARGS_OP, Some(15)));
    }
}
