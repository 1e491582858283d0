//! The processes that are ranks of a job: their rank fields, the devices each one used (so
//! devices of different ranks are named apart) and their GPU time, for the per-rank table.

use serde::Serialize;
use xpuprof_sdk::hash::IdMap;
use xpuprof_sdk::model::*;

/// One ranked process, as aggregated.
#[derive(Debug, Default)]
struct RankAgg {
    rank: u32,
    local_rank: Option<u32>,
    world_size: Option<u32>,
    host: StrId,
    name: StrId,
    kernel_ns: u64,
    kernels: u64,
    /// Kernel time per kernel name.
    by_kernel: IdMap<StrId, u64>,
}

/// The ranks of the session, by pid.
#[derive(Debug, Default)]
pub struct Ranks {
    procs: IdMap<u32, RankAgg>,
    /// The ranks that ran work on each device, in the order first seen.
    devices: IdMap<DeviceId, Vec<u32>>,
}

/// One rank of the job in `summary.json` and the per-rank table.
#[derive(Debug, Clone, Serialize)]
pub struct RankRow {
    /// Rank in the job.
    pub rank: u32,
    /// Rank on its host, `null` when not known.
    pub local_rank: Option<u32>,
    /// Ranks in the job, `null` when not known.
    pub world_size: Option<u32>,
    /// Host it ran on (`""` when not known).
    pub host: String,
    /// Process id.
    pub pid: u32,
    /// The name outputs show for it: `rank N (host, pid)`.
    pub name: String,
    /// Sum of its kernels' durations.
    pub gpu_time_ns: u64,
    /// Kernels it launched.
    pub launches: u64,
    /// Its kernel with the most time (`""` without kernels).
    pub top_kernel: String,
}

impl Ranks {
    /// Notes a process's rank and a ranked process's kernels.
    pub fn add(&mut self, r: &Record) {
        match r {
            Record::Process(p) => {
                if let Some(rank) = p.rank {
                    let agg = self.procs.entry(p.pid).or_default();
                    agg.rank = rank;
                    agg.local_rank = p.local_rank;
                    agg.world_size = p.world_size;
                    agg.host = p.host;
                    agg.name = p.name;
                }
            }
            Record::DeviceOp(op) if op.kind == DeviceOpKind::Kernel && !self.procs.is_empty() => {
                self.kernel(op)
            }
            _ => {}
        }
    }

    fn kernel(&mut self, op: &DeviceOp) {
        let Some(agg) = self.procs.get_mut(&op.pid) else {
            return;
        };
        let ns = op.end.saturating_sub(op.start);
        agg.kernel_ns += ns;
        agg.kernels += 1;
        *agg.by_kernel.entry(op.name).or_default() += ns;
        let ranks = self.devices.entry(op.device).or_default();
        if !ranks.contains(&agg.rank) {
            ranks.push(agg.rank);
        }
    }

    /// The ranks that ran work on device `id` (empty when none or the session has no ranks).
    pub fn of_device(&self, id: DeviceId) -> &[u32] {
        self.devices.get(&id).map_or(&[], Vec::as_slice)
    }

    /// The name the host gave process `pid` when it is a rank.
    pub fn process_name(&self, pid: u32) -> Option<StrId> {
        self.procs.get(&pid).map(|p| p.name).filter(|n| !n.is_none())
    }

    /// One row per ranked process, by rank then pid; `str` names strings, `kernel` kernels.
    pub fn rows(&self, str: impl Fn(StrId) -> String, kernel: impl Fn(StrId) -> String) -> Vec<RankRow> {
        let mut rows: Vec<RankRow> = self
            .procs
            .iter()
            .map(|(&pid, p)| {
                let top = p.by_kernel.iter().max_by_key(|(id, ns)| (**ns, std::cmp::Reverse(id.0)));
                let host = str(p.host);
                let name =
                    if p.name.is_none() { format!("rank {} ({host}, {pid})", p.rank) } else { str(p.name) };
                RankRow {
                    rank: p.rank,
                    local_rank: p.local_rank,
                    world_size: p.world_size,
                    host,
                    pid,
                    name,
                    gpu_time_ns: p.kernel_ns,
                    launches: p.kernels,
                    top_kernel: top.map_or(String::new(), |(id, _)| kernel(*id)),
                }
            })
            .collect();
        rows.sort_by_key(|r| (r.rank, r.pid));
        rows
    }
}
