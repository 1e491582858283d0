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
//!
//! Allocation and free records without a correlation id were caused by no API call of the
//! program: the runtime or driver reported memory it handled on its own (a GPU source names
//! them `driver-internal`: memory records of allocations the driver made itself, such as for a
//! module loaded lazily). They are counted apart from the program's allocations, by the name
//! their source gave them, and still count in the bytes in use.

use std::collections::VecDeque;

use xpuprof_sdk::hash::IdMap;

use xpuprof_sdk::model::{CopyKind, DeviceId, DeviceOp, DeviceOpKind, StackId, StrId};

/// Allocation counters of one device.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct DeviceMemory {
    /// Allocations caused by API calls.
    pub allocations: u64,
    /// Their bytes.
    pub allocated_bytes: u64,
    /// Frees caused by API calls.
    pub frees: u64,
    /// Their bytes.
    pub freed_bytes: u64,
    /// Allocation records without a correlation id.
    pub runtime_allocations: u64,
    /// Their bytes.
    pub runtime_allocated_bytes: u64,
    /// Free records without a correlation id.
    pub runtime_frees: u64,
    /// Their bytes.
    pub runtime_freed_bytes: u64,
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
    /// The allocating API call's name ([`StrId::NONE`] when not joined).
    pub api: StrId,
    /// Allocated without a correlation id: by the runtime on its own (a lazy module
    /// loading, for one), not by a call of the program.
    pub by_runtime: bool,
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

/// Where an outstanding allocation came from: stack, API name, allocated by the runtime itself.
type Site = (StackId, StrId, bool);

/// A [`Leak`] row's key: device, process, stack, allocated by the runtime itself.
type LeakKey = (DeviceId, u32, StackId, bool);

/// Key of a [`Transfer`] row.
pub type TransferKey = (DeviceOpKind, CopyKind, DeviceId);

/// Memory state of the session.
#[derive(Debug, Default)]
pub struct MemoryAgg {
    /// Per device.
    pub devices: IdMap<DeviceId, DeviceMemory>,
    outstanding: IdMap<(u32, DeviceId, u64), VecDeque<Site>>,
    /// Frees that matched no allocation.
    pub unmatched_frees: u64,
    /// memcpy/memset rows.
    pub transfers: IdMap<TransferKey, Transfer>,
    /// Records without a correlation id per (device, kind, name the source gave): records, bytes.
    pub without_api_call: IdMap<(DeviceId, DeviceOpKind, StrId), (u64, u64)>,
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

    /// Counts a record without a correlation id apart; returns whether `op` was one.
    fn by_runtime(&mut self, op: &DeviceOp) -> bool {
        if op.correlation.is_some() {
            return false;
        }
        let e = self.without_api_call.entry((op.device, op.kind, op.name)).or_default();
        e.0 += 1;
        e.1 = e.1.saturating_add(op.bytes);
        true
    }

    fn alloc(&mut self, op: &DeviceOp) {
        let by_runtime = self.by_runtime(op);
        let d = self.devices.entry(op.device).or_default();
        if by_runtime {
            d.runtime_allocations += 1;
            d.runtime_allocated_bytes = d.runtime_allocated_bytes.saturating_add(op.bytes);
        } else {
            d.allocations += 1;
            d.allocated_bytes = d.allocated_bytes.saturating_add(op.bytes);
        }
        d.in_use = d.in_use.saturating_add(op.bytes);
        d.peak = d.peak.max(d.in_use);
        let site =
            op.launch.map_or((StackId::NONE, StrId::NONE, by_runtime), |l| (l.stack, l.api, by_runtime));
        self.outstanding.entry((op.pid, op.device, op.bytes)).or_default().push_back(site);
    }

    fn free(&mut self, op: &DeviceOp) {
        let by_runtime = self.by_runtime(op);
        let d = self.devices.entry(op.device).or_default();
        if by_runtime {
            d.runtime_frees += 1;
            d.runtime_freed_bytes = d.runtime_freed_bytes.saturating_add(op.bytes);
        } else {
            d.frees += 1;
            d.freed_bytes = d.freed_bytes.saturating_add(op.bytes);
        }
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
        let mut by_site: IdMap<LeakKey, (u64, u64, StrId)> = IdMap::default();
        for ((pid, device, bytes), sites) in &self.outstanding {
            for (stack, api, by_runtime) in sites {
                let e = by_site.entry((*device, *pid, *stack, *by_runtime)).or_insert((0, 0, *api));
                e.0 += 1;
                e.1 += bytes;
            }
        }
        let mut leaks: Vec<Leak> = by_site
            .into_iter()
            .map(|((device, pid, stack, by_runtime), (count, bytes, api))| Leak {
                device,
                pid,
                stack,
                api,
                by_runtime,
                count,
                bytes,
            })
            .collect();
        leaks.sort_by(|a, b| {
            b.bytes.cmp(&a.bytes).then((a.device, a.pid, a.stack, a.by_runtime).cmp(&(
                b.device,
                b.pid,
                b.stack,
                b.by_runtime,
            )))
        });
        leaks
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use xpuprof_sdk::model::{backend, Correlation, LaunchRef};

    #[test]
    fn allocations_without_a_correlation_id_are_the_runtimes_own() {
        let mut m = MemoryAgg::default();
        let by_call = DeviceOp::default()
            .kind(DeviceOpKind::Alloc)
            .bytes(4096)
            .correlation(Some(Correlation { backend: backend::TEST, id: 1 }))
            .launch(Some(LaunchRef::default().stack(StackId(3)).api(StrId(9))));
        m.add(&by_call);
        m.add(&DeviceOp::default().kind(DeviceOpKind::Alloc).bytes(2 << 20));
        let d = m.devices[&DeviceId::default()];
        assert_eq!((d.allocations, d.runtime_allocations, d.in_use), (1, 1, 4096 + (2 << 20)));
        assert_eq!(m.without_api_call.len(), 1);
        let leaks = m.leaks();
        assert_eq!(leaks.len(), 2);
        assert!(leaks[0].by_runtime && leaks[0].stack == StackId::NONE && leaks[0].bytes == 2 << 20);
        assert!(!leaks[1].by_runtime && leaks[1].stack == StackId(3) && leaks[1].api == StrId(9));
    }
}
