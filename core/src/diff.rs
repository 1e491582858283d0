//! `xpuprof diff BASE CURRENT`: compares two summaries and gates CI on regressions.
//!
//! Each input is a `summary.json` written by the `summary` sink, an output directory that
//! contains one, or an archive (the archive file, its directory, or an output directory holding
//! an archive but no `summary.json`): an archive is replayed through the `summary` sink into a
//! temporary directory first ([`crate::report`]), which needs the sink's plugin library on the
//! usual plugin search path.
//!
//! Every kernel row (by name, and by launch site when the summary was split by launch site) and
//! every API function is matched by name between the two runs, plus two aggregate rows,
//! `[all kernels]` and `[all API calls]`. For each, the output shows the count (launches or
//! calls) in both runs and the chosen metric (`--metric total|mean|p50|p99|count`, default
//! total) with its relative change. A row **regressed** when its metric grew by more than the
//! threshold (`--threshold 5%`), **improved** when it shrank by more than the threshold, and is
//! **unchanged** otherwise; rows only one run has are **added** or **removed** and do not fail
//! the gate by themselves (their time shows in the aggregate rows). The aggregate rows have no
//! percentiles: with `--metric p50|p99` they are shown but not judged.
//!
//! [`run`] returns `Ok(true)` when at least one row regressed (exit code 1), `Ok(false)`
//! otherwise (exit 0), and a [`DiffError`] for bad input (exit 2): unreadable files, malformed
//! JSON (with line and column), a file that is not a summary, or a `schema_version` this
//! xpuprof does not read.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The `summary.json` schema version this comparison reads (the `summary` sink's
/// `SCHEMA_VERSION`).
pub const SUPPORTED_SCHEMA_VERSION: u64 = 1;

/// Version of the `--format json` output of `xpuprof diff`.
pub const DIFF_SCHEMA_VERSION: u64 = 1;

/// What the user asked `xpuprof diff` for.
#[derive(Debug, Clone)]
pub struct DiffOptions {
    /// Baseline: a `summary.json`, an output directory or an archive.
    pub base: PathBuf,
    /// Current run, same forms.
    pub current: PathBuf,
    /// Relative change (percent) above which a slower metric is a regression.
    pub threshold_pct: f64,
    /// Which metric counts ("total", "mean", "p50", "p99", "count").
    pub metric: String,
    /// "text", "json" or "markdown".
    pub format: String,
}

/// Bad input for `xpuprof diff` (exit code 2).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DiffError {
    /// A file or directory could not be read.
    #[error("failed to read {}: {source}", path.display())]
    Read {
        /// The path.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A directory with neither `summary.json` nor an archive.
    #[error(
        "failed to find a summary in {}: it holds neither summary.json nor an archive \
         (trace.xpa); record with `--sink summary` or `--sink archive`",
        path.display()
    )]
    NoSummary {
        /// The directory.
        path: PathBuf,
    },
    /// An archive could not be replayed through the `summary` sink.
    #[error("failed to replay archive {} through the summary sink: {message}", path.display())]
    Replay {
        /// The archive.
        path: PathBuf,
        /// Why.
        message: String,
    },
    /// A file that is not JSON.
    #[error("failed to parse {}: malformed JSON at line {line}, column {column}: {message}", path.display())]
    MalformedJson {
        /// The file.
        path: PathBuf,
        /// 1-based line of the error.
        line: usize,
        /// 1-based column of the error.
        column: usize,
        /// What is wrong.
        message: String,
    },
    /// JSON that is not a summary (no `schema_version`, wrong field types, ...).
    #[error("failed to read {}: not an xpuprof summary.json: {reason}", path.display())]
    NotASummary {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// A summary of another schema version.
    #[error(
        "failed to read {}: summary schema_version is {found}, this xpuprof reads version \
         {supported}; hint: regenerate it with this xpuprof (`xpuprof report ARCHIVE --sink summary`)",
        path.display()
    )]
    SchemaMismatch {
        /// The file.
        path: PathBuf,
        /// Its version.
        found: u64,
        /// The version read here.
        supported: u64,
    },
    /// A threshold that is not a percentage.
    #[error("invalid threshold {value:?}: expected a percentage >= 0 such as \"5%\"")]
    BadThreshold {
        /// What was given.
        value: String,
    },
    /// An unknown metric.
    #[error("invalid metric {value:?}: expected one of total, mean, p50, p99, count")]
    BadMetric {
        /// What was given.
        value: String,
    },
    /// An unknown output format.
    #[error("invalid format {value:?}: expected text, json or markdown")]
    BadFormat {
        /// What was given.
        value: String,
    },
    /// Writing the comparison failed.
    #[error("failed to write the comparison: {0}")]
    Write(#[from] std::io::Error),
}

