//! Matching rows of two summaries and judging each against the threshold.

use std::collections::BTreeMap;

use serde::Serialize;

use super::input::{ProfileIn, SummaryIn, TimeIn};
use super::Metric;

/// The numbers of one row in one run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct RowStats {
    /// Launches or calls.
    pub count: u64,
    /// Total time, ns.
    pub total_ns: u64,
    /// Mean time, ns.
    pub mean_ns: u64,
    /// Median, ns (absent for aggregate rows).
    pub p50_ns: Option<u64>,
    /// 99th percentile, ns (absent for aggregate rows).
    pub p99_ns: Option<u64>,
}

impl RowStats {
    fn of(count: u64, t: &TimeIn) -> Self {
        Self {
            count,
            total_ns: t.total_ns,
            mean_ns: t.mean_ns,
            p50_ns: Some(t.p50_ns),
            p99_ns: Some(t.p99_ns),
        }
    }

    /// A CPU profile row: `ns` of sampled time, over `samples` samples (no percentiles).
    fn sampled(samples: u64, ns: u64) -> Self {
        Self {
            count: samples,
            total_ns: ns,
            mean_ns: ns.checked_div(samples).unwrap_or(0),
            p50_ns: None,
            p99_ns: None,
        }
    }

    fn aggregate(rows: impl Iterator<Item = Self>) -> Self {
        let (count, total) = rows.fold((0, 0), |(c, t), r| (c + r.count, t + r.total_ns));
        Self {
            count,
            total_ns: total,
            mean_ns: total.checked_div(count).unwrap_or(0),
            p50_ns: None,
            p99_ns: None,
        }
    }

    /// The value of `metric`, if this row has it.
    pub fn metric(&self, metric: Metric) -> Option<u64> {
        match metric {
            Metric::Total => Some(self.total_ns),
            Metric::Mean => Some(self.mean_ns),
            Metric::P50 => self.p50_ns,
            Metric::P99 => self.p99_ns,
            Metric::Count => Some(self.count),
        }
    }
}

/// How a row compares.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// The metric grew by more than the threshold.
    Regressed,
    /// The metric shrank by more than the threshold.
    Improved,
    /// Within the threshold.
    Unchanged,
    /// Only in the current run.
    Added,
    /// Only in the baseline.
    Removed,
    /// Not judged (aggregate row with a percentile metric).
    NotCompared,
}

/// One compared row.
#[derive(Debug, Clone, Serialize)]
pub struct Entry {
    /// `kernel`, `api`, or `total` for the aggregate rows.
    pub kind: &'static str,
    /// Kernel or function name.
    pub name: String,
    /// Launch site (innermost first) when the summaries were split by launch site.
    pub launch_site: Option<Vec<String>>,
    /// Verdict.
    pub status: Status,
    /// Baseline numbers.
    pub base: Option<RowStats>,
    /// Current numbers.
    pub current: Option<RowStats>,
    /// Relative change of the metric, percent (absent when not comparable; `null` in JSON
    /// also for growth from zero).
    pub change_pct: Option<f64>,
}

