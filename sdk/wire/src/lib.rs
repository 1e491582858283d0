//! # xpuprof-wire: the stream from an in-target agent to its host plugin
//!
//! One crate, used by both ends: the agents (through `xpuprof-agent-kit`) write it, the host
//! plugins' decoders read it, so the two always agree on the bytes. It is also the format of the
//! agents' dump files and of the committed fixtures. No dependencies besides `thiserror`.
//!
//! A stream is a sequence of messages: `len: u32 LE` (bytes after this field), `type: u8`,
//! three zero bytes, then the payload. All integers are little-endian. Unknown message types are
//! skipped by `len`. The first message is always [`MSG_HELLO`], whose third field is the
//! [`PROTOCOL`] version: a host reads every version from [`OLDEST_PROTOCOL`] to [`PROTOCOL`] (an
//! agent of an older build keeps working) and refuses a stream of any other ([`Hello::check`])
//! instead of decoding it wrongly. Versions: 1, the first; 2, a stack entry's frame count as a
//! `u16` (was one byte). Payloads:
//!
//! - [`MSG_HELLO`]: `pid u32, runtime_version u32, protocol u32, flags u32` (see `FLAG_*`), then
//!   the command line as UTF-8 ([`Hello`]). `runtime_version` is the vendor tracing library's
//!   own version (CUPTI's API version for the CUPTI agent); 0 in a hello that only precedes an
//!   [`MSG_ERROR`].
//! - [`MSG_MODULES`]: `count u32`, then per mapping `start u64, end u64, file_offset u64,
//!   path_len u32, path bytes` (executable mappings of the process, from `/proc/self/maps`).
//! - [`MSG_LAUNCHES`]: `tid u32, pad u32`, then entries: a stack definition
//!   `ENTRY_STACK u8, pad u8, frames u16, pad u32, hash u64, frames × u64 return address`
//!   (at most [`MAX_STACK_FRAMES`]; protocol 1 wrote `frames` as one byte in place of the first
//!   pad byte and read 256 frames as 0: see [`launches`]) or a launch `ENTRY_LAUNCH u8, domain u8, flags u16, api_id u32, correlation u32, result u32,
//!   entry time u64, stack hash u64 (0: none), exit time u64 (0: still running at the drain)`.
//! - [`MSG_RECORDS`]: `count u32, pad u32`, `count × u16` record sizes, zero padding to 8 bytes,
//!   then the vendor library's records exactly as it wrote them, back to back.
//! - [`MSG_DROPPED`]: `count u64, time u64`: records the vendor library dropped (no buffer space).
//! - [`MSG_CLOCK`]: `vendor u64, monotonic u64`: a paired reading of the vendor library's clock
//!   and the session clock, when device timestamps are not in the session clock.
//! - [`MSG_LOST_LAUNCHES`]: `count u64`: launch records the agent dropped.
//! - [`MSG_STRINGS`]: `count u32`, then per string `address u64, len u32, bytes`: the text behind
//!   a `const char*` field of the records that follow (names point into the target's memory).
//!   Always sent before the records that use it.
//! - [`MSG_API_NAMES`]: `count u32`, then `domain u32, api_id u32, len u32, bytes`.
//! - [`MSG_ERROR`]: UTF-8 text: why the agent could not trace this process.
//! - [`MSG_LOST_BYTES`]: `chunks u64, bytes u64`: output the agent's channel dropped (the host
//!   was gone or too slow).
//! - [`MSG_BYE`]: `launches u64, stacks u64`: the agent flushed everything and is done.
//! - [`MSG_PY_FRAMES`]: `count u32`, then per frame `id u64, len u32, bytes`: the text
//!   (`function (file.py:line)`) of the Python frames that stacks carry as tagged ids
//!   ([`PY_FRAME_TAG`]); sent before the launches whose stacks use them.
//! - [`MSG_PY_COUNTS`]: `with_frames u64, without_frames u64, errors u64`: launch stacks that got
//!   Python frames, that got none (a thread with no Python frame running), and whose frame
//!   chain could not be read; sent before [`MSG_BYE`]. Agents that attribute launches of PyTorch's
//!   autograd engine threads to the `backward()` call they run add `autograd_attributed u64,
//!   autograd_ambiguous u64, autograd_unattributed u64`, and agents that place Python frames by
//!   their eval call's marker on the C stack then add `runs_by_symbol u64` (runs placed by the
//!   eval loop's symbol instead; hosts read them when present).
//! - [`MSG_PY_FIRST_LINES`]: `count u32`, then per frame `id u64, first_line u32`: the first line
//!   of the function of Python frames [`MSG_PY_FRAMES`] defined (its code object's
//!   `co_firstlineno`), sent after their definitions; a host that does not read it skips it.
//! - [`MSG_WINDOW`]: `open u8, cause u8, pad u16, time u64`, then the marker's text: the agent
//!   started or stopped collecting ([`control`], which also has the host's commands to the agent,
//!   sent on the same socket the other way).
//!
//! Message numbers never change meaning; new messages get new numbers, and a change to an
//! existing payload raises [`PROTOCOL`]. The numbers are shared out:
//!
//! | numbers | messages |
//! | --- | --- |
//! | 1–63 | the common messages above, every agent; 13 excepted ([`MSG_BACKEND_LEGACY`]: a backend's message from before this table) |
//! | 64–127 | a backend's own messages numbered before the last row was every backend's (64–73 taken); no longer given out |
//! | 128–255 | a backend's own messages, defined by its wire crate (`plugins/<backend>/wire`); a stream has one backend, so backends may reuse each other's numbers |

