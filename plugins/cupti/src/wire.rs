//! The byte stream from the in-target agent to the host plugin (also the format of dump files
//! and of the committed fixtures).
//!
//! This file is shared: the agent includes it with `#[path]`, so both sides always agree. It
//! has no dependencies besides `std`.
//!
//! A stream is a sequence of messages: `len: u32 LE` (bytes after this field), `type: u8`,
//! three zero bytes, then the payload. All integers are little-endian. Unknown message types
//! are skipped by `len`. Payloads:
//!
//! - [`MSG_HELLO`]: `pid u32, cupti_version u32, protocol u32, flags u32` (see `FLAG_*`),
//!   then the command line as UTF-8.
//! - [`MSG_MODULES`]: `count u32`, then per mapping `start u64, end u64, file_offset u64,
//!   path_len u32, path bytes` (executable mappings of the process, from `/proc/self/maps`).
//! - [`MSG_LAUNCHES`]: `tid u32, pad u32`, then entries: a stack definition
//!   `ENTRY_STACK u8, frames u8, pad u16, pad u32, hash u64, frames × u64 return address`
//!   or a launch `ENTRY_LAUNCH u8, domain u8, flags u16, cbid u32, correlation u32, result u32,
//!   entry time u64, stack hash u64 (0: none), exit time u64 (0: still running at the drain)`.
//! - [`MSG_ACTIVITY`]: `count u32, pad u32`, `count × u16` record sizes, zero padding to 8
//!   bytes, then the records exactly as CUPTI wrote them back to back.
//! - [`MSG_DROPPED`]: `count u64, time u64`: records CUPTI dropped (no buffer space).
//! - [`MSG_CLOCK`]: `cupti u64, monotonic u64`: a paired reading when the timestamp callback
//!   could not be installed.
//! - [`MSG_LOST_LAUNCHES`]: `count u64`: launch records the agent dropped (queue full).
//! - [`MSG_STRINGS`]: `count u32`, then per string `address u64, len u32, bytes`: the text
//!   behind a `const char*` field of the activity records that follow (kernel, marker, device
//!   names point into the target's memory). Always sent before the records that use it.
//! - [`MSG_API_NAMES`]: `count u32`, then `domain u32, cbid u32, len u32, bytes`.
//! - [`MSG_ERROR`]: UTF-8 text: why the agent could not trace this process.
//! - [`MSG_BYE`]: `launches u64, stacks u64`: the agent flushed everything and is done.

/// Protocol version in [`MSG_HELLO`].
pub const PROTOCOL: u32 = 1;

/// Hello: who is talking.
pub const MSG_HELLO: u8 = 1;
/// Module map.
pub const MSG_MODULES: u8 = 2;
/// Launch sites and their stacks.
pub const MSG_LAUNCHES: u8 = 3;
/// Raw CUPTI activity records.
pub const MSG_ACTIVITY: u8 = 4;
/// CUPTI dropped records.
pub const MSG_DROPPED: u8 = 5;
/// Paired clock reading.
pub const MSG_CLOCK: u8 = 6;
/// Launch records the agent itself dropped.
pub const MSG_LOST_LAUNCHES: u8 = 7;
/// End of stream.
pub const MSG_BYE: u8 = 8;
/// Strings behind pointers in activity records.
pub const MSG_STRINGS: u8 = 9;
/// Names of runtime/driver API callback ids.
pub const MSG_API_NAMES: u8 = 10;
/// The agent could not start tracing: UTF-8 text saying why.
pub const MSG_ERROR: u8 = 11;

/// CUPTI callback domain of the runtime API (`CUPTI_CB_DOMAIN_RUNTIME_API`).
pub const DOMAIN_RUNTIME: u8 = 2;
/// CUPTI callback domain of the driver API (`CUPTI_CB_DOMAIN_DRIVER_API`).
pub const DOMAIN_DRIVER: u8 = 1;

