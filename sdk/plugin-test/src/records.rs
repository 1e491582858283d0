//! Test helpers that hand back what a plugin produced, for the author's own assertions (as the
//! OpenTelemetry Collector's `consumertest` does): the records a source emitted, and the files a
//! sink wrote. Both run `xpuprof check-plugin --keep DIR` in a child and read DIR back, so the
//! plugin runs in xpuprof's real host, with every conformance check applied on the way.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

use crate::{check_with, CheckOptions, Report};

/// What a source emitted in one run, in emission order.
#[derive(Debug, Clone)]
pub struct SourceRun {
    /// The batches as emitted, concatenated, in the SDK's record encoding: decode them with
    /// `xpuprof_sdk::codec::decode_all` into `Record`s (definitions included, in order).
    pub encoded: Vec<u8>,
    /// The same records as the dump sink's JSON lines, one per record (for messages).
    pub lines: Vec<String>,
    /// The conformance report of the run.
    pub report: Report,
}

/// What a sink wrote when given the host's canonical session.
#[derive(Debug, Clone)]
pub struct SinkRun {
    /// The records the sink was given, as the dump sink's JSON lines.
    pub input: Vec<String>,
    /// Every file the sink wrote: its path relative to the output directory, and its contents,
    /// sorted by path.
    pub files: Vec<(PathBuf, Vec<u8>)>,
    /// The conformance report of the run.
    pub report: Report,
}

impl SinkRun {
    /// The contents of the file the sink wrote at `path` (relative to the output directory).
    pub fn file(&self, path: impl AsRef<Path>) -> Option<&[u8]> {
        self.files.iter().find(|(p, _)| p == path.as_ref()).map(|(_, c)| c.as_slice())
    }
}

/// Runs the source library at `path` (on `options.command`, default `sleep 0.2`) and returns
/// the records it emitted. (The example is not compiled here, where xpuprof-sdk is no
/// dependency; `examples/rust-source-fake/tests/conformance.rs` runs the same.)
///
/// ```ignore
/// // tests/records.rs of a source plugin (xpuprof-sdk is already its dependency)
/// use xpuprof_sdk::model::Record;
///
/// let lib = xpuprof_plugin_test::cdylib("xpuprof_plugin_mysource");
/// let run = xpuprof_plugin_test::run_source(&lib, &Default::default()).unwrap();
/// let records = xpuprof_sdk::codec::decode_all(&run.encoded).unwrap();
/// assert!(records.iter().any(|r| matches!(r, Record::Device(_))));
/// ```
///
/// # Errors
///
/// When the check failed (the message is the whole report) or kept no records.
pub fn run_source(path: impl AsRef<Path>, options: &CheckOptions) -> Result<SourceRun, String> {
    let (dir, report) = run_kept(path.as_ref(), options)?;
    let read = |name: &str| std::fs::read(dir.path.join(name)).map_err(|e| kept_missing(&dir.path, name, &e));
    let encoded = read("records.bin")?;
    let lines = text_lines(&read("records.jsonl")?);
    Ok(SourceRun { encoded, lines, report })
}

/// Runs the sink library at `path` on the host's canonical session (devices, streams, a kernel,
/// a launch with its stack, CPU samples, a loss) and returns the files it wrote.
///
/// ```no_run
/// let lib = xpuprof_plugin_test::cdylib("xpuprof_plugin_mysink");
/// let run = xpuprof_plugin_test::run_sink(&lib, &Default::default()).unwrap();
/// let out = run.file("out.json").expect("the sink writes out.json");
/// assert!(String::from_utf8_lossy(out).contains("\"kernels\""));
/// ```
///
/// # Errors
///
/// When the check failed (the message is the whole report) or kept no outputs.
pub fn run_sink(path: impl AsRef<Path>, options: &CheckOptions) -> Result<SinkRun, String> {
    let (dir, report) = run_kept(path.as_ref(), options)?;
    let input = std::fs::read(dir.path.join("input.jsonl"))
        .map_err(|e| kept_missing(&dir.path, "input.jsonl", &e))?;
    let outputs = dir.path.join("outputs");
    let mut files = Vec::new();
    collect(&outputs, &outputs, &mut files).map_err(|e| kept_missing(&dir.path, "outputs/", &e))?;
    files.sort();
    Ok(SinkRun { input: text_lines(&input), files, report })
}

