//! The launch stacks agents define in their `MSG_LAUNCHES` messages: each stack arrives once per
//! thread with the agent's hash of it, and launch entries name it by that hash. Every decoder of
//! such messages reads them here.

use xpuprof_sdk::hash::IdMap;
use xpuprof_sdk::model::{FrameId, StackId};
use xpuprof_sdk::Emitter;
use xpuprof_wire::launches::{self, Entry, Launch};

use super::compile::{CompileFrames, COMPILE_MARKER};
use crate::Interner;

/// The session stack of each (process, agent stack hash).
#[derive(Debug, Default)]
pub struct AgentStacks {
    ids: IdMap<(u32, u64), StackId>,
    /// Functions of compile-time work: a stack holding one gets [`COMPILE_MARKER`] innermost.
    pub compile: CompileFrames,
    /// Stacks that got [`COMPILE_MARKER`] from [`AgentStacks::compile`].
    pub compile_marked: u64,
}

impl AgentStacks {
    /// Reads a launch message of process `pid` whose agent writes wire protocol `protocol` (its
    /// hello's): defines its thread and every stack seen for the first time (`frame` turns each
    /// return address into a frame), and returns the thread id and its launches in order, for
    /// the decoder to emit after the definitions they use. `name` gives the text of an entry
    /// that is a named frame (a Python frame or an agent's label), for [`AgentStacks::compile`].
    pub fn read<'n>(
        &mut self,
        strs: &mut Interner,
        out: &mut Emitter,
        (pid, protocol): (u32, u32),
        payload: &[u8],
        mut frame: impl FnMut(&mut Interner, &mut Emitter, u64) -> FrameId,
        name: impl Fn(u64) -> Option<&'n str>,
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
                    let mut ids: Vec<FrameId> = frames.iter().map(|&ra| frame(strs, out, ra)).collect();
                    if self.is_compile_time(&frames, &name) {
                        ids.insert(0, strs.named_frame(out, COMPILE_MARKER));
                        self.compile_marked += 1;
                    }
                    let id = strs.stack(out, &ids);
                    self.ids.insert((pid, hash), id);
                }
                Entry::Launch(l) => calls.push(l),
            }
        }
        (tid, calls)
    }

    /// True when a frame of `frames` is a compile-time function and none is the marker already.
    fn is_compile_time<'n>(&self, frames: &[u64], name: &impl Fn(u64) -> Option<&'n str>) -> bool {
        if self.compile.is_empty() {
            return false;
        }
        let names = || frames.iter().filter_map(|&ra| name(ra));
        !names().any(|n| n == COMPILE_MARKER) && names().any(|n| self.compile.matches(n))
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
        let (tid, calls) = s.read(&mut strs, &mut out, (4, 1), &message(), &mut frame, |_| None);
        assert_eq!((tid, calls.len(), calls[0].correlation, calls[0].stack), (9, 1, 42, 0x55));
        let again = s.read(&mut strs, &mut out, (4, 1), &message(), &mut frame, |_| None);
        assert_eq!(again.1.len(), 1);
        assert_eq!(frames, 2, "the second message's stack was known");
        assert!(!s.get(4, 0x55).is_none() && s.get(5, 0x55).is_none());
        let recs: Vec<Record> =
            xpuprof_sdk::codec::Decoder::new(&out.take_buffer()).map(Result::unwrap).collect();
        assert_eq!(recs.iter().filter(|r| matches!(r, Record::Stack(_))).count(), 1);
        assert_eq!(recs.iter().filter(|r| matches!(r, Record::Thread(_))).count(), 1);
    }

    #[test]
    fn a_stack_in_a_compile_time_function_gets_the_marker_innermost() {
        let (mut s, mut strs, mut out) = (AgentStacks::default(), Interner::default(), Emitter::detached());
        s.compile = CompileFrames::parse(&["triton/testing.py:do_bench*"]).unwrap();
        let name = |ra: u64| (ra == 0x2000).then_some("do_bench (/x/triton/testing.py:7)");
        let frame = |i: &mut Interner, e: &mut Emitter, ra: u64| i.virtual_frame(e, 4, ra);
        s.read(&mut strs, &mut out, (4, 1), &message(), frame, name);
        assert_eq!(s.compile_marked, 1);
        let recs: Vec<Record> =
            xpuprof_sdk::codec::Decoder::new(&out.take_buffer()).map(Result::unwrap).collect();
        let marker = recs.iter().find_map(|r| match r {
            Record::Frame(f) if strs_text(&recs, f.name) == COMPILE_MARKER => Some(f.id),
            _ => None,
        });
        let stack = recs.iter().find_map(|r| match r {
            Record::Stack(st) => Some(st.frames.clone()),
            _ => None,
        });
        assert_eq!(stack.map(|f| (f.len(), f[0])), Some((3, marker.unwrap())), "marker, then the two frames");
    }

    fn strs_text(recs: &[Record], id: xpuprof_sdk::model::StrId) -> String {
        recs.iter()
            .find_map(|r| match r {
                Record::Str(d) if d.id == id => Some(d.text.clone()),
                _ => None,
            })
            .unwrap_or_default()
    }
}
