//! What an NVTX call hands the agent (through CUPTI's NVTX callbacks), read without trusting
//! it: the event attributes (`nvtxEventAttributes_t`), their message (ASCII or a registered
//! string's handle) and their extended payload (`nvtxPayloadData_t`, NVTX's payload extension).
//!
//! A program passes these as raw pointers, and a profiler that follows a bad one crashes the
//! program (the H200 rounds' JAX runs died with SIGSEGV in the annotation path; an unmapped
//! payload pointer does it on the CUDA test double). So every read of the program's memory past
//! the call's own parameter struct goes through [`read`] (`process_vm_readv` on this process,
//! which fails with `EFAULT` instead of faulting), every size and version field is checked
//! against the layout read, and what cannot be read is a [`Skip`], counted by the caller.

use std::os::raw::c_void;
use std::sync::atomic::{AtomicBool, Ordering};

/// `nvtxEventAttributes_t` (NVTX v2 and v3: `version`, `size` at 2, `category`, `colorType`,
/// `color`, `payloadType` at 16, `reserved0` at 20 (the payload count of an extended payload),
/// `payload` at 24, `messageType` at 32, `message` at 40): 48 bytes.
pub const ATTR_SIZE: usize = 48;
pub(crate) const ATTR_PAYLOAD_TYPE: usize = 16;
pub(crate) const ATTR_PAYLOAD_COUNT: usize = 20;
pub(crate) const ATTR_PAYLOAD: usize = 24;
const ATTR_MESSAGE_TYPE: usize = 32;
const ATTR_MESSAGE: usize = 40;
const MESSAGE_ASCII: i32 = 1;
const MESSAGE_REGISTERED: i32 = 3;
/// `NVTX_PAYLOAD_TYPE_EXT` (`NVTX_PAYLOAD_TYPE_BINARY` in newer headers): `payload` points to
/// `reserved0` entries `nvtxPayloadData_t { u64 schemaId; size_t size; const void *payload }`.
pub(crate) const PAYLOAD_EXT: i32 = 0xDFBD_0009_u32 as i32;
/// Most entries of an extended payload believed (XLA passes one).
const MAX_PAYLOADS: i32 = 64;
/// Largest payload believed (XLA's are a few handles).
const MAX_PAYLOAD_BYTES: u64 = 1 << 20;
/// Leading words of the first payload read (XLA's operation payload: string handles first).
pub const PAYLOAD_WORDS: usize = 8;
/// Longest string read (registered strings, ASCII messages); longer ones are cut there.
pub const MAX_TEXT: usize = 16 << 10;

/// Why an NVTX call's arguments were not read (each counted and reported at exit).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Skip {
    /// Null or unreadable attributes, or no `version` or a `size` short of the 48 bytes read.
    Attributes,
    /// A UNICODE message, an unknown message type, or a null, unreadable or non-UTF-8 text.
    Message,
    /// A registered-string handle the agent never saw registered.
    UnknownHandle,
    /// An extended payload whose entries, size or data could not be read.
    Payload,
    /// A call without its parameter struct (or return value, for a registration).
    Parameters,
    /// A pop with no range of its domain open on the popping thread.
    PopWithoutPush,
    /// A push past the depth the agent keeps per thread.
    TooDeep,
}

impl Skip {
    /// Every reason, in the order they are reported.
    pub const ALL: [Skip; 7] = [
        Skip::Attributes,
        Skip::Message,
        Skip::UnknownHandle,
        Skip::Payload,
        Skip::Parameters,
        Skip::PopWithoutPush,
        Skip::TooDeep,
    ];

    /// What the report calls it.
    pub fn describe(self) -> &'static str {
        match self {
            Skip::Attributes => "event attributes null, unreadable or smaller than 48 bytes",
            Skip::Message => "messages neither ASCII nor registered strings, or unreadable",
            Skip::UnknownHandle => "registered strings never seen registered",
            Skip::Payload => "extended payloads unreadable",
            Skip::Parameters => "calls without their parameters",
            Skip::PopWithoutPush => "pops without a push on their thread",
            Skip::TooDeep => "pushes nested deeper than kept",
        }
    }
}

