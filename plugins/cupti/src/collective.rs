//! Which kernels are NCCL's collectives: the one place the CUDA backend recognises them by
//! name, so the host and the sinks see [`CollectiveOp`] on the device op and never match a
//! communication library's names themselves.
//!
//! NCCL names its kernels `ncclDevKernel_<Op>_<redop>_<type>_<algo>_<proto>` (2.19 and later,
//! `ncclDevKernel_Generic` for grouped work) and `ncclKernel_<Op>_<algo>_<proto>_<redop>_<type>`
//! before; CUPTI reports them mangled (`_Z..ncclDevKernel_AllReduce_Sum_f32_RING_LL...`) or
//! not. The communicator is not in the kernel record: the agent reads it, with the collective's
//! message size, from NCCL's NVTX range around the launch and sends both with the launch
//! ([`MSG_COLLECTIVE_ARGS`](xpuprof_cupti_wire::MSG_COLLECTIVE_ARGS)); they wait here
//! ([`PendingArgs`]) for the kernel record of that launch. Without them the communicator is
//! left 0 (not known), the stream stands for it, and the bytes are 0 (not stated).

use xpuprof_cupti_wire::CollectiveArgs;
use xpuprof_sdk::hash::IdMap;
use xpuprof_sdk::model::{CollectiveOp, DeviceOp};

/// The collective a kernel named `name` implements, or [`CollectiveOp::None`].
pub fn of(name: &str) -> CollectiveOp {
    let Some(rest) =
        ["ncclDevKernel_", "ncclKernel_"].iter().find_map(|p| name.find(p).map(|at| &name[at + p.len()..]))
    else {
        return CollectiveOp::None;
    };
    let op = rest.split(|c: char| c == '_' || !c.is_ascii_alphanumeric()).next().unwrap_or("");
    match op {
        "AllReduce" => CollectiveOp::AllReduce,
        "AllGather" => CollectiveOp::AllGather,
        "ReduceScatter" => CollectiveOp::ReduceScatter,
        "Broadcast" => CollectiveOp::Broadcast,
        "Reduce" => CollectiveOp::Reduce,
        "SendRecv" | "Send" | "Recv" => CollectiveOp::SendRecv,
        "AllToAll" => CollectiveOp::AllToAll,
        _ => CollectiveOp::Other,
    }
}

/// Launches' collective arguments kept at most while their kernels have not come (a launch
/// whose kernel never comes, such as a driver call nested in a runtime one, leaves its entry).
pub(crate) const MAX_PENDING: usize = 1 << 16;

/// The collective arguments of one process's launches, by correlation id, until their kernel
/// records come.
#[derive(Debug, Default)]
pub(crate) struct PendingArgs {
    by_correlation: IdMap<u32, CollectiveArgs>,
    /// Messages too short to read.
    pub(crate) malformed: u64,
    /// Arguments dropped at [`MAX_PENDING`], oldest first.
    pub(crate) evicted: u64,
    /// Collective kernels that got their arguments.
    pub(crate) applied: u64,
}

impl PendingArgs {
    /// Keeps the arguments of a [`MSG_COLLECTIVE_ARGS`](xpuprof_cupti_wire::MSG_COLLECTIVE_ARGS)
    /// payload.
    pub(crate) fn message(&mut self, payload: &[u8]) {
        let Some(a) = CollectiveArgs::read(payload) else {
            self.malformed += 1;
            return;
        };
        if self.by_correlation.len() >= MAX_PENDING {
            // Correlation ids grow: the older half goes.
            let cut = a.correlation.saturating_sub(MAX_PENDING as u32 / 2);
            let before = self.by_correlation.len();
            self.by_correlation.retain(|c, _| *c >= cut);
            self.evicted += (before - self.by_correlation.len()) as u64;
        }
        self.by_correlation.insert(a.correlation, a);
    }

    /// Gives kernel `op` the bytes and communicator its launch's collective stated (when it is
    /// a collective, by its name or by the arguments); the arguments are used up either way.
    pub(crate) fn apply(&mut self, op: &mut DeviceOp) {
        let Some(c) = op.correlation else { return };
        let Some(a) = self.by_correlation.remove(&(c.id as u32)) else { return };
        if op.collective == CollectiveOp::None {
            // A kernel whose name does not say (NCCL's one-rank kernels): the library's range
            // around its launch does.
            match a.op() {
                Some(kind) => op.collective = kind,
                None => return,
            }
        }
        if let Some(b) = a.bytes() {
            op.bytes = b;
        }
        if let Some(comm) = a.communicator() {
            op.communicator = comm;
        }
        self.applied += 1;
    }

