//! Reading a [`MSG_LAUNCHES`](crate::MSG_LAUNCHES) payload: the thread, then stack definitions
//! and launch entries in the order the agent wrote them. Every host decoder of launch sites
//! reads them here, and every agent writes its stack entries with [`put_stack`], so the entry
//! layout lives next to the constants that define it.
//!
//! The stack entry's frame count is the one field whose framing changed: protocol 1 wrote it as
//! one byte (`ENTRY_STACK u8, frames u8, pad u16, pad u32, hash u64`), which a stack of 256 or
//! more frames overflowed; protocol 2 writes it as a `u16` (`ENTRY_STACK u8, pad u8, frames u16,
//! pad u32, hash u64`) and agents keep stacks to [`MAX_STACK_FRAMES`]. [`parse`] reads both, by
//! the protocol of the stream's hello.

use crate::{Reader, ENTRY_LAUNCH, ENTRY_STACK, MAX_STACK_FRAMES, PROTOCOL, STACK_ENTRY_BYTES};

/// One entry of a launch message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Entry {
    /// A stack the thread used for the first time: its hash and return addresses, innermost
    /// first.
    Stack {
        /// The agent's hash of the frames (what launch entries name).
        hash: u64,
        /// Return addresses, innermost first.
        frames: Vec<u64>,
    },
    /// A launch-class API call.
    Launch(Launch),
}

/// A launch-class API call as the agent recorded it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Launch {
    /// The agent's API domain (its own numbering per backend).
    pub domain: u8,
    /// `LAUNCH_*` flags.
    pub flags: u16,
    /// The API's id in its domain.
    pub api_id: u32,
    /// The call's correlation id.
    pub correlation: u32,
    /// The call's result (0 while still running at the drain).
    pub result: u32,
    /// Entry time, session clock.
    pub time: u64,
    /// Hash of its stack (0: none).
    pub stack: u64,
    /// Exit time, session clock (0: still running at the drain).
    pub end: u64,
}

/// Appends a stack entry in this build's [`PROTOCOL`]: `hash` and `frames` (innermost first;
/// at most [`MAX_STACK_FRAMES`] are written, the outermost ones cut).
pub fn put_stack(out: &mut Vec<u8>, hash: u64, frames: &[u64]) {
    let frames = &frames[..frames.len().min(MAX_STACK_FRAMES)];
    let n = (frames.len() as u16).to_le_bytes();
    out.extend_from_slice(&[ENTRY_STACK, 0, n[0], n[1], 0, 0, 0, 0]);
    out.extend_from_slice(&hash.to_le_bytes());
    for f in frames {
        out.extend_from_slice(&f.to_le_bytes());
    }
}

/// The frame count of the stack entry at the front of `entry`, as protocol `protocol` writes it.
pub fn stack_frames(entry: &[u8], protocol: u32) -> usize {
    if protocol <= 1 {
        entry.get(1).map_or(0, |&n| usize::from(n))
    } else {
        entry.get(2..4).map_or(0, |b| usize::from(u16::from_le_bytes([b[0], b[1]])))
    }
}

/// The size of the stack entry at the front of `entry` in this build's [`PROTOCOL`] (what the
/// agent itself wrote), fixed part and frames.
pub fn stack_entry_len(entry: &[u8]) -> usize {
    STACK_ENTRY_BYTES + 8 * stack_frames(entry, PROTOCOL)
}