type Key = (&'static str, String, Option<Vec<String>>);

fn rows(s: &SummaryIn) -> BTreeMap<Key, RowStats> {
    let mut m = BTreeMap::new();
    for k in &s.kernels {
        m.insert(("kernel", k.name.clone(), k.launch_site.clone()), RowStats::of(k.launches, &k.time));
    }
    for a in &s.api {
        m.insert(("api", a.name.clone(), None), RowStats::of(a.calls, &a.time));
    }
    let kernels = RowStats::aggregate(s.kernels.iter().map(|k| RowStats::of(k.launches, &k.time)));
    let api = RowStats::aggregate(s.api.iter().map(|a| RowStats::of(a.calls, &a.time)));
    m.insert(("total", "[all kernels]".into(), None), kernels);
    m.insert(("total", "[all API calls]".into(), None), api);
    if let Some(cpu) = &s.cpu {
        cpu_rows(&mut m, &cpu.on_cpu, ["cpu_self", "cpu_total"], "[all CPU samples]");
        cpu_rows(&mut m, &cpu.off_cpu, ["off_cpu_self", "off_cpu_total"], "[all off-CPU time]");
    }
    m
}

/// The rows of a CPU profile: each hot function's self time (the function innermost) and total
/// time (anywhere on the stack), counted in the samples with the function innermost, and the
/// whole profile.
fn cpu_rows(m: &mut BTreeMap<Key, RowStats>, p: &ProfileIn, kinds: [&'static str; 2], all: &str) {
    if p.samples == 0 {
        return;
    }
    for h in &p.hot_functions {
        m.insert((kinds[0], h.function.clone(), None), RowStats::sampled(h.self_samples, h.self_ns));
        m.insert((kinds[1], h.function.clone(), None), RowStats::sampled(h.self_samples, h.total_ns));
    }
    m.insert(("total", all.to_owned(), None), RowStats::sampled(p.samples, p.weight_ns));
}

/// True for rows of a sampled CPU profile, where a mean per sample is the sampling period, not
/// a duration worth judging.
fn is_sampled(kind: &str) -> bool {
    kind.starts_with("cpu_") || kind.starts_with("off_cpu_")
}

pub(super) fn judge(
    base: Option<RowStats>,
    cur: Option<RowStats>,
    metric: Metric,
    threshold: f64,
) -> (Status, Option<f64>) {
    let (b, c) = match (base, cur) {
        (None, _) => return (Status::Added, None),
        (_, None) => return (Status::Removed, None),
        (Some(b), Some(c)) => (b.metric(metric), c.metric(metric)),
    };
    let (Some(b), Some(c)) = (b, c) else { return (Status::NotCompared, None) };
    if b == 0 {
        return if c == 0 { (Status::Unchanged, Some(0.0)) } else { (Status::Regressed, None) };
    }
    let change = (c as f64 - b as f64) * 100.0 / b as f64;
    let status = if change > threshold {
        Status::Regressed
    } else if -change > threshold {
        Status::Improved
    } else {
        Status::Unchanged
    };
    (status, Some((change * 100.0).round() / 100.0))
}

/// Compares two summaries row by row; regressions first (largest change first), then the rest
/// by kind and name.
pub(super) fn compare(base: &SummaryIn, cur: &SummaryIn, metric: Metric, threshold: f64) -> Vec<Entry> {
    let (b, mut c) = (rows(base), rows(cur));
    let mut out = Vec::new();
    for (key, bs) in b {
        let cs = c.remove(&key);
        out.push(entry(key, Some(bs), cs, metric, threshold));
    }
    for (key, cs) in c {
        out.push(entry(key, None, Some(cs), metric, threshold));
    }
    out.sort_by(|x, y| {
        let change = |e: &Entry| -e.change_pct.unwrap_or(f64::INFINITY);
        x.status
            .cmp(&y.status)
            .then_with(|| {
                if x.status == Status::Regressed {
                    change(x).total_cmp(&change(y))
                } else {
                    std::cmp::Ordering::Equal
                }
            })
            .then_with(|| kind_rank(x.kind).cmp(&kind_rank(y.kind)))
            .then_with(|| (&x.name, &x.launch_site).cmp(&(&y.name, &y.launch_site)))
    });
    out
}

fn kind_rank(kind: &str) -> u8 {
    match kind {
        "total" => 0,
        "kernel" => 1,
        "api" => 2,
        _ => 3,
    }
}

fn entry(key: Key, base: Option<RowStats>, cur: Option<RowStats>, metric: Metric, threshold: f64) -> Entry {
    let sampled = is_sampled(key.0) || key.1.starts_with("[all CPU") || key.1.starts_with("[all off-CPU");
    let (status, change_pct) = if sampled && metric == Metric::Mean && base.is_some() && cur.is_some() {
        (Status::NotCompared, None)
    } else {
        judge(base, cur, metric, threshold)
    };
    Entry { kind: key.0, name: key.1, launch_site: key.2, status, base, current: cur, change_pct }
}
