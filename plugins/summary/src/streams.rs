//! Busy time per stream: the length of the exact union of each stream's kernel intervals, as for
//! devices ([`Timeline`]: whatever order the records came in, inside the capture windows when
//! there are). A device's busy time is at most the sum of its streams': less where its streams
//! ran kernels at the same time.

use serde::Serialize;
use xpuprof_sdk::hash::IdMap;
use xpuprof_sdk::model::{DeviceId, DeviceOp, StreamId};

use crate::assemble::pct;
use crate::defs::Defs;
use crate::fmt::{self, ns, Table};
use crate::samples::SampleIndex;
use crate::text::{device, section};
use crate::timeline::Timeline;

/// Kernel timelines per stream, as kernels arrive.
#[derive(Debug, Default)]
pub struct StreamAgg {
    timelines: IdMap<StreamId, (DeviceId, Timeline)>,
}

impl StreamAgg {
    /// Adds kernel `op`; `cap` bounds the pieces kept mergeable, as for devices.
    #[inline]
    pub fn push(&mut self, op: &DeviceOp, cap: usize) {
        let (_, t) = self.timelines.entry(op.stream).or_insert_with(|| (op.device, Timeline::new(cap)));
        t.push(op.start, op.end);
    }
}

/// One stream's row of `summary.json`'s `streams[]`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StreamRow {
    /// Index of its device.
    pub device_index: i64,
    /// Its device.
    pub device: String,
    /// Its name: the source's, else `stream <native id>`.
    pub stream: String,
    /// The runtime's own number for it, 0 when not known.
    pub native_id: u64,
    /// The process that owns it.
    pub pid: u32,
    /// Kernels that ran on it.
    pub kernels: u64,
    /// Length of the union of its kernel intervals.
    pub kernel_busy_ns: u64,
    /// Disjoint pieces of that union.
    pub busy_intervals: u64,
    /// `kernel_busy_ns` over the session's time, 0–100.
    pub busy_pct: f64,
    /// Kernels merged at the end (exact whatever this is; see `devices[].late_ops`).
    pub late_ops: u64,
}

/// The rows, finishing every stream's timeline, by device, then native id and name.
pub fn rows(
    agg: StreamAgg,
    defs: &Defs,
    windows: &[(u64, u64)],
    session_ns: u64,
    samples: &SampleIndex,
) -> Vec<StreamRow> {
    let mut rows: Vec<StreamRow> = agg
        .timelines
        .into_iter()
        .map(|(id, (dev, t))| {
            let t = t.finish(windows, u64::MAX, samples);
            let (device_index, device) = defs.device(dev);
            let def = defs.definitions().stream(id);
            let native_id = def.map_or(0, |s| s.native_id);
            let stream = match def.map(|s| defs.str(s.name)).filter(|n| !n.is_empty()) {
                Some(name) => name.to_owned(),
                None if def.is_some() => format!("stream {native_id}"),
                None => format!("[unknown stream {}]", id.0),
            };
            StreamRow {
                device_index,
                device,
                stream,
                native_id,
                pid: def.map_or(0, |s| s.pid),
                kernels: t.kernels,
                kernel_busy_ns: t.busy,
                busy_intervals: t.pieces,
                busy_pct: pct(t.busy, session_ns),
                late_ops: t.late,
            }
        })
        .collect();
    rows.sort_by(|a, b| {
        (a.device_index, &a.device, a.pid, a.native_id, &a.stream).cmp(&(
            b.device_index,
            &b.device,
            b.pid,
            b.native_id,
            &b.stream,
        ))
    });
    rows
}

/// `summary.txt`'s stream table, when some device ran kernels on two or more streams (with one
/// stream per device it would repeat the device table).
pub fn render(rows: &[StreamRow], text_rows: usize, out: &mut String) {
    let shared =
        rows.windows(2).any(|w| (w[0].device_index, &w[0].device) == (w[1].device_index, &w[1].device));
    if !shared {
        return;
    }
    let shown = text_rows.min(rows.len());
    section(out, "Streams (busy: the union of each stream's kernel intervals)", shown, rows.len());
    let mut t = Table::new(&["Device", "<Stream", "Pid", "Kernels", "Busy", "Busy%"]);
    for r in &rows[..shown] {
        t.row(vec![
            device(r.device_index, &r.device),
            r.stream.clone(),
            r.pid.to_string(),
            r.kernels.to_string(),
            ns(r.kernel_busy_ns),
            fmt::pct(r.busy_pct),
        ]);
    }
    t.render(out);
}