    /// The line saying what was lost, when anything was.
    pub(crate) fn losses(&self, pid: u32) -> Option<String> {
        (self.malformed > 0 || self.evicted > 0).then(|| {
            format!(
                "process {pid}: {} collective-argument messages malformed, {} dropped at the bound of {MAX_PENDING} launches waiting for their kernels (those collectives show no bytes)",
                self.malformed, self.evicted
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use xpuprof_cupti_wire::{ARGS_BYTES, ARGS_COMMUNICATOR, ARGS_OP};
    use xpuprof_sdk::model::Correlation;

    fn payload(correlation: u32, flags: u32) -> Vec<u8> {
        let mut m = Vec::new();
        CollectiveArgs { correlation, flags, bytes: 4096, communicator: 0x77, op: CollectiveOp::AllReduce }
            .put(&mut m);
        m.split_off(8)
    }

    #[test]
    fn a_collective_kernel_gets_the_bytes_and_communicator_of_its_launch() {
        let mut p = PendingArgs::default();
        p.message(&payload(5, ARGS_BYTES | ARGS_COMMUNICATOR));
        p.message(&payload(6, ARGS_BYTES));
        p.message(&payload(7, ARGS_BYTES));
        p.message(&[1, 2, 3]);
        let op = |id: u64, collective| {
            DeviceOp::default().correlation(Some(Correlation { backend: 1, id })).collective(collective)
        };
        let mut a = op(5, CollectiveOp::AllReduce);
        p.apply(&mut a);
        assert_eq!((a.bytes, a.communicator), (4096, 0x77));
        let mut b = op(6, CollectiveOp::AllGather);
        p.apply(&mut b);
        assert_eq!((b.bytes, b.communicator), (4096, 0), "a communicator not stated stays unknown");
        let mut other = op(7, CollectiveOp::None);
        p.apply(&mut other);
        assert_eq!(other.bytes, 0, "only collectives take them");
        let one_rank = CollectiveArgs {
            correlation: 8,
            flags: ARGS_BYTES | ARGS_OP,
            bytes: 64,
            communicator: 0,
            op: CollectiveOp::AllReduce,
        };
        let mut m = Vec::new();
        one_rank.put(&mut m);
        p.message(&m[8..]);
        let mut k = op(8, CollectiveOp::None);
        p.apply(&mut k);
        assert_eq!(
            (k.collective, k.bytes),
            (CollectiveOp::AllReduce, 64),
            "a kernel named otherwise, inside the range"
        );
        let mut again = op(5, CollectiveOp::AllReduce);
        p.apply(&mut again);
        assert_eq!(again.bytes, 0, "used up");
        assert_eq!((p.applied, p.malformed), (3, 1));
        assert!(p.losses(9).unwrap().contains("1 collective-argument messages malformed"));
    }

    #[test]
    fn waiting_arguments_are_bounded_oldest_first() {
        let mut p = PendingArgs::default();
        for c in 1..=MAX_PENDING as u32 + 1 {
            p.message(&payload(c, ARGS_BYTES));
        }
        assert!(p.evicted > 0 && p.by_correlation.len() <= MAX_PENDING);
        assert!(p.by_correlation.contains_key(&(MAX_PENDING as u32 + 1)));
        assert!(!p.by_correlation.contains_key(&1));
    }

    #[test]
    fn nccl_kernels_of_old_and_new_versions_mangled_or_not_are_their_collectives() {
        let cases = [
            (
                "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
                CollectiveOp::AllReduce,
            ),
            (
                "_Z36ncclDevKernel_AllGather_RING_LL24ncclDevKernelArgsStorageILm4096EE",
                CollectiveOp::AllGather,
            ),
            ("ncclDevKernel_ReduceScatter_Sum_bf16_RING_SIMPLE", CollectiveOp::ReduceScatter),
            (
                "ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)",
                CollectiveOp::AllReduce,
            ),
            ("ncclKernel_Broadcast_RING_LL_Sum_int8_t", CollectiveOp::Broadcast),
            ("ncclDevKernel_Reduce_Sum_f32_RING_LL", CollectiveOp::Reduce),
            ("ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)", CollectiveOp::SendRecv),
            ("ncclDevKernel_Generic_1(ncclDevKernelArgsStorage<4096ul>)", CollectiveOp::Other),
            ("void at::native::vectorized_elementwise_kernel<4>(int)", CollectiveOp::None),
            ("ncclAllReduce", CollectiveOp::None),
        ];
        for (name, want) in cases {
            assert_eq!(of(name), want, "{name}");
        }
    }
}
