//! The `args` of device work. A kernel's launch configuration (grid, block, shared memory,
//! registers) is the same for most launches of one kernel, so its JSON text is made once per
//! distinct configuration and copied after that: formatting its eight numbers cost more than the
//! rest of the event together.

use xpuprof_sdk::hash::IdMap;
use xpuprof_sdk::model::*;

use crate::json::Push;

/// Distinct launch configurations kept; past this many the cache starts again (memory stays
/// bounded when every launch has its own grid).
const MAX_KERNEL_CONFIGS: usize = 4096;

/// Writes the `args` of device work.
#[derive(Debug, Default)]
pub struct OpArgs {
    kernels: IdMap<KernelInfo, Box<[u8]>>,
}

impl OpArgs {
    /// Appends the `args` of device operation `op`, without the braces. The launching pid and
    /// the correlation id are written only for work without an arrow (`launched` false): an
    /// arrow's start is the API call, on the launching process, which carries the correlation
    /// id.
    pub fn write(&mut self, l: &mut Vec<u8>, op: &DeviceOp, launched: bool) {
        let mut sep = "";
        if !launched {
            l.s(r#""pid":"#).n(op.pid.into());
            if let Some(c) = op.correlation {
                l.s(r#","correlation":"#).n(c.id);
            }
            sep = ",";
        }
        if op.bytes != 0 {
            l.s(sep).s(r#""bytes":"#).n(op.bytes);
            sep = ",";
            // A collective's bandwidth: its bytes over its time on the device, in 10^6 bytes
            // per second.
            if op.collective != CollectiveOp::None && op.end > op.start {
                l.s(r#","bandwidth_mb_per_s":"#).n(op.bytes.saturating_mul(1000) / (op.end - op.start));
            }
        }
        if let Some(k) = &op.kernel {
            l.s(sep);
            l.extend_from_slice(self.kernel(k));
            sep = ",";
        }
        if let Some(g) = &op.graph {
            l.s(sep).s(r#""graph":"#).n(g.graph).s(r#","graph_node":"#).n(g.node);
            sep = ",";
        }
        if op.launch.is_none() {
            l.s(sep).s(r#""launch":"unknown launch site""#);
        }
    }

    /// `"grid":[x,y,z],"block":[x,y,z],"shared_memory":N,"registers":N` of `k`.
    fn kernel(&mut self, k: &KernelInfo) -> &[u8] {
        if self.kernels.len() >= MAX_KERNEL_CONFIGS && !self.kernels.contains_key(k) {
            self.kernels.clear();
        }
        self.kernels.entry(*k).or_insert_with(|| {
            let mut l = Vec::with_capacity(96);
            l.s(r#""grid":["#).n(k.grid[0].into()).s(",").n(k.grid[1].into()).s(",").n(k.grid[2].into());
            l.s(r#"],"block":["#)
                .n(k.block[0].into())
                .s(",")
                .n(k.block[1].into())
                .s(",")
                .n(k.block[2].into());
            l.s(r#"],"shared_memory":"#)
                .n(k.shared_memory.into())
                .s(r#","registers":"#)
                .n(k.registers.into());
            l.into_boxed_slice()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(a: &mut OpArgs, op: &DeviceOp, launched: bool) -> String {
        let mut l = Vec::new();
        a.write(&mut l, op, launched);
        String::from_utf8(l).unwrap()
    }

    #[test]
    fn kernel_configurations_are_written_the_same_from_the_cache_and_past_its_size() {
        let mut a = OpArgs::default();
        let k =
            |x: u32| KernelInfo::default().grid([x, 1, 1]).block([256, 1, 1]).shared_memory(48).registers(32);
        let op = |x| DeviceOp::default().kind(DeviceOpKind::Kernel).kernel(Some(k(x)));
        let expected = |x| format!(r#""grid":[{x},1,1],"block":[256,1,1],"shared_memory":48,"registers":32"#);
        for round in 0..2 {
            for x in 0..(MAX_KERNEL_CONFIGS as u32 + 10) {
                let op = op(x).launch(Some(LaunchRef::default()));
                assert_eq!(text(&mut a, &op, true), expected(x), "round {round}");
            }
        }
        assert!(a.kernels.len() <= MAX_KERNEL_CONFIGS);
    }

    #[test]
    fn work_without_an_arrow_names_its_process_and_correlation() {
        let mut a = OpArgs::default();
        let op = DeviceOp::default().pid(7).bytes(64).correlation(Some(Correlation { backend: 1, id: 9 }));
        assert_eq!(
            text(&mut a, &op, false),
            r#""pid":7,"correlation":9,"bytes":64,"launch":"unknown launch site""#
        );
        let op = op.launch(Some(LaunchRef::default()));
        assert_eq!(text(&mut a, &op, true), r#""bytes":64"#);
    }

    #[test]
    fn a_collective_with_bytes_has_its_bandwidth() {
        let mut a = OpArgs::default();
        let op = DeviceOp::default()
            .bytes(16 << 20)
            .start(1_000)
            .end(1_001_000)
            .collective(CollectiveOp::AllReduce)
            .launch(Some(LaunchRef::default()));
        assert_eq!(text(&mut a, &op, true), r#""bytes":16777216,"bandwidth_mb_per_s":16777"#);
    }
}