/// The message of a push.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Message {
    /// A registered string's handle.
    Registered(u64),
    /// An ASCII text.
    Ascii(String),
}

/// What a push's event attributes say: its message and where its extended payload is (read
/// only when wanted, [`Event::payload`]: each read is a system call).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    /// The message.
    pub message: Message,
    /// The extended payload's `nvtxPayloadData_t` array and its count, when there is one.
    pub payload_at: Option<(u64, i32)>,
}

impl Event {
    /// The leading words of the first extended payload (empty without one); what was wrong
    /// when it is there but cannot be read (what the program passed, said with `verbose`).
    pub fn payload(&self) -> Result<Vec<u64>, String> {
        match self.payload_at {
            Some((data, count)) => first_payload(data, count),
            None => Ok(Vec::new()),
        }
    }
}

static UNAVAILABLE: AtomicBool = AtomicBool::new(false);

/// Copies `out.len()` bytes at `addr` of this process into `out`; false (and nothing read) when
/// any of them is unmapped or unreadable.
pub fn read(addr: u64, out: &mut [u8]) -> bool {
    if out.is_empty() {
        return true;
    }
    if addr < 4096 || addr.checked_add(out.len() as u64).is_none() || UNAVAILABLE.load(Ordering::Relaxed) {
        return false;
    }
    let local = libc::iovec { iov_base: out.as_mut_ptr() as *mut c_void, iov_len: out.len() };
    let remote = libc::iovec { iov_base: addr as *mut c_void, iov_len: out.len() };
    // SAFETY: `local` is `out`, writable for its length; the kernel reads `remote` in this
    // process checking every page (EFAULT instead of a fault) and writes nothing else.
    let n = unsafe { libc::process_vm_readv(libc::getpid(), &local, 1, &remote, 1, 0) };
    if n < 0 {
        let e = std::io::Error::last_os_error().raw_os_error();
        if matches!(e, Some(libc::ENOSYS) | Some(libc::EPERM)) {
            // Seccomp or an old kernel: nothing of the program's is followed from here on.
            UNAVAILABLE.store(true, Ordering::Relaxed);
        }
        return false;
    }
    n as usize == out.len()
}

/// The NUL-terminated string at `addr`, when readable and UTF-8; one longer than [`MAX_TEXT`]
/// bytes is cut there.
pub fn text(addr: u64) -> Option<String> {
    let mut s = Vec::new();
    let mut chunk = [0u8; 256];
    while s.len() < MAX_TEXT {
        let at = addr.checked_add(s.len() as u64)?;
        // Up to the chunk's end or the page's, so a string ending just before an unmapped
        // page is read whole.
        let to_page = (4096 - (at % 4096)) as usize;
        let n = chunk.len().min(to_page).min(MAX_TEXT - s.len());
        if !read(at, &mut chunk[..n]) {
            return None;
        }
        match chunk[..n].iter().position(|&b| b == 0) {
            Some(end) => {
                s.extend_from_slice(&chunk[..end]);
                return String::from_utf8(s).ok();
            }
            None => s.extend_from_slice(&chunk[..n]),
        }
    }
    // Cut at MAX_TEXT (a long HLO dump), perhaps inside a character.
    Some(String::from_utf8_lossy(&s).into_owned())
}