/// Parses a threshold such as `"5%"`, `"2.5 %"` or `"5"` (percent either way).
pub fn parse_threshold(s: &str) -> Result<f64, DiffError> {
    let bad = || DiffError::BadThreshold { value: s.to_owned() };
    let v: f64 = s.trim().trim_end_matches('%').trim().parse().map_err(|_| bad())?;
    if v.is_finite() && v >= 0.0 {
        Ok(v)
    } else {
        Err(bad())
    }
}

/// The metric a regression is judged on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Metric {
    /// Total time.
    Total,
    /// Mean time.
    Mean,
    /// Median time.
    P50,
    /// 99th percentile time.
    P99,
    /// Launches or calls.
    Count,
}

impl Metric {
    /// Parses `total`, `mean`, `p50`, `p99` or `count`.
    pub fn parse(s: &str) -> Result<Self, DiffError> {
        Ok(match s.trim().to_ascii_lowercase().as_str() {
            "total" => Self::Total,
            "mean" => Self::Mean,
            "p50" | "median" => Self::P50,
            "p99" => Self::P99,
            "count" => Self::Count,
            _ => return Err(DiffError::BadMetric { value: s.to_owned() }),
        })
    }

    /// Its name in the output.
    pub fn name(self) -> &'static str {
        match self {
            Self::Total => "total",
            Self::Mean => "mean",
            Self::P50 => "p50",
            Self::P99 => "p99",
            Self::Count => "count",
        }
    }
}

/// Output format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Aligned table.
    Text,
    /// Machine-readable JSON.
    Json,
    /// Markdown table for pull-request comments.
    Markdown,
}

impl Format {
    /// Parses `text`, `json` or `markdown` (`md`).
    pub fn parse(s: &str) -> Result<Self, DiffError> {
        Ok(match s.trim().to_ascii_lowercase().as_str() {
            "text" => Self::Text,
            "json" => Self::Json,
            "markdown" | "md" => Self::Markdown,
            _ => return Err(DiffError::BadFormat { value: s.to_owned() }),
        })
    }
}

// ---- reading summaries --------------------------------------------------------------------

#[derive(Debug, Deserialize)]
struct TimeIn {
    total_ns: u64,
    mean_ns: u64,
    p50_ns: u64,
    p99_ns: u64,
}

#[derive(Debug, Deserialize)]
struct ApiIn {
    name: String,
    calls: u64,
    time: TimeIn,
}

#[derive(Debug, Deserialize)]
struct KernelIn {
    name: String,
    #[serde(default)]
    launch_site: Option<Vec<String>>,
    launches: u64,
    time: TimeIn,
}

#[derive(Debug, Deserialize)]
struct SummaryIn {
    #[serde(default)]
    api: Vec<ApiIn>,
    #[serde(default)]
    kernels: Vec<KernelIn>,
}

/// What an input path holds.
#[derive(Debug)]
enum Input {
    /// A summary file.
    Summary(PathBuf),
    /// An archive to replay.
    Archive(PathBuf),
}

/// True when `path` is a file starting with the archive magic.
fn is_archive_file(path: &Path) -> bool {
    use std::io::Read;
    let mut magic = [0u8; 8];
    std::fs::File::open(path).and_then(|mut f| f.read_exact(&mut magic)).is_ok() && &magic == b"XPUARCH\0"
}

/// Finds the summary or archive `path` names.
fn locate(path: &Path) -> Result<Input, DiffError> {
    let meta = std::fs::metadata(path).map_err(|source| DiffError::Read { path: path.to_owned(), source })?;
    if !meta.is_dir() {
        return Ok(if is_archive_file(path) {
            Input::Archive(path.to_owned())
        } else {
            Input::Summary(path.to_owned())
        });
    }
    let file = path.join("summary.json");
    if file.is_file() {
        return Ok(Input::Summary(file));
    }
    let archive = ["trace.xpa", "archive/trace.xpa"].iter().map(|f| path.join(f)).find(|f| f.is_file());
    match archive {
        Some(a) => Ok(Input::Archive(a)),
        None => Err(DiffError::NoSummary { path: path.to_owned() }),
    }
}

