//! Reading a [`MSG_LAUNCHES`](crate::MSG_LAUNCHES) payload: the thread, then stack definitions
//! and launch entries in the order the agent wrote them. Every host decoder of launch sites
//! reads them here, so the entry layout lives next to the constants that define it.

use crate::{Reader, ENTRY_LAUNCH, ENTRY_STACK};

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

/// A parsed launch message: the thread and its entries (a truncated tail is dropped).
pub fn parse(payload: &[u8]) -> (u32, Vec<Entry>) {
    let mut r = Reader::new(payload);
    let tid = r.u32();
    r.u32();
    let mut out = Vec::new();
    while r.remaining() >= 8 && !r.short {
        match r.u8() {
            ENTRY_STACK => {
                let n = r.u8() as usize;
                r.bytes(6);
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
        let (tid, entries) = parse(&p);
        assert_eq!(tid, 7);
        assert_eq!(entries.len(), 2);
        assert_eq!(entries[0], Entry::Stack { hash: 99, frames: vec![0x1000, 0x2000] });
        let Entry::Launch(l) = entries[1] else { panic!("not a launch") };
        assert_eq!((l.domain, l.api_id, l.correlation, l.time, l.stack, l.end), (3, 5, 42, 1000, 99, 1500));
    }
}