/// Reads the event attributes at `attr` (a push's `eventAttrib` argument).
pub fn event(attr: u64) -> Result<Event, Skip> {
    let mut a = [0u8; ATTR_SIZE];
    if attr == 0 || !read(attr, &mut a) {
        return Err(Skip::Attributes);
    }
    let u16_at = |o: usize| u16::from_le_bytes([a[o], a[o + 1]]);
    let i32_at = |o: usize| i32::from_le_bytes(a[o..o + 4].try_into().expect("4 bytes"));
    let u64_at = |o: usize| u64::from_le_bytes(a[o..o + 8].try_into().expect("8 bytes"));
    let (version, size) = (u16_at(0), usize::from(u16_at(2)));
    if version == 0 || size < ATTR_SIZE {
        return Err(Skip::Attributes);
    }
    let message = match (i32_at(ATTR_MESSAGE_TYPE), u64_at(ATTR_MESSAGE)) {
        (MESSAGE_REGISTERED, 0) => return Err(Skip::UnknownHandle),
        (MESSAGE_REGISTERED, h) => Message::Registered(h),
        (MESSAGE_ASCII, p) => Message::Ascii(text(p).ok_or(Skip::Message)?),
        // UNICODE (wide strings, which XLA does not use) and unknown types.
        _ => return Err(Skip::Message),
    };
    let payload_at = (i32_at(ATTR_PAYLOAD_TYPE) == PAYLOAD_EXT)
        .then(|| (u64_at(ATTR_PAYLOAD), i32_at(ATTR_PAYLOAD_COUNT)));
    Ok(Event { message, payload_at })
}

/// The leading words of the first of `count` `nvtxPayloadData_t` at `data`; what was wrong
/// when any of it is unreadable or out of bounds.
fn first_payload(data: u64, count: i32) -> Result<Vec<u64>, String> {
    if !(1..=MAX_PAYLOADS).contains(&count) {
        return Err(format!("{count} entries at {data:#x}"));
    }
    // `nvtxPayloadData_t { u64 schemaId; size_t size; const void *payload }`, in one read.
    let mut d = [0u8; 24];
    if !read(data, &mut d) {
        return Err(format!("nvtxPayloadData_t at {data:#x} ({count} entries) unreadable"));
    }
    let word = |o: usize| u64::from_le_bytes(d[o..o + 8].try_into().expect("8 bytes"));
    let (schema, size, payload) = (word(0), word(8), word(16));
    if size > MAX_PAYLOAD_BYTES || payload == 0 {
        return Err(format!("schema {schema:#x}, {size} bytes at {payload:#x}"));
    }
    let n = (size as usize / 8).min(PAYLOAD_WORDS);
    let mut bytes = [0u8; PAYLOAD_WORDS * 8];
    if !read(payload, &mut bytes[..n * 8]) {
        return Err(format!("schema {schema:#x}, {size} bytes at {payload:#x} unreadable"));
    }
    Ok(bytes[..n * 8].chunks_exact(8).map(|w| u64::from_le_bytes(w.try_into().expect("8 bytes"))).collect())
}

