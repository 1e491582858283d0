//! Reading the inputs of `xpuprof diff`: a summary file, an output directory, or an archive
//! replayed through the `summary` sink.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::{DiffError, SUPPORTED_SCHEMA_VERSION};

#[derive(Debug, Deserialize)]
pub(super) struct TimeIn {
    pub(super) total_ns: u64,
    pub(super) mean_ns: u64,
    pub(super) p50_ns: u64,
    pub(super) p99_ns: u64,
}

#[derive(Debug, Deserialize)]
pub(super) struct ApiIn {
    pub(super) name: String,
    pub(super) calls: u64,
    pub(super) time: TimeIn,
}

#[derive(Debug, Deserialize)]
pub(super) struct KernelIn {
    pub(super) name: String,
    #[serde(default)]
    pub(super) launch_site: Option<Vec<String>>,
    pub(super) launches: u64,
    pub(super) time: TimeIn,
}

/// One hot function of a CPU profile.
#[derive(Debug, Deserialize)]
pub(super) struct HotIn {
    pub(super) function: String,
    pub(super) self_ns: u64,
    pub(super) total_ns: u64,
    #[serde(default)]
    pub(super) self_samples: u64,
}

/// The on-CPU or off-CPU profile of a summary.
#[derive(Debug, Default, Deserialize)]
pub(super) struct ProfileIn {
    #[serde(default)]
    pub(super) samples: u64,
    #[serde(default)]
    pub(super) weight_ns: u64,
    #[serde(default)]
    pub(super) hot_functions: Vec<HotIn>,
}

#[derive(Debug, Default, Deserialize)]
pub(super) struct CpuIn {
    #[serde(default)]
    pub(super) on_cpu: ProfileIn,
    #[serde(default)]
    pub(super) off_cpu: ProfileIn,
}

#[derive(Debug, Deserialize)]
pub(super) struct SummaryIn {
    #[serde(default)]
    pub(super) api: Vec<ApiIn>,
    #[serde(default)]
    pub(super) kernels: Vec<KernelIn>,
    #[serde(default)]
    pub(super) cpu: Option<CpuIn>,
    /// Which of [`SECTIONS`] the file has (an empty `api` list is there; a missing one is not).
    #[serde(skip)]
    sections: Vec<&'static str>,
}

/// The sections of a summary that `diff` compares; the summary sink always writes all three.
const SECTIONS: [&str; 3] = ["api", "kernels", "cpu"];

/// Refuses two inputs of which only one has a section: every row of it would show as added or
/// removed, which no threshold judges, so a run that lost its CPU profile would pass.
pub(super) fn check_sections(
    (base_path, base): (&Path, &SummaryIn),
    (cur_path, cur): (&Path, &SummaryIn),
) -> Result<(), DiffError> {
    for section in SECTIONS {
        let (b, c) = (base.sections.contains(&section), cur.sections.contains(&section));
        if b != c {
            let (has, lacks) = if b { (base_path, cur_path) } else { (cur_path, base_path) };
            return Err(DiffError::MissingSection {
                section,
                has: has.to_owned(),
                lacks: lacks.to_owned(),
                lacking: if b { "current run" } else { "baseline" },
            });
        }
    }
    Ok(())
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
pub(super) fn load(path: &Path, which: &str) -> Result<(PathBuf, SummaryIn), DiffError> {
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
    let sections = SECTIONS.into_iter().filter(|s| value.get(s).is_some()).collect();
    let summary: SummaryIn = serde_json::from_value(value).map_err(|e| not_summary(e.to_string()))?;
    Ok(SummaryIn { sections, ..summary })
}
