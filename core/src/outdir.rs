//! The output directory: checked and proven writable before the target starts, held by one
//! session at a time, and cleared of the files an earlier run wrote there, so that old and new
//! outputs never mix.
//!
//! The directory is opened once, one name at a time without following links another user
//! could plant ([`xpuprof_sdk::output::Dir`]); the manifest is read and written, earlier files
//! removed and this run's files checked relative to that handle, never through a link inside it.
//!
//! Every run lists the files it wrote in a manifest, `.xpuprof-files`, written as soon as the
//! sinks have created their files (before the target starts, so it survives `kill -9`) and
//! rewritten at the end. The next run into the same directory removes those files first; any
//! other file already there that this run does not rewrite is named in a warning. A session
//! holds an exclusive `flock` on the directory for its whole life (and names its pid in
//! `.xpuprof-lock`): a second session into a directory in use is refused before it removes
//! anything.

use std::collections::BTreeMap;
use std::fs;
use std::io::{Read, Write};
use std::os::unix::fs::MetadataExt;
use std::path::{Component, Path, PathBuf};

use xpuprof_sdk::output::{Dir, OutputError};
use xpuprof_sdk::trust;

/// Name of the manifest of the files xpuprof wrote, inside the output directory.
pub const MANIFEST: &str = ".xpuprof-files";

/// Name of the file naming the pid of the session that holds the directory (the lock itself
/// is a `flock` on the directory).
pub const LOCK: &str = ".xpuprof-lock";

/// A manifest longer than this is not one xpuprof wrote; only its start is read.
const MANIFEST_LIMIT: u64 = 1 << 20;

/// The output directory cannot be used; the session does not start (exit code 125).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct OutputDirError(pub String);

/// An output directory being written by one session; dropping it releases the directory.
#[derive(Debug)]
pub struct OutputDir {
    dir: Dir,
    /// The directory's device and inode, to notice it being removed or replaced.
    id: (u64, u64),
    /// Entries present before the sinks ran (relative path → device and inode).
    before: BTreeMap<PathBuf, (u64, u64)>,
    /// Files of an earlier run that were removed.
    pub removed: Vec<PathBuf>,
}

/// What the end of a session found in the output directory.
#[derive(Debug, Default)]
pub struct Finished {
    /// Files the sinks reported that are in place.
    pub present: Vec<String>,
    /// One message per output that was lost (removed while the session ran, or the directory
    /// itself removed or replaced).
    pub lost: Vec<String>,
    /// Files in the directory that this run did not write (left from earlier runs, or not
    /// xpuprof's).
    pub foreign: Vec<PathBuf>,
}

/// Creates and checks `dir`, takes it for this session, removes what an earlier run listed in
/// its manifest, and proves the directory writable by writing this run's (empty) manifest.
pub fn prepare(dir: &Path) -> Result<OutputDir, OutputDirError> {
    let fail = |what: &str, e: &dyn std::fmt::Display| {
        OutputDirError(format!("failed to {what} output directory {}: {e}", dir.display()))
    };
    let handle = Dir::create(dir).map_err(|e| fail("create", &e.source))?;
    let what = format!("the output directory {}", dir.display());
    trust::check_trusted_file(dir, &what).map_err(|e| {
        OutputDirError(format!("{e} (other users could replace the files written there; choose another -o)"))
    })?;
    let id = handle.id().map_err(|e| fail("read", &e))?;
    if fs::metadata(dir).map(|m| (m.dev(), m.ino())).ok() != Some(id) {
        return Err(fail("check", &"it was replaced while it was checked; the target was not started"));
    }
    match handle.try_lock() {
        Ok(true) => {}
        Ok(false) => return Err(busy(dir, &handle)),
        // Some network file systems have no `flock` on directories: go on, unguarded.
        Err(e) => tracing::warn!(
            "failed to lock output directory {}: {}; a second session into it would not be refused",
            dir.display(),
            e.source
        ),
    }
    let mut out = OutputDir { dir: handle, id, before: BTreeMap::new(), removed: Vec::new() };
    out.write(LOCK, &format!("{}\n", std::process::id()))
        .map_err(|e| OutputDirError(format!("{e}; the target was not started")))?;
    out.remove_earlier_run();
    out.write_manifest(&[]).map_err(|e| OutputDirError(format!("{e}; the target was not started")))?;
    out.before = out.entries();
    Ok(out)
}

