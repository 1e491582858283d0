//! Which kernels are NCCL's collectives: the one place the CUDA backend recognises them by
//! name, so the host and the sinks see [`CollectiveOp`] on the device op and never match a
//! communication library's names themselves.
//!
//! NCCL names its kernels `ncclDevKernel_<Op>_<redop>_<type>_<algo>_<proto>` (2.19 and later,
//! `ncclDevKernel_Generic` for grouped work) and `ncclKernel_<Op>_<algo>_<proto>_<redop>_<type>`
//! before; CUPTI reports them mangled (`_Z..ncclDevKernel_AllReduce_Sum_f32_RING_LL...`) or
//! not. The communicator is not in the kernel record: it is left 0 (not known), and the stream
//! stands for it.

use xpuprof_sdk::model::CollectiveOp;

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

#[cfg(test)]
mod tests {
    use super::*;

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
