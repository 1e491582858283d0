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
//! CPU profiles are compared the same way: every hot function of the on-CPU and off-CPU
//! profiles gives a `cpu_self` / `off_cpu_self` row (time with the function innermost) and a
//! `cpu_total` / `off_cpu_total` row (time with the function anywhere on the stack), counted in
//! the samples with the function innermost, plus the aggregates `[all CPU samples]` and
//! `[all off-CPU time]`; the same threshold and metric apply (`total` judges sampled time,
//! `count` the samples; the mean of a sample is its period, so `mean` is not judged, and sampled
//! rows have no percentiles).
//!
//! [`run`] returns `Ok(true)` when at least one row regressed (exit code 1), `Ok(false)`
//! otherwise (exit 0), and a [`DiffError`] for bad input (exit 2): unreadable files, malformed
//! JSON (with line and column), a file that is not a summary, a `schema_version` this
//! xpuprof does not read, or a section (`api`, `kernels`, `cpu`) only one input has (its rows
//! would all show as added or removed, which no threshold judges).

use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;

use serde::Serialize;

mod compare;
mod input;
mod render;

pub use compare::{Entry, RowStats, Status};

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
    /// A section (`api`, `kernels`, `cpu`) that one input has and the other lacks.
    #[error(
        "failed to compare the runs: the {lacking} {} has no `{section}` section, but {} has one, \
         so every row of it would show as {}; hint: record both runs with the same sources and \
         the summary sink (it always writes `api`, `kernels` and `cpu`), or regenerate a summary \
         with `xpuprof report ARCHIVE --sink summary`",
        lacks.display(),
        has.display(),
        if *lacking == "baseline" { "added" } else { "removed" }
    )]
    MissingSection {
        /// `api`, `kernels` or `cpu`.
        section: &'static str,
        /// The input that has it.
        has: PathBuf,
        /// The input that lacks it.
        lacks: PathBuf,
        /// Which input lacks it: `baseline` or `current run`.
        lacking: &'static str,
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
    let (base_path, base) = input::load(&opts.base, "base")?;
    let (cur_path, cur) = input::load(&opts.current, "current")?;
    input::check_sections((&base_path, &base), (&cur_path, &cur))?;
    let entries = compare::compare(&base, &cur, metric, threshold);
    let mut counts = BTreeMap::new();
    for e in &entries {
        *counts.entry(render::status_name(e.status)).or_insert(0) += 1;
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
        Format::Text => render::render_text(&cmp),
        Format::Markdown => render::render_markdown(&cmp),
        Format::Json => {
            serde_json::to_string_pretty(&cmp).map_err(|e| DiffError::Write(std::io::Error::other(e)))? + "\n"
        }
    };
    out.write_all(text.as_bytes())?;
    out.flush()?;
    Ok(cmp.regressed)
}

#[cfg(test)]
mod tests {
    use super::compare::judge;
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