/// The refusal of a directory another live session holds, naming that session's pid.
fn busy(dir: &Path, handle: &Dir) -> OutputDirError {
    let mut text = String::new();
    if let Ok(f) = handle.open_file(LOCK) {
        let _ = f.take(32).read_to_string(&mut text);
    }
    let who = match text.trim().parse::<u32>() {
        Ok(pid) => format!("another xpuprof session (pid {pid})"),
        Err(_) => "another xpuprof session".to_owned(),
    };
    OutputDirError(format!(
        "failed to use output directory {}: {who} is writing there now, and starting would remove its files; \
         wait for it to finish or give another directory with -o",
        dir.display()
    ))
}

impl OutputDir {
    /// The directory, as named.
    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    fn remove_earlier_run(&mut self) {
        let mut text = String::new();
        let Ok(f) = self.dir.open_file(MANIFEST) else { return };
        if f.take(MANIFEST_LIMIT).read_to_string(&mut text).is_err() {
            return;
        }
        for line in text.lines() {
            let rel = Path::new(line);
            if line.is_empty() || !rel.components().all(|c| matches!(c, Component::Normal(_))) {
                continue;
            }
            match self.dir.remove_file(rel) {
                Ok(true) => self.removed.push(rel.to_owned()),
                Ok(false) => {}
                Err(e) => tracing::warn!(
                    "not removing {} (listed in {MANIFEST} by an earlier run): {}",
                    e.path.display(),
                    e.source
                ),
            }
        }
    }

    /// True while the path still names the directory this session opened.
    fn still_named(&self) -> bool {
        fs::metadata(self.path()).is_ok_and(|m| (m.dev(), m.ino()) == self.id)
    }

