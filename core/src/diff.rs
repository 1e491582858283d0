//! `xpuprof diff BASE CURRENT`: compares two summaries and gates CI on regressions.
//! (Being written: the CLI calls [`run`].)

use std::io::Write;
use std::path::PathBuf;

/// What the user asked `xpuprof diff` for.
#[derive(Debug, Clone)]
pub struct DiffOptions {
    /// Baseline: a `summary.json`, an output directory or an archive.
    pub base: PathBuf,
    /// Current run, same forms.
    pub current: PathBuf,
    /// Relative change (percent) above which a slower metric is a regression.
    pub threshold_pct: f64,
    /// Which metric counts ("total", "mean", "p99", "count").
    pub metric: String,
    /// "text", "json" or "markdown".
    pub format: String,
}

/// Bad input for `xpuprof diff` (exit code 2).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DiffError {
    /// Not implemented yet.
    #[error("xpuprof diff is not implemented yet")]
    NotImplemented,
}

/// Writes the comparison to `out`; returns true when a regression was found.
pub fn run(_opts: &DiffOptions, _out: &mut dyn Write) -> Result<bool, DiffError> {
    Err(DiffError::NotImplemented)
}