/// Runs the sink library at `path` on `records` (the SDK's record encoding: encode your
/// `Record`s with `xpuprof_sdk::codec::encode`, definitions before their first use) and returns
/// the files it wrote. (The example is not compiled here, where xpuprof-sdk is no dependency;
/// `examples/rust-sink-speedscope/tests/conformance.rs` runs the same.)
///
/// ```ignore
/// use xpuprof_sdk::model::*;
///
/// let mut records = Vec::new();
/// xpuprof_sdk::codec::encode(&Record::Str(StrDef::new(StrId(1), "main")), &mut records);
/// let lib = xpuprof_plugin_test::cdylib("xpuprof_plugin_mysink");
/// let run = xpuprof_plugin_test::run_sink_on(&lib, &records, &Default::default()).unwrap();
/// assert_eq!(run.files.len(), 1);
/// ```
///
/// # Errors
///
/// When the records cannot be written for the check, when the check failed (the message is
/// the whole report), or when it kept no outputs.
pub fn run_sink_on(
    path: impl AsRef<Path>,
    records: &[u8],
    options: &CheckOptions,
) -> Result<SinkRun, String> {
    let dir = TempDir::new().map_err(|e| format!("failed to create a folder for the records: {e}"))?;
    let file = dir.path.join("input.bin");
    std::fs::write(&file, records).map_err(|e| format!("failed to write {}: {e}", file.display()))?;
    run_sink(path, &CheckOptions { input: Some(file), ..options.clone() })
}

/// Runs the check with `--keep` into a fresh folder, removed when the result is dropped.
fn run_kept(path: &Path, options: &CheckOptions) -> Result<(TempDir, Report), String> {
    let dir = TempDir::new().map_err(|e| format!("failed to create a folder for the kept records: {e}"))?;
    let options = CheckOptions { keep: Some(dir.path.clone()), ..options.clone() };
    let report = check_with(path, &options);
    if !report.passed() {
        return Err(format!("the plugin {} failed its check:\n{report}", path.display()));
    }
    Ok((dir, report))
}

fn kept_missing(dir: &Path, name: &str, e: &std::io::Error) -> String {
    format!(
        "failed to read {name} kept in {}: {e} (is the xpuprof that runs the check older than --keep?)",
        dir.display()
    )
}

fn text_lines(bytes: &[u8]) -> Vec<String> {
    String::from_utf8_lossy(bytes).lines().map(str::to_owned).collect()
}

fn collect(root: &Path, dir: &Path, out: &mut Vec<(PathBuf, Vec<u8>)>) -> std::io::Result<()> {
    for e in std::fs::read_dir(dir)? {
        let p = e?.path();
        if p.is_dir() {
            collect(root, &p, out)?;
        } else {
            let rel = p.strip_prefix(root).unwrap_or(&p).to_path_buf();
            out.push((rel, std::fs::read(&p)?));
        }
    }
    Ok(())
}

/// A folder under the system's temporary folder, removed on drop (the crate has no dependency,
/// so not the `tempfile` crate).
struct TempDir {
    path: PathBuf,
}

impl TempDir {
    fn new() -> std::io::Result<Self> {
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let path = std::env::temp_dir().join(format!("xpuprof-plugin-test-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path)?;
        Ok(Self { path })
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_check_is_an_error_with_its_report() {
        let missing = std::env::temp_dir().join("xpuprof-plugin-test-missing/libxpuprof_plugin_none.so");
        let options =
            CheckOptions { xpuprof: Some("/nonexistent/xpuprof".into()), ..CheckOptions::default() };
        let err = run_source(&missing, &options).unwrap_err();
        assert!(err.contains("failed its check") && err.contains("/nonexistent/xpuprof"), "{err}");
    }

    #[test]
    fn the_kept_folder_is_removed_after_use() {
        let dir = TempDir::new().unwrap();
        let path = dir.path.clone();
        assert!(path.is_dir());
        drop(dir);
        assert!(!path.exists());
    }
}
