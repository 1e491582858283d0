//! The output directory: checked and proven writable before the target starts, and cleared of
//! the files an earlier run wrote there, so that old and new outputs never mix.
//!
//! Every run lists the files it wrote in a manifest, `.xpuprof-files`, written as soon as the
//! sinks have created their files (before the target starts, so it survives `kill -9`) and
//! rewritten at the end. The next run into the same directory removes those files first; any
//! other file already there that this run does not rewrite is named in a warning.

use std::collections::BTreeMap;
use std::fs;
use std::io::Write;
use std::os::unix::fs::MetadataExt;
use std::path::{Component, Path, PathBuf};

use xpuprof_sdk::output::create_file;
use xpuprof_sdk::trust;

/// Name of the manifest of the files xpuprof wrote, inside the output directory.
pub const MANIFEST: &str = ".xpuprof-files";

/// The output directory cannot be used; the session does not start (exit code 125).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct OutputDirError(pub String);

/// An output directory being written by one session.
#[derive(Debug)]
pub struct OutputDir {
    dir: PathBuf,
    /// Entries present before the sinks ran (relative path → device and inode).
    before: BTreeMap<PathBuf, (u64, u64)>,
    /// Files of an earlier run that were removed.
    pub removed: Vec<PathBuf>,
}

/// Creates and checks `dir`, removes what an earlier run listed in its manifest, and proves the
/// directory writable by writing this run's (empty) manifest.
pub fn prepare(dir: &Path) -> Result<OutputDir, OutputDirError> {
    let fail = |what: &str, e: &dyn std::fmt::Display| {
        OutputDirError(format!("failed to {what} output directory {}: {e}", dir.display()))
    };
    let is_link = fs::symlink_metadata(dir).is_ok_and(|m| m.file_type().is_symlink());
    if is_link && trust::running_as_root() {
        return Err(OutputDirError(format!(
            "refused while running as root: the output directory {} is a symbolic link, which its owner can \
             point anywhere; give the real directory with -o",
            dir.display()
        )));
    }
    fs::create_dir_all(dir).map_err(|e| fail("create", &e))?;
    let meta = fs::metadata(dir).map_err(|e| fail("read", &e))?;
    if !meta.is_dir() {
        return Err(OutputDirError(format!("output directory {} is not a directory", dir.display())));
    }
    let what = format!("the output directory {}", dir.display());
    trust::check_trusted_file(dir, &what).map_err(|e| {
        OutputDirError(format!("{e} (other users could replace the files written there; choose another -o)"))
    })?;
    let mut out = OutputDir { dir: dir.to_owned(), before: BTreeMap::new(), removed: Vec::new() };
    out.remove_earlier_run();
    out.write_manifest(&[]).map_err(|e| OutputDirError(format!("{e}; the target was not started")))?;
    out.before = entries(dir);
    Ok(out)
}

impl OutputDir {
    /// The directory.
    pub fn path(&self) -> &Path {
        &self.dir
    }

    fn remove_earlier_run(&mut self) {
        let Ok(text) = fs::read_to_string(self.dir.join(MANIFEST)) else { return };
        for line in text.lines() {
            let rel = Path::new(line);
            if line.is_empty() || !rel.components().all(|c| matches!(c, Component::Normal(_))) {
                continue;
            }
            let path = self.dir.join(rel);
            let is_file = fs::symlink_metadata(&path).is_ok_and(|m| !m.is_dir());
            if is_file && fs::remove_file(&path).is_ok() {
                self.removed.push(rel.to_owned());
                if let Some(parent) = rel.parent().filter(|p| !p.as_os_str().is_empty()) {
                    let _ = fs::remove_dir(self.dir.join(parent)); // only when now empty
                }
            }
        }
    }

    /// Files created or replaced since [`prepare`], plus `extra` (paths the sinks reported).
    fn written(&self, extra: &[String]) -> Vec<PathBuf> {
        let mut files: Vec<PathBuf> = entries(&self.dir)
            .into_iter()
            .filter(|(p, id)| self.before.get(p) != Some(id))
            .map(|(p, _)| p)
            .collect();
        for f in extra {
            if let Ok(rel) = Path::new(f).strip_prefix(&self.dir) {
                if !files.iter().any(|p| p == rel) {
                    files.push(rel.to_owned());
                }
            }
        }
        files.sort();
        files
    }

