//! The launch stacks agents define in their `MSG_LAUNCHES` messages: each stack arrives once per
//! thread with the agent's hash of it, and launch entries name it by that hash. Every decoder of
//! such messages reads them here.

use xpuprof_sdk::hash::IdMap;
use xpuprof_sdk::model::{FrameId, StackId};
use xpuprof_sdk::Emitter;
use xpuprof_wire::launches::{self, Entry, Launch};

use crate::Interner;

/// The session stack of each (process, agent stack hash).
#[derive(Debug, Default)]
pub struct AgentStacks {
    ids: IdMap<(u32, u64), StackId>,
}

impl AgentStacks {
    /// Reads a launch message of process `pid` whose agent writes wire protocol `protocol` (its
    /// hello's): defines its thread and every stack seen for the first time (`frame` turns each
    /// return address into a frame), and returns the thread id and its launches in order, for
    /// the decoder to emit after the definitions they use.
    pub fn read(
        &mut self,
        strs: &mut Interner,
        out: &mut Emitter,
        (pid, protocol): (u32, u32),
        payload: &[u8],
        mut frame: impl FnMut(&mut Interner, &mut Emitter, u64) -> FrameId,
    ) -> (u32, Vec<Launch>) {
        let (tid, entries) = launches::parse(payload, protocol);
        if tid != 0 {
            strs.thread(out, pid, tid, "");
        }
        let mut calls = Vec::with_capacity(entries.len());
        for e in entries {
            match e {
                Entry::Stack { hash, frames } => {
                    if self.ids.contains_key(&(pid, hash)) {
                        continue;
                    }
                    let ids: Vec<FrameId> = frames.iter().map(|&ra| frame(strs, out, ra)).collect();
                    let id = strs.stack(out, &ids);
                    self.ids.insert((pid, hash), id);
                }
                Entry::Launch(l) => calls.push(l),
            }
        }
        (tid, calls)
    }

    /// The stack with the agent's hash `hash` in process `pid`, or [`StackId::NONE`].
    pub fn get(&self, pid: u32, hash: u64) -> StackId {
        self.ids.get(&(pid, hash)).copied().unwrap_or(StackId::NONE)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use xpuprof_sdk::model::Record;
    use xpuprof_wire::{ENTRY_LAUNCH, ENTRY_STACK};

    /// A launch message of thread 9 in wire protocol 1: a 2-frame stack with hash 0x55, then a
    /// launch using it.
    fn message() -> Vec<u8> {
        let mut p = Vec::new();
        p.extend_from_slice(&9u32.to_le_bytes());
        p.extend_from_slice(&0u32.to_le_bytes());
        p.extend_from_slice(&[ENTRY_STACK, 2, 0, 0, 0, 0, 0, 0]);
        p.extend_from_slice(&0x55u64.to_le_bytes());
        p.extend_from_slice(&0x1000u64.to_le_bytes());
        p.extend_from_slice(&0x2000u64.to_le_bytes());
        p.extend_from_slice(&[ENTRY_LAUNCH, 1, 0, 0]);
        for v in [7u32, 42, 0] {
            p.extend_from_slice(&v.to_le_bytes());
        }
        for v in [100u64, 0x55, 200] {
            p.extend_from_slice(&v.to_le_bytes());
        }
        p
    }

    #[test]
    fn stacks_are_defined_once_and_launches_returned_in_order() {
        let (mut s, mut strs, mut out) = (AgentStacks::default(), Interner::default(), Emitter::detached());
        let mut frames = 0;
        let mut frame = |i: &mut Interner, e: &mut Emitter, ra: u64| {
            frames += 1;
            i.virtual_frame(e, 4, ra)
        };
        let (tid, calls) = s.read(&mut strs, &mut out, (4, 1), &message(), &mut frame);
        assert_eq!((tid, calls.len(), calls[0].correlation, calls[0].stack), (9, 1, 42, 0x55));
        let again = s.read(&mut strs, &mut out, (4, 1), &message(), &mut frame);
        assert_eq!(again.1.len(), 1);
        assert_eq!(frames, 2, "the second message's stack was known");
        assert!(!s.get(4, 0x55).is_none() && s.get(5, 0x55).is_none());
        let recs: Vec<Record> =
            xpuprof_sdk::codec::Decoder::new(&out.take_buffer()).map(Result::unwrap).collect();
        assert_eq!(recs.iter().filter(|r| matches!(r, Record::Stack(_))).count(), 1);
        assert_eq!(recs.iter().filter(|r| matches!(r, Record::Thread(_))).count(), 1);
    }
}
