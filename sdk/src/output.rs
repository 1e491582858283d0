//! Creating output files safely: every sink creates its files through [`create_file`].
//!
//! xpuprof often runs as root and writes into a directory the user named. A symbolic link
//! planted there under an output's name (`trace.json -> /etc/passwd`) must never make it
//! overwrite the link's target. So an output file is always a *new* file: whatever entry had its
//! name is unlinked first (unlinking a symbolic link removes the link, never its target), and the
//! file is created with `O_CREAT | O_EXCL | O_NOFOLLOW`, which fails rather than follow a link
//! that appeared in between. Subdirectories (`archive/`) are created the same way: an existing
//! entry that is not a real directory is refused. The host checks the output directory itself
//! (owner and mode, as root) before any sink runs.

use std::fs::{self, File, OpenOptions};
use std::io;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Component, Path, PathBuf};

/// Why an output file could not be created.
#[derive(Debug)]
#[non_exhaustive]
pub struct OutputError {
    /// The file or directory that could not be created.
    pub path: PathBuf,
    /// The cause.
    pub source: io::Error,
}

impl OutputError {
    /// An error creating or writing `path`.
    pub fn new(path: PathBuf, source: io::Error) -> Self {
        Self { path, source }
    }
}

impl std::fmt::Display for OutputError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "failed to create {}: {}", self.path.display(), self.source)
    }
}

impl std::error::Error for OutputError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.source)
    }
}

impl From<OutputError> for crate::PluginError {
    fn from(e: OutputError) -> Self {
        Self::new(e.to_string())
    }
}

fn refuse(path: &Path, why: &str) -> OutputError {
    OutputError { path: path.to_owned(), source: io::Error::new(io::ErrorKind::InvalidInput, why.to_owned()) }
}

/// Creates the output file `relative` (e.g. `"trace.json"`, `"archive/trace.xpa"`) under the
/// output directory `dir`, replacing whatever had that name, without ever following a symbolic
/// link. Returns the file, open for writing, and its path.
pub fn create_file(dir: &Path, relative: impl AsRef<Path>) -> Result<(File, PathBuf), OutputError> {
    let relative = relative.as_ref();
    let path = dir.join(relative);
    let names: Vec<&std::ffi::OsStr> = relative
        .components()
        .map(|c| match c {
            Component::Normal(n) => Ok(n),
            _ => Err(refuse(
                &path,
                "an output name must be a plain relative path (no `..`, no `/` at the start)",
            )),
        })
        .collect::<Result<_, _>>()?;
    let Some((file_name, parents)) = names.split_last() else {
        return Err(refuse(&path, "an output name must not be empty"));
    };
    // The directory itself was checked by the host; create it for standalone use (tests).
    fs::create_dir_all(dir).map_err(|source| OutputError { path: dir.to_owned(), source })?;
    let mut at = dir.to_path_buf();
    for name in parents {
        at.push(name);
        make_real_dir(&at)?;
    }
    at.push(file_name);
    let fail = |source: io::Error| OutputError { path: at.clone(), source };
    match fs::symlink_metadata(&at) {
        Ok(m) if m.is_dir() => return Err(refuse(&at, "a directory has the output file's name")),
        Ok(_) => fs::remove_file(&at).map_err(fail)?,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(fail(e)),
    }
    let file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .mode(0o644)
        .open(&at)
        .map_err(fail)?;
    Ok((file, at))
}

/// Creates directory `path` unless a real directory (not a link to one) is already there.
fn make_real_dir(path: &Path) -> Result<(), OutputError> {
    match fs::DirBuilder::new().mode(0o755).create(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => match fs::symlink_metadata(path) {
            Ok(m) if m.is_dir() => Ok(()),
            Ok(m) if m.file_type().is_symlink() => {
                Err(refuse(path, "it is a symbolic link; outputs are never written through links"))
            }
            Ok(_) => Err(refuse(path, "it exists and is not a directory")),
            Err(e) => Err(OutputError { path: path.to_owned(), source: e }),
        },
        Err(e) => Err(OutputError { path: path.to_owned(), source: e }),
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;
    use std::os::unix::fs::symlink;

    use super::*;

    #[test]
    fn a_planted_symlink_is_replaced_and_its_target_untouched() {
        let dir = tempfile_dir();
        let victim = dir.join("victim");
        fs::write(&victim, "precious").unwrap();
        symlink(&victim, dir.join("trace.json")).unwrap();
        let (mut f, path) = create_file(&dir, "trace.json").unwrap();
        f.write_all(b"{}").unwrap();
        assert_eq!(fs::read_to_string(&victim).unwrap(), "precious");
        assert_eq!(fs::read_to_string(&path).unwrap(), "{}");
        assert!(!fs::symlink_metadata(&path).unwrap().file_type().is_symlink());
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_symlinked_subdirectory_is_refused() {
        let dir = tempfile_dir();
        let elsewhere = dir.join("elsewhere");
        fs::create_dir(&elsewhere).unwrap();
        symlink(&elsewhere, dir.join("archive")).unwrap();
        let e = create_file(&dir, "archive/trace.xpa").unwrap_err();
        assert!(e.to_string().contains("symbolic link"), "{e}");
        assert!(fs::read_dir(&elsewhere).unwrap().next().is_none());
        let (_, p) = create_file(&dir, "sub/x.txt").unwrap();
        assert!(p.ends_with("sub/x.txt"));
        assert!(create_file(&dir, "../x").is_err() && create_file(&dir, "/etc/x").is_err());
        fs::remove_dir_all(&dir).unwrap();
    }

    fn tempfile_dir() -> PathBuf {
        use std::sync::atomic::{AtomicU32, Ordering};
        static N: AtomicU32 = AtomicU32::new(0);
        let d = std::env::temp_dir().join(format!(
            "xpuprof-sdk-output-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        fs::create_dir_all(&d).unwrap();
        d
    }
}