/// Word `n` of an NVTX call's parameter struct `params` (handed by CUPTI for the call).
///
/// # Safety
/// `params` points to the call's parameter struct of `generated_nvtx_meta.h`, at least `n + 1`
/// pointer-sized fields long.
pub unsafe fn param(params: *const c_void, n: usize) -> u64 {
    // SAFETY: the caller's contract.
    unsafe { std::ptr::read_unaligned((params as *const u64).add(n)) }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attr(message_type: i32, message: u64, ptype: i32, count: i32, payload: u64) -> [u8; 48] {
        let mut a = [0u8; 48];
        a[0..2].copy_from_slice(&3u16.to_le_bytes());
        a[2..4].copy_from_slice(&48u16.to_le_bytes());
        a[16..20].copy_from_slice(&ptype.to_le_bytes());
        a[20..24].copy_from_slice(&count.to_le_bytes());
        a[24..32].copy_from_slice(&payload.to_le_bytes());
        a[32..36].copy_from_slice(&message_type.to_le_bytes());
        a[40..48].copy_from_slice(&message.to_le_bytes());
        a
    }

    #[test]
    fn unreadable_memory_is_refused_not_faulted_on() {
        let mut b = [0u8; 8];
        assert!(!read(0x18, &mut b));
        assert!(!read(u64::MAX - 3, &mut b));
        let v = 0x1234_5678_9abc_def0u64;
        assert!(read(&v as *const u64 as u64, &mut b));
        assert_eq!(u64::from_le_bytes(b), v);
        assert_eq!(text(c"Thunk:#name=a#".as_ptr() as u64).as_deref(), Some("Thunk:#name=a#"));
        assert_eq!(text(0x20), None);
        let long = std::ffi::CString::new("é".repeat(MAX_TEXT)).unwrap();
        let t = text(long.as_ptr() as u64).unwrap();
        assert!(t.len() <= MAX_TEXT + 3 && t.starts_with("éé"), "cut at MAX_TEXT: {}", t.len());
    }

    #[test]
    fn attributes_and_extended_payloads() {
        let words = [11u64, 22, 33];
        let data = [0x1000u64, 24, words.as_ptr() as u64];
        let a = attr(MESSAGE_REGISTERED, 0x77, PAYLOAD_EXT, 1, data.as_ptr() as u64);
        let e = event(a.as_ptr() as u64).unwrap();
        assert_eq!(e.message, Message::Registered(0x77));
        assert_eq!(e.payload(), Ok(vec![11, 22, 33]));
        let msg = c"XlaCompile:#module=m#";
        let a = attr(MESSAGE_ASCII, msg.as_ptr() as u64, 0, 0, 0);
        assert_eq!(event(a.as_ptr() as u64).unwrap().message, Message::Ascii("XlaCompile:#module=m#".into()));
    }

    #[test]
    fn bad_attributes_are_skips() {
        let at = |a: &[u8; 48]| event(a.as_ptr() as u64);
        assert_eq!(event(0), Err(Skip::Attributes));
        assert_eq!(event(0x10), Err(Skip::Attributes));
        let mut a = attr(MESSAGE_REGISTERED, 0x77, 0, 0, 0);
        a[2..4].copy_from_slice(&16u16.to_le_bytes());
        assert_eq!(at(&a), Err(Skip::Attributes), "smaller than the fields read");
        a[0..4].copy_from_slice(&[0; 4]);
        assert_eq!(at(&a), Err(Skip::Attributes), "no version");
        assert_eq!(at(&attr(2, 0x77, 0, 0, 0)), Err(Skip::Message), "UNICODE");
        assert_eq!(at(&attr(77, 0x77, 0, 0, 0)), Err(Skip::Message));
        assert_eq!(at(&attr(MESSAGE_ASCII, 0, 0, 0, 0)), Err(Skip::Message));
        assert_eq!(at(&attr(MESSAGE_REGISTERED, 0, 0, 0, 0)), Err(Skip::UnknownHandle));
        let words = [1u64; 3];
        for (data, count) in [
            (vec![0x1000u64, 24, 0x18], 1),
            (vec![0x1000, 24, 0], 1),
            (vec![0x1000, 1 << 40, words.as_ptr() as u64], 1),
            (vec![0x1000, 24, words.as_ptr() as u64], 100_000),
        ] {
            let e = at(&attr(MESSAGE_REGISTERED, 0x77, PAYLOAD_EXT, count, data.as_ptr() as u64)).unwrap();
            assert!(e.payload().is_err(), "{data:?} {count}");
        }
        let e = at(&attr(MESSAGE_REGISTERED, 0x77, PAYLOAD_EXT, 1, 0x10)).unwrap();
        assert!(e.payload().is_err(), "unmapped nvtxPayloadData_t");
        let small = [0x1000u64, 4, words.as_ptr() as u64];
        let e = at(&attr(MESSAGE_REGISTERED, 0x77, PAYLOAD_EXT, 1, small.as_ptr() as u64)).unwrap();
        assert_eq!(e.payload(), Ok(vec![]), "a payload of 4 bytes has no word");
    }
}