    /// Records the files the sinks created, before the target starts.
    pub fn sinks_created(&self) -> Result<(), OutputDirError> {
        self.write_manifest(&self.written(&[])).map_err(|e| OutputDirError(e.to_string()))
    }

    /// Records every file of this run at the end; returns the files in the directory that this
    /// run did not write (left from earlier runs, or not xpuprof's).
    pub fn finish(&self, files: &[String]) -> Vec<PathBuf> {
        let written = self.written(files);
        if let Err(e) = self.write_manifest(&written) {
            tracing::warn!("{e}: the next run into this directory will not know which files are xpuprof's");
        }
        let now = entries(&self.dir);
        self.before
            .iter()
            .filter(|(p, id)| now.get(*p) == Some(*id) && !written.contains(p))
            .map(|(p, _)| p.clone())
            .collect()
    }

    fn write_manifest(&self, files: &[PathBuf]) -> Result<(), xpuprof_sdk::output::OutputError> {
        let (mut f, path) = create_file(&self.dir, MANIFEST)?;
        let mut body = String::new();
        for p in files {
            body.push_str(&p.to_string_lossy());
            body.push('\n');
        }
        f.write_all(body.as_bytes()).map_err(|source| xpuprof_sdk::output::OutputError::new(path, source))
    }
}

/// Regular files and links in `dir` and its real subdirectories (one level), by relative path,
/// without the manifest.
fn entries(dir: &Path) -> BTreeMap<PathBuf, (u64, u64)> {
    let mut out = BTreeMap::new();
    let walk = |sub: &Path, out: &mut BTreeMap<PathBuf, (u64, u64)>, deeper: &mut Vec<PathBuf>| {
        let Ok(rd) = fs::read_dir(dir.join(sub)) else { return };
        for e in rd.flatten() {
            let rel = sub.join(e.file_name());
            let Ok(m) = e.metadata() else { continue };
            if m.is_dir() {
                deeper.push(rel);
            } else if rel != Path::new(MANIFEST) {
                out.insert(rel, (m.dev(), m.ino()));
            }
        }
    };
    let mut subdirs = Vec::new();
    walk(Path::new(""), &mut out, &mut subdirs);
    for sub in subdirs {
        walk(&sub, &mut out, &mut Vec::new());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, rel: &str, body: &str) {
        let (mut f, _) = create_file(dir, rel).unwrap();
        f.write_all(body.as_bytes()).unwrap();
    }

    #[test]
    fn a_second_run_removes_what_the_first_wrote_and_names_foreign_files() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("out");
        let first = prepare(&dir).unwrap();
        write(&dir, "trace.json", "{}");
        write(&dir, "archive/trace.xpa", "x");
        first.sinks_created().unwrap();
        assert!(first.finish(&[]).is_empty());
        let manifest = fs::read_to_string(dir.join(MANIFEST)).unwrap();
        assert_eq!(manifest, "archive/trace.xpa\ntrace.json\n");
        fs::write(dir.join("notes.txt"), "mine").unwrap();

        let second = prepare(&dir).unwrap();
        assert_eq!(second.removed, [PathBuf::from("archive/trace.xpa"), PathBuf::from("trace.json")]);
        assert!(!dir.join("trace.json").exists() && !dir.join("archive").exists());
        write(&dir, "profile.folded", "a 1");
        second.sinks_created().unwrap();
        assert_eq!(second.finish(&[]), [PathBuf::from("notes.txt")]);
        assert_eq!(fs::read_to_string(dir.join("notes.txt")).unwrap(), "mine");
        assert_eq!(fs::read_to_string(dir.join(MANIFEST)).unwrap(), "profile.folded\n");
    }

    #[test]
    fn a_manifest_cannot_name_files_outside_the_directory() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("out");
        fs::create_dir(&dir).unwrap();
        fs::write(tmp.path().join("outside"), "keep").unwrap();
        fs::write(dir.join(MANIFEST), "../outside\n/etc/hostname\n").unwrap();
        let o = prepare(&dir).unwrap();
        assert!(o.removed.is_empty());
        assert!(tmp.path().join("outside").exists());
    }

    #[test]
    fn a_file_in_place_of_the_directory_is_an_error() {
        let tmp = tempfile::tempdir().unwrap();
        let f = tmp.path().join("file");
        fs::write(&f, "x").unwrap();
        let e = prepare(&f).unwrap_err();
        assert!(e.0.contains("failed to create output directory"), "{e}");
    }
}