/// HELLO flag: CUPTI timestamps are CLOCK_MONOTONIC (timestamp callback installed).
pub const FLAG_MONOTONIC_TIMESTAMPS: u32 = 1;
/// HELLO flag: launch stacks are captured by the agent (launch entries become `LaunchSite`s).
pub const FLAG_AGENT_STACKS: u32 = 2;
/// HELLO flag: `api = "launches"`: launch entries also stand for the API calls (`ApiCall`s),
/// timed by the agent's entry/exit callbacks instead of CUPTI API records.
pub const FLAG_API_FROM_CALLBACKS: u32 = 4;

/// Launch entry tag.
pub const ENTRY_LAUNCH: u8 = 2;
/// Stack entry tag.
pub const ENTRY_STACK: u8 = 1;
/// Size of a launch entry.
pub const LAUNCH_ENTRY_BYTES: usize = 40;
/// Launch flag: an inner launch-class call made while another one was active on the thread.
pub const LAUNCH_NESTED: u16 = 1;

/// Size of the message header.
pub const HEADER_BYTES: usize = 8;

/// Starts a message of type `ty` in `out`; finish it with [`end_message`].
pub fn begin_message(out: &mut Vec<u8>, ty: u8) -> usize {
    let at = out.len();
    out.extend_from_slice(&[0, 0, 0, 0, ty, 0, 0, 0]);
    at
}

/// Writes the length of the message started at `at`.
pub fn end_message(out: &mut [u8], at: usize) {
    let len = (out.len() - at - 4) as u32;
    out[at..at + 4].copy_from_slice(&len.to_le_bytes());
}

/// One message borrowed from a stream.
#[derive(Debug, Clone, Copy)]
pub struct Message<'a> {
    /// Message type (`MSG_*`).
    pub ty: u8,
    /// Payload.
    pub payload: &'a [u8],
}

/// Splits the complete messages off the front of `buf`; returns them and the bytes consumed.
pub fn split_messages(buf: &[u8]) -> (Vec<Message<'_>>, usize) {
    let mut out = Vec::new();
    let mut at = 0;
    while buf.len() - at >= HEADER_BYTES {
        let len = u32::from_le_bytes([buf[at], buf[at + 1], buf[at + 2], buf[at + 3]]) as usize;
        if len < 4 || buf.len() - at - 4 < len {
            break;
        }
        out.push(Message { ty: buf[at + 4], payload: &buf[at + HEADER_BYTES..at + 4 + len] });
        at += 4 + len;
    }
    (out, at)
}

/// Little-endian reader over a payload; reads past the end give 0 and set `short`.
#[derive(Debug)]
pub struct Reader<'a> {
    buf: &'a [u8],
    at: usize,
    /// A read went past the end.
    pub short: bool,
}

impl<'a> Reader<'a> {
    /// Reads `buf` from the start.
    pub fn new(buf: &'a [u8]) -> Self {
        Self { buf, at: 0, short: false }
    }

    /// Bytes left.
    pub fn remaining(&self) -> usize {
        self.buf.len() - self.at
    }

    /// Current offset.
    pub fn position(&self) -> usize {
        self.at
    }

    /// The next `n` bytes.
    pub fn bytes(&mut self, n: usize) -> &'a [u8] {
        if self.remaining() < n {
            self.short = true;
            self.at = self.buf.len();
            return &[];
        }
        let b = &self.buf[self.at..self.at + n];
        self.at += n;
        b
    }

    /// Skips to the next multiple of 8.
    pub fn align8(&mut self) {
        let pad = (8 - self.at % 8) % 8;
        self.bytes(pad);
    }

    /// A `u8`.
    pub fn u8(&mut self) -> u8 {
        self.bytes(1).first().copied().unwrap_or(0)
    }

    /// A `u16`.
    pub fn u16(&mut self) -> u16 {
        self.bytes(2).try_into().map(u16::from_le_bytes).unwrap_or(0)
    }

    /// A `u32`.
    pub fn u32(&mut self) -> u32 {
        self.bytes(4).try_into().map(u32::from_le_bytes).unwrap_or(0)
    }

    /// A `u64`.
    pub fn u64(&mut self) -> u64 {
        self.bytes(8).try_into().map(u64::from_le_bytes).unwrap_or(0)
    }
}