pub mod control;
mod hello;
pub mod launches;
pub mod maps;
pub mod names;
pub mod opts;
mod reader;
pub mod records;
pub mod stream;

pub use hello::{Hello, ProtocolError};
pub use reader::Reader;

/// Protocol version in [`MSG_HELLO`]. Raise it whenever an existing payload changes, and keep
/// reading the older versions down to [`OLDEST_PROTOCOL`].
pub const PROTOCOL: u32 = 2;

/// The oldest protocol version a host still reads (agents of older builds keep working).
pub const OLDEST_PROTOCOL: u32 = 1;

/// Most frames in one launch stack: agents cut deeper stacks to this (an agent's `max_depth`
/// is kept within it; `XPUPROF_AGENT_MAX_DEPTH` in `agent.h`).
pub const MAX_STACK_FRAMES: usize = 1024;

/// Hello: who is talking.
pub const MSG_HELLO: u8 = 1;
/// Module map.
pub const MSG_MODULES: u8 = 2;
/// Launch sites and their stacks.
pub const MSG_LAUNCHES: u8 = 3;
/// Raw vendor records (CUPTI activity records for the CUPTI agent).
pub const MSG_RECORDS: u8 = 4;
/// The vendor library dropped records.
pub const MSG_DROPPED: u8 = 5;
/// Paired clock reading.
pub const MSG_CLOCK: u8 = 6;
/// Launch records the agent itself dropped.
pub const MSG_LOST_LAUNCHES: u8 = 7;
/// End of stream.
pub const MSG_BYE: u8 = 8;
/// Strings behind pointers in vendor records.
pub const MSG_STRINGS: u8 = 9;
/// Names of API ids.
pub const MSG_API_NAMES: u8 = 10;
/// The agent could not start tracing: UTF-8 text saying why.
pub const MSG_ERROR: u8 = 11;
/// Output the agent's channel dropped.
pub const MSG_LOST_BYTES: u8 = 12;
/// Taken by a backend's own message, defined here before the numbers were shared out (the
/// backend's wire crate defines it now); no common message may use it.
pub const MSG_BACKEND_LEGACY: u8 = 13;

