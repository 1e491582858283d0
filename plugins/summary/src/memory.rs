//! Device memory: allocations, frees, peak in use, and what was still allocated at the end
//! (leaks) with the stack that allocated it; plus memcpy/memset traffic.
//!
//! The event model gives [`DeviceOpKind::Alloc`] / [`DeviceOpKind::Free`] a size but no
//! address, so a free is matched to the **oldest outstanding allocation of the same size, device
//! and process** (first in, first out). Totals, peaks and the bytes left at exit are exact
//! whatever the matching; only which allocation site a leak is charged to depends on it, and
//! sites that allocate the same size are interchangeable in the report. A free with no matching
//! allocation is counted in `unmatched_frees`. Peak in use follows the order operations arrive
//! in, which is time order per process for the GPU sources.

use std::collections::VecDeque;

use xpuprof_sdk::hash::IdMap;

use xpuprof_sdk::model::{CopyKind, DeviceId, DeviceOp, DeviceOpKind, StackId};

/// Allocation counters of one device.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct DeviceMemory {
    /// Allocations seen.
    pub allocations: u64,
    /// Bytes allocated.
    pub allocated_bytes: u64,
    /// Frees seen.
    pub frees: u64,
    /// Bytes freed.
    pub freed_bytes: u64,
    /// Bytes in use now.
    pub in_use: u64,
    /// Highest `in_use` seen.
    pub peak: u64,
}

/// Allocations still outstanding, grouped for the report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Leak {
    /// Device.
    pub device: DeviceId,
    /// Process.
    pub pid: u32,
    /// Allocating stack ([`StackId::NONE`] when the allocation was not joined to a launch site).
    pub stack: StackId,
    /// Allocations.
    pub count: u64,
    /// Bytes.
    pub bytes: u64,
}

/// Traffic of one (operation, direction, device).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Transfer {
    /// Operations.
    pub count: u64,
    /// Bytes moved or set.
    pub bytes: u64,
    /// Device time, ns.
    pub time: u64,
}

/// Key of a [`Transfer`] row.
pub type TransferKey = (DeviceOpKind, CopyKind, DeviceId);

/// Memory state of the session.
#[derive(Debug, Default)]
pub struct MemoryAgg {
    /// Per device.
    pub devices: IdMap<DeviceId, DeviceMemory>,
    outstanding: IdMap<(u32, DeviceId, u64), VecDeque<StackId>>,
    /// Frees that matched no allocation.
    pub unmatched_frees: u64,
    /// memcpy/memset rows.
    pub transfers: IdMap<TransferKey, Transfer>,
}

impl MemoryAgg {
    /// Adds an alloc, free, memcpy or memset operation (others are ignored).
    #[inline]
    pub fn add(&mut self, op: &DeviceOp) {
        match op.kind {
            DeviceOpKind::Alloc => self.alloc(op),
            DeviceOpKind::Free => self.free(op),
            DeviceOpKind::Memcpy | DeviceOpKind::Memset => {
                let copy = if op.kind == DeviceOpKind::Memcpy { op.copy } else { CopyKind::Unknown };
                let t = self.transfers.entry((op.kind, copy, op.device)).or_default();
                t.count += 1;
                t.bytes += op.bytes;
                t.time += op.end.saturating_sub(op.start);
            }
            _ => {}
        }
    }

    fn alloc(&mut self, op: &DeviceOp) {
        let d = self.devices.entry(op.device).or_default();
        d.allocations += 1;
        d.allocated_bytes = d.allocated_bytes.saturating_add(op.bytes);
        d.in_use = d.in_use.saturating_add(op.bytes);
        d.peak = d.peak.max(d.in_use);
        let stack = op.launch.map_or(StackId::NONE, |l| l.stack);
        self.outstanding.entry((op.pid, op.device, op.bytes)).or_default().push_back(stack);
    }

    fn free(&mut self, op: &DeviceOp) {
        let d = self.devices.entry(op.device).or_default();
        d.frees += 1;
        d.freed_bytes += op.bytes;
        d.in_use = d.in_use.saturating_sub(op.bytes);
        let key = (op.pid, op.device, op.bytes);
        match self.outstanding.get_mut(&key) {
            Some(q) if !q.is_empty() => {
                q.pop_front();
                if q.is_empty() {
                    self.outstanding.remove(&key);
                }
            }
            _ => self.unmatched_frees += 1,
        }
    }

    /// What is still allocated, grouped by device, process and stack; largest first.
    pub fn leaks(&self) -> Vec<Leak> {
        let mut by_site: IdMap<(DeviceId, u32, StackId), (u64, u64)> = IdMap::default();
        for ((pid, device, bytes), stacks) in &self.outstanding {
            for stack in stacks {
                let e = by_site.entry((*device, *pid, *stack)).or_default();
                e.0 += 1;
                e.1 += bytes;
            }
        }
        let mut leaks: Vec<Leak> = by_site
            .into_iter()
            .map(|((device, pid, stack), (count, bytes))| Leak { device, pid, stack, count, bytes })
            .collect();
        leaks.sort_by(|a, b| {
            b.bytes.cmp(&a.bytes).then((a.device, a.pid, a.stack).cmp(&(b.device, b.pid, b.stack)))
        });
        leaks
    }
}