/// Replays `archive` through the `summary` sink (digest off) into a temporary directory and
/// returns that directory.
fn replay(archive: &Path, which: &str) -> Result<PathBuf, DiffError> {
    let fail = |message: String| DiffError::Replay { path: archive.to_owned(), message };
    let nanos =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
    let dir = std::env::temp_dir().join(format!("xpuprof-diff-{}-{nanos}-{which}", std::process::id()));
    let config =
        crate::config::FileConfig::parse(Path::new("<xpuprof diff>"), "[sink.summary]\ndigest = false\n")
            .map_err(|e| fail(e.to_string()))?;
    let env = std::env::var("XPUPROF_PLUGIN_PATH").ok();
    let opts = crate::report::ReportOptions {
        archive: archive.to_owned(),
        sinks: vec!["summary".to_owned()],
        output_dir: dir.clone(),
        config: Some(config),
        search: crate::host::SearchPath::new(&[], env.as_deref(), &[]),
        verbosity: 0,
    };
    let outcome = crate::report::report(&opts).map_err(|e| fail(e.to_string()));
    let problem = match &outcome {
        Err(_) => None,
        Ok(o) if !o.plugin_failures.is_empty() => Some(o.plugin_failures.join("; ")),
        Ok(o) => o.corruption.as_ref().map(|c| format!("the archive is damaged: {c}")),
    };
    if outcome.is_err() || problem.is_some() {
        let _ = std::fs::remove_dir_all(&dir);
        return Err(problem.map_or_else(|| outcome.unwrap_err(), fail));
    }
    Ok(dir)
}

/// Reads one input: a summary directly, an archive by replaying it first.
fn load(path: &Path, which: &str) -> Result<(PathBuf, SummaryIn), DiffError> {
    match locate(path)? {
        Input::Summary(file) => Ok((file.clone(), read_summary(&file)?)),
        Input::Archive(archive) => {
            let dir = replay(&archive, which)?;
            let summary = read_summary(&dir.join("summary.json"));
            let _ = std::fs::remove_dir_all(&dir);
            Ok((archive, summary?))
        }
    }
}

/// Reads and checks one summary file.
fn read_summary(file: &Path) -> Result<SummaryIn, DiffError> {
    let file = file.to_owned();
    let text =
        std::fs::read_to_string(&file).map_err(|source| DiffError::Read { path: file.clone(), source })?;
    let value: serde_json::Value = serde_json::from_str(&text).map_err(|e| DiffError::MalformedJson {
        path: file.clone(),
        line: e.line(),
        column: e.column(),
        message: e.to_string().split(" at line ").next().unwrap_or_default().to_owned(),
    })?;
    let not_summary = |reason: String| DiffError::NotASummary { path: file.clone(), reason };
    let version = match value.get("schema_version") {
        None => return Err(not_summary("it has no `schema_version` field".into())),
        Some(v) => {
            v.as_u64().ok_or_else(|| not_summary(format!("`schema_version` is {v}, not an integer")))?
        }
    };
    if version != SUPPORTED_SCHEMA_VERSION {
        return Err(DiffError::SchemaMismatch {
            path: file,
            found: version,
            supported: SUPPORTED_SCHEMA_VERSION,
        });
    }
    serde_json::from_value(value).map_err(|e| not_summary(e.to_string()))
}

// ---- comparing ----------------------------------------------------------------------------

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
    m
}

fn judge(
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
fn compare(base: &SummaryIn, cur: &SummaryIn, metric: Metric, threshold: f64) -> Vec<Entry> {
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
        _ => 2,
    }
}

fn entry(key: Key, base: Option<RowStats>, cur: Option<RowStats>, metric: Metric, threshold: f64) -> Entry {
    let (status, change_pct) = judge(base, cur, metric, threshold);
    Entry { kind: key.0, name: key.1, launch_site: key.2, status, base, current: cur, change_pct }
}