/// Python frame definitions.
pub const MSG_PY_FRAMES: u8 = 14;
/// Python frame counts of the session.
pub const MSG_PY_COUNTS: u8 = 15;
/// A capture window opened or closed ([`control::WindowEdge`]).
pub const MSG_WINDOW: u8 = 16;
/// First lines of the functions of Python frames.
pub const MSG_PY_FIRST_LINES: u8 = 17;

/// High byte of a Python frame's id in a stack's address list: no user or kernel code address
/// starts with it (x86-64 and aarch64 user addresses are below 2^48, kernel ones start 0xffff).
pub const PY_FRAME_TAG: u64 = 0xFE00_0000_0000_0000;

/// True when a stack entry is a Python frame id ([`PY_FRAME_TAG`]) rather than a code address.
#[inline]
pub fn is_python_frame(addr: u64) -> bool {
    addr & 0xFF00_0000_0000_0000 == PY_FRAME_TAG
}

/// Appends a [`MSG_PY_FRAMES`] message with `frames` (tagged id, text); nothing when empty.
pub fn put_py_frames(out: &mut Vec<u8>, frames: &[(u64, String)]) {
    if frames.is_empty() {
        return;
    }
    let at = begin_message(out, MSG_PY_FRAMES);
    out.extend_from_slice(&(frames.len() as u32).to_le_bytes());
    for (id, text) in frames {
        out.extend_from_slice(&id.to_le_bytes());
        out.extend_from_slice(&(text.len() as u32).to_le_bytes());
        out.extend_from_slice(text.as_bytes());
    }
    end_message(out, at);
}

/// Reads a [`MSG_PY_FRAMES`] payload: (tagged id, text) pairs (a short payload ends early).
pub fn read_py_frames(payload: &[u8]) -> Vec<(u64, String)> {
    let mut r = Reader::new(payload);
    let n = r.u32();
    let mut out = Vec::new();
    for _ in 0..n {
        let id = r.u64();
        let len = r.u32() as usize;
        let text = String::from_utf8_lossy(r.bytes(len)).into_owned();
        if r.short {
            break;
        }
        out.push((id, text));
    }
    out
}

/// Appends a [`MSG_PY_FIRST_LINES`] message with `lines` (tagged id, first line); nothing when
/// empty.
pub fn put_py_first_lines(out: &mut Vec<u8>, lines: &[(u64, u32)]) {
    if lines.is_empty() {
        return;
    }
    let at = begin_message(out, MSG_PY_FIRST_LINES);
    out.extend_from_slice(&(lines.len() as u32).to_le_bytes());
    for (id, line) in lines {
        out.extend_from_slice(&id.to_le_bytes());
        out.extend_from_slice(&line.to_le_bytes());
    }
    end_message(out, at);
}

/// Reads a [`MSG_PY_FIRST_LINES`] payload: (tagged id, first line) pairs (a short payload ends
/// early).
pub fn read_py_first_lines(payload: &[u8]) -> Vec<(u64, u32)> {
    let mut r = Reader::new(payload);
    let n = r.u32();
    let mut out = Vec::new();
    for _ in 0..n {
        let (id, line) = (r.u64(), r.u32());
        if r.short {
            break;
        }
        out.push((id, line));
    }
    out
}

/// First backend-private message number (up to 0xFF).
pub const MSG_BACKEND_FIRST: u8 = 0x80;

/// HELLO flag: device timestamps are already in the session clock (`CLOCK_MONOTONIC`).
pub const FLAG_MONOTONIC_TIMESTAMPS: u32 = 1;
/// HELLO flag: launch stacks are captured by the agent (launch entries become launch sites).
pub const FLAG_AGENT_STACKS: u32 = 2;
/// HELLO flag: launch entries also stand for the API calls, timed by the agent's entry/exit
/// callbacks instead of vendor API records.
pub const FLAG_API_FROM_CALLBACKS: u32 = 4;
/// HELLO flag: the agent calls the correlation trampoline at launches, so the eBPF source sends
/// their stacks (`launch_stacks = "ebpf"` or `"both"`). Without [`FLAG_AGENT_STACKS`], launch
/// entries become launch sites without a stack: the host then waits for the eBPF source's.
pub const FLAG_TRAMPOLINE_STACKS: u32 = 8;

