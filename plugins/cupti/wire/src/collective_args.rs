//! [`MSG_COLLECTIVE_ARGS`]: what a communication library said about the collective a launch
//! belongs to, read by the agent from the library's annotation around the launch (NCCL's NVTX
//! range with its extended payload) and sent during the launch, so before the launch's entry and
//! before any record of the kernel it launched.
//!
//! Payload: `correlation u32, flags u32, bytes u64, communicator u64, op u8, pad u8 × 7`: the
//! launch's correlation id, which of the fields the library stated ([`ARGS_BYTES`],
//! [`ARGS_COMMUNICATOR`], [`ARGS_OP`]), the collective's message size in bytes (per rank, as the
//! library counts it), its communicator id (NCCL's `commHash`, the same on every rank) and its
//! kind (the model's [`CollectiveOp`] code: a launch whose kernel's name does not say it, such
//! as NCCL's one-rank kernels, is still known as the collective it runs). Fields may be
//! appended later; a host reads the ones it knows and skips the rest. A new message, not a change of an old one: hosts that
//! do not know it skip it, and the protocol version stays.

use xpuprof_sdk::model::CollectiveOp;
use xpuprof_wire::{put_message, Reader, MSG_BACKEND_FIRST};

/// The collective arguments of a launch.
pub const MSG_COLLECTIVE_ARGS: u8 = MSG_BACKEND_FIRST + 0x20;
/// Size of a [`MSG_COLLECTIVE_ARGS`] payload as this version writes it.
pub const COLLECTIVE_ARGS_BYTES: usize = 32;
/// [`CollectiveArgs::flags`]: `bytes` is stated.
pub const ARGS_BYTES: u32 = 1;
/// [`CollectiveArgs::flags`]: `communicator` is stated.
pub const ARGS_COMMUNICATOR: u32 = 2;
/// [`CollectiveArgs::flags`]: `op` is stated.
pub const ARGS_OP: u32 = 4;

/// A [`MSG_COLLECTIVE_ARGS`] payload.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CollectiveArgs {
    /// The launch's correlation id.
    pub correlation: u32,
    /// Which fields are stated (`ARGS_*`).
    pub flags: u32,
    /// Message size in bytes.
    pub bytes: u64,
    /// Communicator id, the same on every rank.
    pub communicator: u64,
    /// The collective.
    pub op: CollectiveOp,
}

impl CollectiveArgs {
    /// Appends this as a [`MSG_COLLECTIVE_ARGS`] message.
    pub fn put(&self, out: &mut Vec<u8>) {
        put_message(
            out,
            MSG_COLLECTIVE_ARGS,
            &[
                &self.correlation.to_le_bytes(),
                &self.flags.to_le_bytes(),
                &self.bytes.to_le_bytes(),
                &self.communicator.to_le_bytes(),
                &[self.op as u8, 0, 0, 0, 0, 0, 0, 0],
            ],
        );
    }

    /// Reads a [`MSG_COLLECTIVE_ARGS`] payload; `None` when it is shorter than this version's.
    pub fn read(payload: &[u8]) -> Option<Self> {
        let mut r = Reader::new(payload);
        let (correlation, flags, bytes, communicator) = (r.u32(), r.u32(), r.u64(), r.u64());
        let op = CollectiveOp::from_u8(r.u8());
        r.bytes(7);
        (!r.short).then_some(Self { correlation, flags, bytes, communicator, op })
    }

    /// The message size, when stated.
    pub fn bytes(&self) -> Option<u64> {
        (self.flags & ARGS_BYTES != 0).then_some(self.bytes)
    }

    /// The communicator, when stated.
    pub fn communicator(&self) -> Option<u64> {
        (self.flags & ARGS_COMMUNICATOR != 0).then_some(self.communicator)
    }

    /// The collective, when stated.
    pub fn op(&self) -> Option<CollectiveOp> {
        (self.flags & ARGS_OP != 0 && self.op != CollectiveOp::None).then_some(self.op)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_the_agent_writes_the_host_reads_back_and_longer_payloads_still_read() {
        let a = CollectiveArgs {
            correlation: 7,
            flags: ARGS_BYTES | ARGS_COMMUNICATOR | ARGS_OP,
            bytes: 1 << 20,
            communicator: 0xabc,
            op: CollectiveOp::AllReduce,
        };
        let mut m = Vec::new();
        a.put(&mut m);
        assert_eq!(m.len(), 8 + COLLECTIVE_ARGS_BYTES);
        assert_eq!((m[4], &m[0..4]), (MSG_COLLECTIVE_ARGS, &36u32.to_le_bytes()[..]));
        assert_eq!(CollectiveArgs::read(&m[8..]), Some(a));
        let mut longer = m[8..].to_vec();
        longer.extend_from_slice(&[1, 2, 3, 4]);
        assert_eq!(CollectiveArgs::read(&longer), Some(a), "fields appended later are skipped");
        assert_eq!(CollectiveArgs::read(&m[8..36]), None, "a short payload is refused");
        assert_eq!(a.op(), Some(CollectiveOp::AllReduce));
        let only_bytes = CollectiveArgs { flags: ARGS_BYTES, ..a };
        assert_eq!(
            (only_bytes.bytes(), only_bytes.communicator(), only_bytes.op()),
            (Some(1 << 20), None, None)
        );
    }
}