/// The outcome of a comparison, as written by `--format json`.
#[derive(Debug, Clone, Serialize)]
pub struct Comparison {
    /// [`DIFF_SCHEMA_VERSION`].
    pub schema_version: u64,
    /// Baseline summary file.
    pub base: PathBuf,
    /// Current summary file.
    pub current: PathBuf,
    /// The metric judged.
    pub metric: &'static str,
    /// The threshold, percent.
    pub threshold_pct: f64,
    /// True when a row regressed.
    pub regressed: bool,
    /// Rows per status.
    pub counts: BTreeMap<&'static str, u64>,
    /// The rows.
    pub entries: Vec<Entry>,
}

/// Loads both inputs and compares them.
pub fn compare_files(opts: &DiffOptions) -> Result<Comparison, DiffError> {
    let metric = Metric::parse(&opts.metric)?;
    let threshold = opts.threshold_pct;
    if !(threshold.is_finite() && threshold >= 0.0) {
        return Err(DiffError::BadThreshold { value: format!("{threshold}%") });
    }
    let (base_path, base) = load(&opts.base, "base")?;
    let (cur_path, cur) = load(&opts.current, "current")?;
    let entries = compare(&base, &cur, metric, threshold);
    let mut counts = BTreeMap::new();
    for e in &entries {
        *counts.entry(status_name(e.status)).or_insert(0) += 1;
    }
    Ok(Comparison {
        schema_version: DIFF_SCHEMA_VERSION,
        base: base_path,
        current: cur_path,
        metric: metric.name(),
        threshold_pct: threshold,
        regressed: entries.iter().any(|e| e.status == Status::Regressed),
        counts,
        entries,
    })
}

/// Writes the comparison to `out`; returns true when a regression was found.
pub fn run(opts: &DiffOptions, out: &mut dyn Write) -> Result<bool, DiffError> {
    let format = Format::parse(&opts.format)?;
    let cmp = compare_files(opts)?;
    let text = match format {
        Format::Text => render_text(&cmp),
        Format::Markdown => render_markdown(&cmp),
        Format::Json => {
            serde_json::to_string_pretty(&cmp).map_err(|e| DiffError::Write(std::io::Error::other(e)))? + "\n"
        }
    };
    out.write_all(text.as_bytes())?;
    out.flush()?;
    Ok(cmp.regressed)
}

// ---- rendering ----------------------------------------------------------------------------

fn status_name(s: Status) -> &'static str {
    match s {
        Status::Regressed => "regressed",
        Status::Improved => "improved",
        Status::Unchanged => "unchanged",
        Status::Added => "added",
        Status::Removed => "removed",
        Status::NotCompared => "not_compared",
    }
}

fn ns(v: u64) -> String {
    let f = v as f64;
    match v {
        0..=999 => format!("{v} ns"),
        1_000..=999_999 => format!("{:.2} µs", f / 1e3),
        1_000_000..=999_999_999 => format!("{:.2} ms", f / 1e6),
        _ => format!("{:.3} s", f / 1e9),
    }
}

/// The time metric shown next to the counts (`total` when judging counts).
fn time_metric(cmp: &Comparison) -> Metric {
    match Metric::parse(cmp.metric) {
        Ok(Metric::Count) | Err(_) => Metric::Total,
        Ok(m) => m,
    }
}

/// The cells of one row: kind, name, count base/current/change, time base/current/change, status.
fn cells(e: &Entry, time: Metric) -> [String; 9] {
    let count = |s: Option<RowStats>| s.map_or("-".to_owned(), |s| s.count.to_string());
    let t = |s: Option<RowStats>| s.and_then(|s| s.metric(time)).map_or("-".to_owned(), ns);
    let count_change = match (e.base, e.current) {
        (Some(b), Some(c)) => format!("{:+}", c.count as i128 - b.count as i128),
        _ => "-".to_owned(),
    };
    let time_change = match (e.base.and_then(|b| b.metric(time)), e.current.and_then(|c| c.metric(time))) {
        (Some(0), Some(0)) => "+0.0%".to_owned(),
        (Some(0), Some(_)) => "new".to_owned(),
        (Some(b), Some(c)) => format!("{:+.1}%", (c as f64 - b as f64) * 100.0 / b as f64),
        _ => "-".to_owned(),
    };
    let mut name = e.name.clone();
    if let Some(site) = &e.launch_site {
        name = format!(
            "{name} @ {}",
            if site.is_empty() { "[unknown launch site]".into() } else { site.join(" < ") }
        );
    }
    [
        e.kind.to_owned(),
        name,
        count(e.base),
        count(e.current),
        count_change,
        t(e.base),
        t(e.current),
        time_change,
        status_name(e.status).replace('_', " "),
    ]
}