/// Launch entry tag.
pub const ENTRY_LAUNCH: u8 = 2;
/// Stack entry tag.
pub const ENTRY_STACK: u8 = 1;
/// Size of a launch entry.
pub const LAUNCH_ENTRY_BYTES: usize = 40;
/// Size of a stack entry's fixed part (the frames follow).
pub const STACK_ENTRY_BYTES: usize = 16;
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

/// Appends a whole message of type `ty` whose payload is `parts` concatenated.
pub fn put_message(out: &mut Vec<u8>, ty: u8, parts: &[&[u8]]) {
    let at = begin_message(out, ty);
    for p in parts {
        out.extend_from_slice(p);
    }
    end_message(out, at);
}

/// Appends a [`MSG_DROPPED`] message: `count` records the vendor library dropped, by `time`.
pub fn put_dropped(out: &mut Vec<u8>, count: u64, time: u64) {
    put_message(out, MSG_DROPPED, &[&count.to_le_bytes(), &time.to_le_bytes()]);
}

/// Appends a [`MSG_CLOCK`] message: the vendor clock's reading `vendor` taken at `monotonic`.
pub fn put_clock(out: &mut Vec<u8>, vendor: u64, monotonic: u64) {
    put_message(out, MSG_CLOCK, &[&vendor.to_le_bytes(), &monotonic.to_le_bytes()]);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_and_splits_messages() {
        let mut b = Vec::new();
        put_message(&mut b, MSG_BYE, &[&7u64.to_le_bytes(), &8u64.to_le_bytes()]);
        let at = begin_message(&mut b, 200);
        b.push(1);
        end_message(&mut b, at);
        b.extend_from_slice(&[20, 0, 0]); // a partial header stays for the next read
        let (msgs, used) = split_messages(&b);
        assert_eq!(used, b.len() - 3);
        assert_eq!(msgs.len(), 2);
        assert_eq!((msgs[0].ty, msgs[0].payload.len()), (MSG_BYE, 16));
        assert_eq!((msgs[1].ty, msgs[1].payload), (200, &[1u8][..]));
    }

    #[test]
    fn python_frames_round_trip_and_are_told_from_addresses() {
        let frames = vec![
            (PY_FRAME_TAG | 1, "run (/w/a.py:3)".to_owned()),
            (PY_FRAME_TAG | 2, "é (b.py:9)".to_owned()),
        ];
        let mut b = Vec::new();
        put_py_frames(&mut b, &[]);
        assert!(b.is_empty());
        put_py_frames(&mut b, &frames);
        let (msgs, _) = split_messages(&b);
        assert_eq!(msgs[0].ty, MSG_PY_FRAMES);
        assert_eq!(read_py_frames(msgs[0].payload), frames);
        assert_eq!(read_py_frames(&msgs[0].payload[..20]), vec![]);
        assert!(is_python_frame(PY_FRAME_TAG | 7));
        assert!(!is_python_frame(0x7f00_0000_1000) && !is_python_frame(0xffff_ffff_8100_0000));
    }

    #[test]
    fn python_first_lines_round_trip() {
        let lines = vec![(PY_FRAME_TAG | 1, 1), (PY_FRAME_TAG | 2, 307)];
        let mut b = Vec::new();
        put_py_first_lines(&mut b, &[]);
        assert!(b.is_empty());
        put_py_first_lines(&mut b, &lines);
        let (msgs, _) = split_messages(&b);
        assert_eq!(msgs[0].ty, MSG_PY_FIRST_LINES);
        assert_eq!(read_py_first_lines(msgs[0].payload), lines);
        assert_eq!(read_py_first_lines(&msgs[0].payload[..16]), vec![(PY_FRAME_TAG | 1, 1)]);
    }
}