    /// `f`, a file a sink reported, relative to the directory when it is inside it.
    fn relative<'f>(&self, f: &'f str) -> Option<&'f Path> {
        Path::new(f).strip_prefix(self.path()).ok()
    }

    /// Files created or replaced since [`prepare`], plus those of `extra` (paths the sinks
    /// reported) that are in place.
    fn written(&self, extra: &[String]) -> Vec<PathBuf> {
        let mut files: Vec<PathBuf> = self
            .entries()
            .into_iter()
            .filter(|(p, id)| self.before.get(p) != Some(id))
            .map(|(p, _)| p)
            .collect();
        for rel in extra.iter().filter_map(|f| self.relative(f)) {
            if !files.iter().any(|p| p == rel) && self.dir.file_id(rel).is_some() {
                files.push(rel.to_owned());
            }
        }
        files.sort();
        files
    }

    /// Records the files the sinks created, before the target starts.
    pub fn sinks_created(&self) -> Result<(), OutputDirError> {
        self.write_manifest(&self.written(&[])).map_err(|e| OutputDirError(e.to_string()))
    }

    /// Records every file of this run at the end, and checks that the files the sinks reported
    /// (`files`) are still there: a removed file, or a removed or replaced directory, is lost.
    pub fn finish(&self, files: &[String]) -> Finished {
        if !self.still_named() {
            return Finished {
                lost: vec![format!(
                    "failed to write the outputs in {}: the directory was removed or replaced while xpuprof \
                     ran; lost: {}",
                    self.path().display(),
                    files.join(", ")
                )],
                ..Finished::default()
            };
        }
        let written = self.written(files);
        if let Err(e) = self.write_manifest(&written) {
            tracing::warn!("{e}: the next run into this directory will not know which files are xpuprof's");
        }
        let now = self.entries();
        let foreign = self
            .before
            .iter()
            .filter(|(p, id)| now.get(*p) == Some(*id) && !written.contains(p))
            .map(|(p, _)| p.clone())
            .collect();
        let (present, gone): (Vec<String>, Vec<String>) =
            files.iter().cloned().partition(|f| match self.relative(f) {
                Some(rel) => self.dir.file_id(rel).is_some(),
                None => fs::symlink_metadata(f).is_ok_and(|m| m.is_file()),
            });
        let lost = gone
            .iter()
            .map(|f| format!("failed to write {f}: the file was removed or replaced while xpuprof ran"))
            .collect();
        Finished { present, lost, foreign }
    }

    fn write_manifest(&self, files: &[PathBuf]) -> Result<(), OutputError> {
        let mut body = String::new();
        for p in files {
            body.push_str(&p.to_string_lossy());
            body.push('\n');
        }
        self.write(MANIFEST, &body)
    }

    fn write(&self, name: &str, body: &str) -> Result<(), OutputError> {
        let (mut f, path) = self.dir.create_file(name)?;
        f.write_all(body.as_bytes()).map_err(|source| OutputError::new(path, source))
    }

    /// Regular files and links in the directory and its real subdirectories (one level), by
    /// relative path, without the manifest and the lock.
    fn entries(&self) -> BTreeMap<PathBuf, (u64, u64)> {
        let dir = self.path();
        let mut out = BTreeMap::new();
        let walk = |sub: &Path, out: &mut BTreeMap<PathBuf, (u64, u64)>, deeper: &mut Vec<PathBuf>| {
            let Ok(rd) = fs::read_dir(dir.join(sub)) else { return };
            for e in rd.flatten() {
                let rel = sub.join(e.file_name());
                let Ok(m) = e.metadata() else { continue };
                if m.is_dir() {
                    deeper.push(rel);
                } else if rel != Path::new(MANIFEST) && rel != Path::new(LOCK) {
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
}

impl Drop for OutputDir {
    fn drop(&mut self) {
        // The lock goes with the handle, and the file naming this session with it.
        let _ = self.dir.remove_file(LOCK);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use xpuprof_sdk::output::create_file;

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
        assert!(first.finish(&[]).foreign.is_empty());
        let manifest = fs::read_to_string(dir.join(MANIFEST)).unwrap();
        assert_eq!(manifest, "archive/trace.xpa\ntrace.json\n");
        fs::write(dir.join("notes.txt"), "mine").unwrap();

        drop(first);
        let second = prepare(&dir).unwrap();
        assert_eq!(second.removed, [PathBuf::from("archive/trace.xpa"), PathBuf::from("trace.json")]);
        assert!(!dir.join("trace.json").exists() && !dir.join("archive").exists());
        write(&dir, "profile.folded", "a 1");
        second.sinks_created().unwrap();
        assert_eq!(second.finish(&[]).foreign, [PathBuf::from("notes.txt")]);
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
    fn a_manifest_cannot_delete_through_a_linked_subdirectory() {
        let tmp = tempfile::tempdir().unwrap();
        let (dir, elsewhere) = (tmp.path().join("out"), tmp.path().join("root-only"));
        fs::create_dir(&dir).unwrap();
        fs::create_dir(&elsewhere).unwrap();
        fs::write(elsewhere.join("f5"), "keep").unwrap();
        std::os::unix::fs::symlink(&elsewhere, dir.join("sub")).unwrap();
        fs::write(dir.join(MANIFEST), "sub/f5\nsub/../sub/f5\n").unwrap();
        let o = prepare(&dir).unwrap();
        assert!(o.removed.is_empty(), "{:?}", o.removed);
        assert_eq!(fs::read_to_string(elsewhere.join("f5")).unwrap(), "keep");
    }

    #[test]
    fn a_directory_in_use_by_a_live_session_is_refused_and_its_files_kept() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("out");
        let first = prepare(&dir).unwrap();
        write(&dir, "trace.json", "first");
        first.sinks_created().unwrap();
        let e = prepare(&dir).unwrap_err();
        let pid = format!("pid {}", std::process::id());
        assert!(e.0.contains("another xpuprof session") && e.0.contains(&pid) && e.0.contains("-o"), "{e}");
        assert_eq!(fs::read_to_string(dir.join("trace.json")).unwrap(), "first");
        assert_eq!(first.finish(&[]).lost, Vec::<String>::new());
        drop(first);
        assert!(!dir.join(LOCK).exists(), "the lock file was left");
        let second = prepare(&dir).unwrap();
        assert_eq!(second.removed, [PathBuf::from("trace.json")]);
    }

    #[test]
    fn outputs_removed_while_the_session_ran_are_reported_lost_not_written() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("out");
        let o = prepare(&dir).unwrap();
        write(&dir, "a.txt", "a");
        write(&dir, "b.txt", "b");
        o.sinks_created().unwrap();
        fs::remove_file(dir.join("b.txt")).unwrap();
        let files = ["a.txt", "b.txt"].map(|f| dir.join(f).display().to_string());
        let end = o.finish(&files);
        assert_eq!(end.present, [files[0].clone()]);
        assert!(
            end.lost.len() == 1 && end.lost[0].contains("b.txt") && end.lost[0].contains("removed"),
            "{:?}",
            end.lost
        );
        assert_eq!(fs::read_to_string(dir.join(MANIFEST)).unwrap(), "a.txt\n");

        fs::remove_dir_all(&dir).unwrap();
        fs::create_dir(&dir).unwrap();
        let end = o.finish(&files);
        assert!(end.present.is_empty());
        assert!(
            end.lost.len() == 1 && end.lost[0].contains("directory was removed or replaced"),
            "{:?}",
            end.lost
        );
        assert!(fs::read_dir(&dir).unwrap().next().is_none(), "the new directory was written into");
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
