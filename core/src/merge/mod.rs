//! `xpuprof report --merge DIR...`: the recordings of several hosts (each its own `xpuprof
//! record` with the archive sink) replayed as one session: every recording's ids kept apart in
//! one id space (`renumber.rs`), its clock lined up by the wall-clock/session-clock pair it
//! took at start (`align.rs`), the records merged by time as they stream (`kway.rs`). A
//! recording that cannot be opened, or is damaged, is reported; the others still merge.

mod align;
mod fine;
mod kway;
mod renumber;

use std::path::PathBuf;

use xpuprof_archive::{ClockPair, Meta};
use xpuprof_sdk::model::Record;

use crate::config::FileConfig;
use crate::host::SearchPath;
use crate::report::{self, Outputs, ReportOutcome};
use crate::session::SessionError;

pub use align::Alignment;
pub use fine::{Fit, FitUse};

/// What `xpuprof report --merge` was asked to do.
#[derive(Debug, Clone)]
pub struct MergeOptions {
    /// The recordings: archive directories, output directories containing one, or trace files.
    pub archives: Vec<PathBuf>,
    /// Sinks to replay into; empty = the sinks of the first recording, except `archive`.
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

/// One recording of a merge.
#[derive(Debug, Clone)]
pub struct Merged {
    /// As given.
    pub path: PathBuf,
    /// The host that recorded it (empty when the archive does not say).
    pub host: String,
    /// Records replayed from it.
    pub records: u64,
    /// How its clock was lined up; `None` when it could not be opened.
    pub alignment: Option<Alignment>,
    /// Why it is missing from the merge, or where it is damaged (the rest of it was merged).
    pub problem: Option<String>,
}

/// What a merge produced.
#[derive(Debug, Clone, Default)]
pub struct MergeOutcome {
    /// Records, files, damage and plugin failures, as for one archive.
    pub report: ReportOutcome,
    /// Each recording, in the order given.
    pub recordings: Vec<Merged>,
    /// The recording whose clock the merged session uses.
    pub reference: Option<usize>,
    /// Pids renumbered because two recordings had them.
    pub pids_renumbered: u64,
    /// Nanoseconds the reference's own times were moved so that no recording's go back
    /// (when the ends of collectives moved another recording earlier).
    pub reference_lift_ns: u64,
}

impl MergeOutcome {
    /// 0 when every recording merged cleanly; 1 when one is missing or damaged (the others
    /// are merged); 125 when a sink failed.
    pub fn exit_code(&self) -> i32 {
        let missing = self.recordings.iter().any(|r| r.problem.is_some());
        match self.report.exit_code() {
            0 if missing => 1,
            code => code,
        }
    }

