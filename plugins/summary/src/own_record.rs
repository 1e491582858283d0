//! The report's `xpuprof` section: what xpuprof itself recorded and cost. Records per kind,
//! events per backend (named as their sources declared them, [`SessionInfo::backend_name`]),
//! losses apart from notes ([`crate::losses`]), overhead records, xpuprof's own code in the
//! target's sampled CPU time ([`crate::own_code`]) and device work without a launch site.

use std::collections::BTreeMap;

use xpuprof_sdk::model::DeviceOpKind;
use xpuprof_sdk::SessionInfo;

use crate::assemble::pct;
use crate::collect::{Collector, OwnAgg, RECORD_KINDS};
use crate::losses;
use crate::report::*;

/// The section.
pub fn own(c: &Collector, session: &SessionInfo, session_ns: u64) -> Own {
    let o = &c.own;
    let records_by_kind: BTreeMap<String, u64> = RECORD_KINDS
        .iter()
        .zip(o.by_kind)
        .filter(|(_, n)| *n > 0)
        .map(|(k, n)| ((*k).to_owned(), n))
        .collect();
    let events_by_backend = o.by_backend.iter().map(|(b, n)| (session.backend_name(*b), *n)).collect();
    let (mut notes, mut losses): (Vec<LossRow>, Vec<LossRow>) = o
        .losses
        .iter()
        .map(|(cause, &(count, reports))| LossRow {
            cause: c.defs.str_or(*cause, "[unnamed cause]").to_owned(),
            count,
            reports,
        })
        .partition(|l| losses::is_note(&l.cause));
    for rows in [&mut losses, &mut notes] {
        rows.sort_by(|a, b| b.count.cmp(&a.count).then_with(|| a.cause.cmp(&b.cause)));
    }
    let mut overhead: Vec<OverheadRow> = o
        .overhead
        .iter()
        .map(|(name, &(count, total_ns))| OverheadRow {
            name: c.defs.str(*name).to_owned(),
            count,
            total_ns,
            session_pct: pct(total_ns, session_ns),
        })
        .collect();
    overhead.sort_by(|a, b| a.name.cmp(&b.name));
    let (samples, weight_ns) = c.cpu.on_cpu.own_cost(&c.defs);
    Own {
        records_by_kind,
        events_by_backend,
        lost_total: losses.iter().map(|l| l.count).sum(),
        losses,
        notes,
        agent_cpu: AgentCpu { samples, weight_ns, on_cpu_pct: pct(weight_ns, c.cpu.on_cpu.weight) },
        overhead,
        unmatched_device_ops: o.unmatched_device_ops,
        unmatched_by_kind: unmatched_rows(o),
    }
}

fn unmatched_rows(o: &OwnAgg) -> Vec<UnmatchedRow> {
    let mut rows: Vec<UnmatchedRow> = o
        .unmatched_by_kind
        .iter()
        .map(|(kind, &(correlation_unmatched, no_correlation_id))| UnmatchedRow {
            kind: op_kind_name(*kind),
            correlation_unmatched,
            no_correlation_id,
        })
        .collect();
    rows.sort_by(|a, b| {
        (b.correlation_unmatched + b.no_correlation_id)
            .cmp(&(a.correlation_unmatched + a.no_correlation_id))
            .then(a.kind.cmp(b.kind))
    });
    rows
}

/// The report's name of a device operation kind.
pub fn op_kind_name(k: DeviceOpKind) -> &'static str {
    match k {
        DeviceOpKind::Kernel => "kernel",
        DeviceOpKind::Memcpy => "memcpy",
        DeviceOpKind::Memset => "memset",
        DeviceOpKind::Sync => "sync",
        DeviceOpKind::Alloc => "alloc",
        DeviceOpKind::Free => "free",
        _ => "other",
    }
}