fn headline(cmp: &Comparison) -> String {
    let n = |s: &str| cmp.counts.get(s).copied().unwrap_or(0);
    format!(
        "{} regressed, {} improved, {} unchanged, {} added, {} removed (metric {}, threshold {}%)",
        n("regressed"),
        n("improved"),
        n("unchanged"),
        n("added"),
        n("removed"),
        cmp.metric,
        cmp.threshold_pct
    )
}

fn render_text(cmp: &Comparison) -> String {
    let time = time_metric(cmp);
    let t = time.name();
    let headers = [
        "Kind",
        "Name",
        "Count base",
        "Count now",
        "Change",
        &format!("{t} base"),
        &format!("{t} now"),
        "Change",
        "Status",
    ]
    .map(str::to_owned);
    let rows: Vec<[String; 9]> = cmp.entries.iter().map(|e| cells(e, time)).collect();
    let mut widths = headers.clone().map(|h| h.chars().count());
    for r in &rows {
        for (w, c) in widths.iter_mut().zip(r) {
            *w = (*w).max(c.chars().count());
        }
    }
    let mut out = format!("xpuprof diff: {} -> {}\n", cmp.base.display(), cmp.current.display());
    for r in std::iter::once(&headers).chain(&rows) {
        let mut line = String::new();
        for (i, (c, w)) in r.iter().zip(widths).enumerate() {
            let pad = " ".repeat(w - c.chars().count());
            let cell = if i < 2 || i == 8 { format!("{c}{pad}") } else { format!("{pad}{c}") };
            line.push_str("  ");
            line.push_str(&cell);
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out.push_str(&headline(cmp));
    out.push('\n');
    out
}

fn md_escape(s: &str) -> String {
    s.replace('|', "\\|").replace('`', "'")
}

fn render_markdown(cmp: &Comparison) -> String {
    let time = time_metric(cmp);
    let t = time.name();
    let verdict = if cmp.regressed { ":x: regression" } else { ":white_check_mark: no regression" };
    let mut out = format!("### xpuprof diff: {verdict}\n\n{}\n\n", headline(cmp));
    out.push_str(&format!(
        "| Kind | Name | Count base | Count now | Change | {t} base | {t} now | Change | Status |\n"
    ));
    out.push_str("|---|---|---:|---:|---:|---:|---:|---:|---|\n");
    for e in &cmp.entries {
        let mut c = cells(e, time);
        c[1] = format!("`{}`", md_escape(&c[1]));
        if e.status == Status::Regressed {
            c[8] = format!("**{}**", c[8]);
        }
        out.push_str(&format!("| {} |\n", c.join(" | ")));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thresholds_parse_as_percent() {
        assert_eq!(parse_threshold("5%").unwrap(), 5.0);
        assert_eq!(parse_threshold(" 2.5 % ").unwrap(), 2.5);
        assert_eq!(parse_threshold("10").unwrap(), 10.0);
        for bad in ["", "%", "-1%", "five", "nan"] {
            let e = parse_threshold(bad).unwrap_err();
            assert!(e.to_string().contains("invalid threshold"), "{e}");
        }
    }

    #[test]
    fn judging_uses_the_threshold_both_ways() {
        let r = |v| Some(RowStats { count: v, total_ns: v, mean_ns: v, p50_ns: Some(v), p99_ns: None });
        assert_eq!(judge(r(100), r(106), Metric::Total, 5.0), (Status::Regressed, Some(6.0)));
        assert_eq!(judge(r(100), r(105), Metric::Total, 5.0), (Status::Unchanged, Some(5.0)));
        assert_eq!(judge(r(100), r(90), Metric::Count, 5.0), (Status::Improved, Some(-10.0)));
        assert_eq!(judge(r(0), r(1), Metric::Total, 5.0), (Status::Regressed, None));
        assert_eq!(judge(r(1), r(2), Metric::P99, 5.0), (Status::NotCompared, None));
        assert_eq!(judge(None, r(2), Metric::Total, 5.0), (Status::Added, None));
        assert_eq!(judge(r(2), None, Metric::Total, 5.0), (Status::Removed, None));
    }
}