    /// What the merge says about each recording's clock, for people.
    pub fn clock_lines(&self) -> Vec<String> {
        let mut lines = Vec::new();
        for (i, r) in self.recordings.iter().enumerate() {
            let host = if r.host.is_empty() { "host not recorded" } else { &r.host };
            let line = match (&r.alignment, self.reference) {
                (None, _) => {
                    format!("{}: not merged: {}", r.path.display(), r.problem.as_deref().unwrap_or(""))
                }
                (Some(_), Some(reference)) if reference == i && self.reference_lift_ns > 0 => format!(
                    "{} ({host}): the reference clock, its times moved by {} ns so that no recording's go \
                     back",
                    r.path.display(),
                    self.reference_lift_ns
                ),
                (Some(_), Some(reference)) if reference == i => {
                    format!("{} ({host}): the reference clock", r.path.display())
                }
                (Some(Alignment { shift_ns, fine: Some(f), error_ns, .. }), _) => {
                    fine_line(&r.path.display().to_string(), host, *shift_ns, f, *error_ns)
                }
                (Some(Alignment { shift_ns, error_ns: Some(e), .. }), _) => format!(
                    "{} ({host}): shifted by {shift_ns} ns, residual error within ±{e} ns of the wall-clock \
                     pairs (plus how far the hosts' wall clocks disagree, not measured)",
                    r.path.display()
                ),
                (Some(_), _) => format!(
                    "{} ({host}): NOT aligned: the archive holds no wall-clock pair (recorded by an older \
                     xpuprof); its times are its own host's",
                    r.path.display()
                ),
            };
            lines.push(line);
            if let (Some(p), Some(_)) = (&r.problem, &r.alignment) {
                lines.push(format!("  damaged: {p}"));
            }
        }
        lines
    }
}

/// What the collectives said about a recording's clock, for people.
fn fine_line(path: &str, host: &str, shift_ns: u64, f: &Fit, pairs_error: Option<u64>) -> String {
    let pairs = match pairs_error {
        Some(e) => format!("the wall-clock pairs (±{e} ns)"),
        None => "no wall-clock pair".to_owned(),
    };
    match f.use_ {
        FitUse::Applied => format!(
            "{path} ({host}): shifted by {shift_ns} ns, lined up by the {} collectives it shares with the reference \
             ({:+} ns after {pairs}): residual error within ±{} ns (the offset the collectives' arrivals and \
             ends allow; their ends disagree by a median {} ns after the shift)",
            f.matched, f.delta_ns, f.error_ns, f.residual_median_ns
        ),
        FitUse::SameHost => format!(
            "{path} ({host}): shifted by {shift_ns} ns by {pairs}: the reference's host, one clock; the ends of \
             the {} collectives they share put it {:+} ns off (within ±{} ns), what their devices' timestamps \
             disagree by",
            f.matched, f.delta_ns, f.error_ns
        ),
        FitUse::Contradicts => format!(
            "{path} ({host}): shifted by {shift_ns} ns by {pairs} only: no offset fits all {} collectives it shares \
             with the reference (a rank missed one, so their numbers differ); not lined up by them",
            f.matched
        ),
    }
}

/// Merges `opts.archives` into one session through the chosen sinks.
pub fn merge(opts: &MergeOptions) -> Result<MergeOutcome, SessionError> {
    let mut recordings: Vec<Merged> = Vec::new();
    let mut readers = Vec::new();
    for path in &opts.archives {
        let mut m =
            Merged { path: path.clone(), host: String::new(), records: 0, alignment: None, problem: None };
        match xpuprof_archive::open(path) {
            Ok(r) => {
                m.host = r.meta().host.clone();
                readers.push((recordings.len(), r));
            }
            Err(e) => m.problem = Some(e.to_string()),
        }
        recordings.push(m);
    }
    if readers.is_empty() {
        let why: Vec<String> = recordings.iter().filter_map(|r| r.problem.clone()).collect();
        return Err(report::config_error(format!("no recording could be merged: {}", why.join("; "))));
    }
    let pairs: Vec<_> = readers.iter().map(|(_, r)| r.meta().clock_pair).collect();
    let (mut alignments, reference) = align::align(&pairs);
    let paths: Vec<&std::path::Path> = readers.iter().map(|(_, r)| r.path()).collect();
    let hosts: Vec<&str> = readers.iter().map(|(_, r)| r.meta().host.as_str()).collect();
    let lift = fine::refine(&paths, &hosts, &mut alignments, reference.unwrap_or(0));
    let mut meta = merged_meta(readers.iter().map(|(_, r)| r.meta()), &alignments);
    // The merged session's times are on the reference's clock (moved by `lift`): an archive
    // written from the merge carries its facts, so it can be merged again.
    if let Some(r) = reference {
        let pair = pairs[r].map(|p| ClockPair { session_ns: p.session_ns.saturating_add(lift), ..p });
        (meta.host, meta.clock_pair) = (readers[r].1.meta().host.clone(), pair);
    }
    let sinks: Vec<String> = if opts.sinks.is_empty() {
        meta.sinks.iter().filter(|s| s.as_str() != "archive").cloned().collect()
    } else {
        opts.sinks.clone()
    };
    for (_, r) in &readers {
        report::refuse_overwriting_input(r.path(), &opts.output_dir, &sinks)?;
    }
    let out = Outputs {
        sinks: &sinks,
        output_dir: &opts.output_dir,
        config: opts.config.as_ref(),
        search: &opts.search,
        verbosity: opts.verbosity,
    };
    let mut replay = report::replay_sinks(&out, &meta)?;
    let index: Vec<usize> = readers.iter().map(|(i, _)| *i).collect();
    let mut ids: Vec<_> =
        alignments.iter().enumerate().map(|(k, a)| renumber::Recording::new(k, *a)).collect();
    let mut feeds: Vec<_> =
        readers.into_iter().zip(&alignments).map(|((_, r), a)| kway::Feed::start(r, a.shift_ns)).collect();
    let mut space = renumber::Space::default();
    let mut batch: Vec<Record> = Vec::with_capacity(BATCH + 8);
    let mut definitions = false;
    let mut records = 0u64;
    kway::merge(&mut feeds, &mut |k, r| {
        definitions |= r.is_definition();
        ids[k].translate(&mut space, r, &mut batch);
        records += 1;
        if batch.len() >= BATCH {
            replay.deliver(&mut batch, std::mem::take(&mut definitions));
            batch.clear();
        }
    });
    if !batch.is_empty() {
        replay.deliver(&mut batch, definitions);
    }
    let results = replay.sinks.finish();
    let mut outcome = MergeOutcome { reference: reference.map(|r| index[r]), ..MergeOutcome::default() };
    outcome.pids_renumbered = space.pids_renumbered;
    outcome.reference_lift_ns = lift;
    outcome.report.records = records;
    outcome.report.files = results.files;
    outcome.report.plugin_failures = replay.failures;
    outcome.report.plugin_failures.extend(results.failures);
    for ((feed, k), align) in feeds.into_iter().zip(index).zip(alignments) {
        let m = &mut recordings[k];
        m.alignment = Some(align);
        match feed.finish() {
            Ok(stats) => {
                m.records = stats.records;
                outcome.report.skipped += stats.skipped;
                outcome.report.damaged_places += stats.damaged_places;
                if let Some(c) = stats.corruption {
                    m.problem = Some(c.to_string());
                    outcome.report.corruption.get_or_insert_with(|| c.to_string());
                }
            }
            Err(e) => m.problem = Some(e),
        }
    }
    outcome.recordings = recordings;
    Ok(outcome)
}

/// Records handed to the sinks at a time (as a replay does).
const BATCH: usize = 512;

/// The merged session's facts: the first recording's command, sinks and host, every
/// recording's sources, the earliest start on the merged clock.
fn merged_meta<'a>(metas: impl Iterator<Item = &'a Meta>, alignments: &[Alignment]) -> Meta {
    let mut merged: Option<Meta> = None;
    for (m, a) in metas.zip(alignments) {
        let start = a.at(m.start_time);
        let Some(into) = merged.as_mut() else {
            merged = Some(Meta { start_time: start, ..m.clone() });
            continue;
        };
        into.start_time = into.start_time.min(start);
        for s in &m.sources {
            if !into.sources.contains(s) {
                into.sources.push(s.clone());
            }
        }
    }
    merged.unwrap_or_default()
}
