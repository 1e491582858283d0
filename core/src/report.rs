//! `xpuprof report`: replays an archive through any sinks. The archive holds the exact record
//! stream the live sinks received, so a replay reproduces their outputs byte for byte.

use std::path::{Path, PathBuf};

use xpuprof_sdk::model::Record;
use xpuprof_sdk::PluginKind;

use crate::config::FileConfig;
use crate::host::{Registry, SearchPath};
use crate::pipeline::sinks::Sinks;
use crate::session::{self, SessionError};

/// What `xpuprof report` was asked to do.
#[derive(Debug, Clone)]
pub struct ReportOptions {
    /// The archive directory, or the output directory that contains it.
    pub archive: PathBuf,
    /// Sinks to replay into; empty = the sinks of the recorded session, except `archive`.
    pub sinks: Vec<String>,
    /// Output directory.
    pub output_dir: PathBuf,
    /// The config file, if any.
    pub config: Option<FileConfig>,
    /// Where plugins are looked for.
    pub search: SearchPath,
    /// Verbosity.
    pub verbosity: u8,
}

/// What a replay produced.
#[derive(Debug, Clone, Default)]
pub struct ReportOutcome {
    /// Records replayed.
    pub records: u64,
    /// Files written.
    pub files: Vec<String>,
    /// The first damage met in the archive; the replay went on past it.
    pub corruption: Option<String>,
    /// Records lost to damage (skipped and counted).
    pub skipped: u64,
    /// Places in the archive where damage was found.
    pub damaged_places: u64,
    /// Plugin failures.
    pub plugin_failures: Vec<String>,
}

impl ReportOutcome {
    /// 0 on a clean replay; 1 when the archive was damaged (everything intact is written);
    /// 125 when a sink failed.
    pub fn exit_code(&self) -> i32 {
        if !self.plugin_failures.is_empty() {
            125
        } else if self.corruption.is_some() {
            1
        } else {
            0
        }
    }
}

/// Refuses a replay whose `archive` sink would write over the archive being read: creating
/// the output truncates the input before a record is read.
pub(crate) fn refuse_overwriting_input(
    input: &Path,
    output_dir: &Path,
    sinks: &[String],
) -> Result<(), SessionError> {
    if !sinks.iter().any(|s| s == "archive") {
        return Ok(());
    }
    let output = output_dir.join("archive").join(xpuprof_archive::FILE_NAME);
    if !same_file(input, &output) {
        return Ok(());
    }
    Err(SessionError::Config(crate::config::ConfigError {
        location: None,
        message: format!(
            "refusing to replay {} into itself: the `archive` sink would truncate the archive it \
             reads; give another output directory with `-o`",
            input.display()
        ),
    }))
}

/// True when both paths name the same existing file (through links too).
fn same_file(a: &Path, b: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (std::fs::metadata(a), std::fs::metadata(b)) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}

/// Where a replay's outputs go and which sinks write them: what `report` and `report --merge`
/// share.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Outputs<'a> {
    pub sinks: &'a [String],
    pub output_dir: &'a Path,
    pub config: Option<&'a FileConfig>,
    pub search: &'a SearchPath,
    pub verbosity: u8,
}

/// The sinks of a replay, created for the replayed session's facts.
pub(crate) struct ReplaySinks {
    pub sinks: Sinks,
    pub failures: Vec<String>,
    /// The run's `demangle` switch: display names are the host's, under this run's switch.
    pub demangle: bool,
}

impl ReplaySinks {
    /// Hands `batch` to the sinks, giving its strings their display text first.
    pub fn deliver(&mut self, batch: &mut Vec<Record>, definitions: bool) {
        if definitions {
            for r in batch.iter_mut() {
                if let Record::Str(d) = r {
                    xpuprof_toolbox::demangle::set_display(d, self.demangle);
                }
            }
        }
        self.sinks.deliver_marked(batch, definitions);
    }
}

pub(crate) fn config_error(message: String) -> SessionError {
    SessionError::Config(crate::config::ConfigError { location: None, message })
}

/// Creates the output directory and the sinks of `out` for a session of `meta`'s command,
/// sources and start.
pub(crate) fn replay_sinks(
    out: &Outputs<'_>,
    meta: &xpuprof_archive::Meta,
) -> Result<ReplaySinks, SessionError> {
    let reg = Registry::discover(out.search);
    if let Some(file) = out.config {
        file.check_known(PluginKind::Sink, &reg.names(PluginKind::Sink))?;
    }
    std::fs::create_dir_all(out.output_dir).map_err(|e| {
        SessionError::Internal(format!("failed to create output directory {}: {e}", out.output_dir.display()))
    })?;
    let table = session::session_table(
        out.output_dir,
        &meta.command,
        &meta.sources,
        out.sinks,
        meta.start_time,
        out.verbosity,
    );
    let mut failures = Vec::new();
    let sinks = session::create_sinks(&reg, out.sinks, out.config, &table, &mut failures)?;
    Ok(ReplaySinks { sinks, failures, demangle: FileConfig::demangle(out.config) })
}

/// Replays `opts.archive` through the chosen sinks.
pub fn report(opts: &ReportOptions) -> Result<ReportOutcome, SessionError> {
    // The archive's errors already say "failed to open archive <path>".
    let mut reader = xpuprof_archive::open(&opts.archive).map_err(|e| config_error(e.to_string()))?;
    let meta = reader.meta().clone();
    let sinks: Vec<String> = if opts.sinks.is_empty() {
        meta.sinks.iter().filter(|s| s.as_str() != "archive").cloned().collect()
    } else {
        opts.sinks.clone()
    };
    refuse_overwriting_input(reader.path(), &opts.output_dir, &sinks)?;
    let out = Outputs {
        sinks: &sinks,
        output_dir: &opts.output_dir,
        config: opts.config.as_ref(),
        search: &opts.search,
        verbosity: opts.verbosity,
    };
    let mut replay = replay_sinks(&out, &meta)?;
    let stats = reader.replay_marked(&mut |batch, definitions| replay.deliver(batch, definitions));
    // Finish the sinks whatever the replay met: what came before a damaged spot is written.
    let results = replay.sinks.finish();
    let mut failures = replay.failures;
    failures.extend(results.failures);
    let stats = stats
        .map_err(|e| SessionError::Internal(format!("failed to replay {}: {e}", opts.archive.display())))?;
    Ok(ReportOutcome {
        records: stats.records,
        files: results.files,
        corruption: stats.corruption.map(|e| e.to_string()),
        skipped: stats.skipped,
        damaged_places: stats.damaged_places,
        plugin_failures: failures,
    })
}