/// A parsed launch message of a stream in protocol `protocol` (its hello's): the thread and its
/// entries (a truncated tail is dropped).
pub fn parse(payload: &[u8], protocol: u32) -> (u32, Vec<Entry>) {
    let mut r = Reader::new(payload);
    let tid = r.u32();
    r.u32();
    let mut out = Vec::new();
    while r.remaining() >= 8 && !r.short {
        match r.u8() {
            ENTRY_STACK => {
                let (count_v1, count) = (r.u8(), r.u16());
                r.u32();
                let n = if protocol <= 1 { usize::from(count_v1) } else { usize::from(count) };
                let hash = r.u64();
                let frames: Vec<u64> = (0..n).map(|_| r.u64()).collect();
                if r.short {
                    break;
                }
                out.push(Entry::Stack { hash, frames });
            }
            ENTRY_LAUNCH => {
                let (domain, flags) = (r.u8(), r.u16());
                let (api_id, correlation, result) = (r.u32(), r.u32(), r.u32());
                let (time, stack, end) = (r.u64(), r.u64(), r.u64());
                if r.short {
                    break;
                }
                out.push(Entry::Launch(Launch {
                    domain,
                    flags,
                    api_id,
                    correlation,
                    result,
                    time,
                    stack,
                    end,
                }));
            }
            _ => break,
        }
    }
    (tid, out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_stacks_and_launches_in_order() {
        let mut p = Vec::new();
        p.extend_from_slice(&7u32.to_le_bytes());
        p.extend_from_slice(&0u32.to_le_bytes());
        p.extend_from_slice(&[ENTRY_STACK, 2, 0, 0, 0, 0, 0, 0]);
        p.extend_from_slice(&99u64.to_le_bytes());
        p.extend_from_slice(&0x1000u64.to_le_bytes());
        p.extend_from_slice(&0x2000u64.to_le_bytes());
        let mut e = [0u8; crate::LAUNCH_ENTRY_BYTES];
        e[0] = ENTRY_LAUNCH;
        e[1] = 3;
        e[4..8].copy_from_slice(&5u32.to_le_bytes());
        e[8..12].copy_from_slice(&42u32.to_le_bytes());
        e[16..24].copy_from_slice(&1000u64.to_le_bytes());
        e[24..32].copy_from_slice(&99u64.to_le_bytes());
        e[32..40].copy_from_slice(&1500u64.to_le_bytes());
        p.extend_from_slice(&e);
        p.extend_from_slice(&e[..20]); // truncated: dropped
        let (tid, entries) = parse(&p, 1);
        assert_eq!(tid, 7);
        assert_eq!(entries.len(), 2);
        assert_eq!(entries[0], Entry::Stack { hash: 99, frames: vec![0x1000, 0x2000] });
        let Entry::Launch(l) = entries[1] else { panic!("not a launch") };
        assert_eq!((l.domain, l.api_id, l.correlation, l.time, l.stack, l.end), (3, 5, 42, 1000, 99, 1500));
    }

    /// A launch entry with correlation `corr` naming stack `hash`.
    fn launch(corr: u32, hash: u64) -> [u8; crate::LAUNCH_ENTRY_BYTES] {
        let mut e = [0u8; crate::LAUNCH_ENTRY_BYTES];
        e[0] = ENTRY_LAUNCH;
        e[8..12].copy_from_slice(&corr.to_le_bytes());
        e[24..32].copy_from_slice(&hash.to_le_bytes());
        e
    }

    #[test]
    fn stacks_of_256_and_300_frames_round_trip_with_what_follows_them() {
        for n in [1usize, 255, 256, 300, MAX_STACK_FRAMES] {
            let frames: Vec<u64> = (0..n as u64).map(|i| 0x40_0000 + i * 16).collect();
            let mut p = vec![0u8; 8];
            put_stack(&mut p, 0xabc, &frames);
            p.extend_from_slice(&launch(9, 0xabc));
            assert_eq!(stack_entry_len(&p[8..]), STACK_ENTRY_BYTES + 8 * n);
            let (_, entries) = parse(&p, PROTOCOL);
            assert_eq!(entries.len(), 2, "{n} frames: the launch after the stack is read");
            assert_eq!(entries[0], Entry::Stack { hash: 0xabc, frames }, "{n} frames");
            let Entry::Launch(l) = entries[1] else { panic!("not a launch") };
            assert_eq!((l.correlation, l.stack), (9, 0xabc), "{n} frames");
        }
    }

    #[test]
    fn a_stack_above_the_bound_is_cut_to_it() {
        let frames: Vec<u64> = (0..MAX_STACK_FRAMES as u64 + 10).collect();
        let mut p = vec![0u8; 8];
        put_stack(&mut p, 1, &frames);
        let (_, entries) = parse(&p, PROTOCOL);
        assert_eq!(entries, [Entry::Stack { hash: 1, frames: frames[..MAX_STACK_FRAMES].to_vec() }]);
    }

    #[test]
    fn protocol_1_stack_entries_are_still_read() {
        // What an agent of protocol 1 wrote: the count in byte 1, then a launch.
        let mut p = vec![0u8; 8];
        p.extend_from_slice(&[ENTRY_STACK, 3, 0, 0, 0, 0, 0, 0]);
        p.extend_from_slice(&0x77u64.to_le_bytes());
        for f in [0x10u64, 0x20, 0x30] {
            p.extend_from_slice(&f.to_le_bytes());
        }
        p.extend_from_slice(&launch(4, 0x77));
        let (_, entries) = parse(&p, 1);
        assert_eq!(entries[0], Entry::Stack { hash: 0x77, frames: vec![0x10, 0x20, 0x30] });
        assert!(matches!(entries[1], Entry::Launch(l) if l.correlation == 4));
        assert_eq!(stack_frames(&p[8..], 1), 3);
    }
}
