//! Creating output files safely: every sink creates its files through [`create_file`].
//!
//! xpuprof often runs as root and writes into a directory the user named. A symbolic link
//! planted there under an output's name (`trace.json -> /etc/passwd`) must never make it
//! overwrite the link's target. So an output file is always a *new* file: whatever entry had its
//! name is unlinked first (unlinking a symbolic link removes the link, never its target), and the
//! file is created with `O_CREAT | O_EXCL | O_NOFOLLOW`, which fails rather than follow a link
//! that appeared in between. Subdirectories (`archive/`) are created the same way: an existing
//! entry that is not a real directory is refused.
//!
//! Paths are never resolved in one call: the output directory is opened one name at a time
//! (`openat` with `O_NOFOLLOW | O_DIRECTORY`), and every file is created, read or removed
//! relative to that handle ([`Dir`]), so a link in the middle of a name (`archive/`, or
//! `out2/` given with a trailing slash) is seen and never silently followed. As root, a link on
//! the way to the output directory is followed only when root or the invoking user (`SUDO_UID`)
//! owns it and its directory, which no other user may change (a sticky directory like `/tmp`
//! may be writable); the output directory itself is never a link. Without root, links on the
//! way to it are followed as usual; names inside it never follow links. The host also checks
//! the output directory's owner and mode, as root, before any sink runs.

mod dir;
mod sys;
mod walk;

use std::io;
use std::path::{Path, PathBuf};

pub use dir::Dir;

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
/// link inside `dir` (nor, as root, one of another user on the way to it). Creates `dir` when it
/// is missing. Returns the file, open for writing, and its path. See [`Dir::create_file`].
pub fn create_file(dir: &Path, relative: impl AsRef<Path>) -> Result<(std::fs::File, PathBuf), OutputError> {
    Dir::create(dir)?.create_file(relative)
}

#[cfg(test)]
mod tests {
    use std::fs;
    use std::io::Write;
    use std::os::unix::fs::{symlink, MetadataExt};

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

    /// A uid that owns nothing here: as it is the only trusted owner, every link is another user's.
    const STRANGER: u32 = 0xfffe_fffe;

    /// `dir/pub` (sticky, writable by all, like `/tmp`) holding `out2 -> dir/victim`.
    fn sticky_dir_with_a_link(dir: &Path) -> PathBuf {
        use std::os::unix::fs::PermissionsExt;
        let public = dir.join("pub");
        fs::create_dir(&public).unwrap();
        fs::set_permissions(&public, fs::Permissions::from_mode(0o1777)).unwrap();
        fs::create_dir(dir.join("victim")).unwrap();
        symlink(dir.join("victim"), public.join("out2")).unwrap();
        dir.join("victim")
    }

    #[test]
    fn as_root_a_link_of_another_user_is_refused_wherever_it_is_on_the_output_path() {
        let dir = tempfile_dir();
        let victim = sticky_dir_with_a_link(&dir);
        let stranger = walk::Links::OwnedBy([STRANGER, STRANGER]);
        for out in ["pub/out2", "pub/out2/", "pub/out2/.", "pub/out2/newsub", "pub/out2/a/b"] {
            let e = Dir::create_with(&dir.join(out), stranger).unwrap_err();
            assert!(
                e.to_string().contains("`out2`") && e.to_string().contains("symbolic link"),
                "{out}: {e}"
            );
        }
        assert!(fs::read_dir(&victim).unwrap().next().is_none(), "something was created through the link");
        fs::remove_dir_all(&dir).unwrap();
    }

    /// False (a visible skip) without root; in CI (`CI` set) a missing root is a failure.
    fn require_root(test: &str) -> bool {
        if crate::trust::running_as_root() {
            return true;
        }
        assert!(std::env::var_os("CI").is_none_or(|v| v.is_empty()), "{test} needs root (CI runs as root)");
        eprintln!("SKIPPED: {test}: needs root");
        false
    }

    #[test]
    fn as_root_create_file_never_writes_through_a_link_of_another_user() {
        if !require_root("as_root_create_file_never_writes_through_a_link_of_another_user") {
            return;
        }
        let dir = tempfile_dir();
        let victim = sticky_dir_with_a_link(&dir);
        std::os::unix::fs::lchown(dir.join("pub/out2"), Some(65534), Some(65534)).unwrap();
        for out in ["pub/out2/", "pub/out2/.", "pub/out2/newsub"] {
            let e = create_file(&dir.join(out), "trace.json").unwrap_err();
            assert!(
                e.to_string().contains("`out2`") && e.to_string().contains("symbolic link"),
                "{out}: {e}"
            );
        }
        assert!(fs::read_dir(&victim).unwrap().next().is_none(), "root wrote through the link");
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn as_root_a_link_of_a_trusted_user_is_followed_on_the_way_but_never_as_the_directory() {
        let dir = tempfile_dir();
        let victim = sticky_dir_with_a_link(&dir);
        let me = fs::symlink_metadata(dir.join("pub/out2")).unwrap().uid();
        let trusted = walk::Links::OwnedBy([me, me]);
        let out = Dir::create_with(&dir.join("pub/out2/newsub"), trusted).unwrap();
        out.create_file("x").unwrap();
        assert!(victim.join("newsub/x").is_file());
        let e = Dir::create_with(&dir.join("pub/out2/"), trusted).unwrap_err();
        assert!(e.to_string().contains("the output directory `out2` is a symbolic link"), "{e}");
        // Not sticky: anyone could swap the link.
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(dir.join("pub"), fs::Permissions::from_mode(0o777)).unwrap();
        let e = Dir::create_with(&dir.join("pub/out2/newsub"), trusted).unwrap_err();
        assert!(e.to_string().contains("other users can change"), "{e}");
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn without_root_links_on_the_way_are_followed_and_none_inside_the_directory() {
        let dir = tempfile_dir();
        let victim = sticky_dir_with_a_link(&dir);
        let out = Dir::create_with(&dir.join("pub/out2/"), walk::Links::Follow).unwrap();
        out.create_file("x").unwrap();
        assert!(victim.join("x").is_file());
        symlink(dir.join("pub"), victim.join("sub")).unwrap();
        let e = out.create_file("sub/y").unwrap_err();
        assert!(e.to_string().contains("`sub` is a symbolic link"), "{e}");
        assert!(!dir.join("pub/y").exists());
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn removal_never_follows_a_link_in_the_middle_of_a_name() {
        let dir = tempfile_dir();
        let elsewhere = dir.join("elsewhere");
        fs::create_dir(&elsewhere).unwrap();
        fs::write(elsewhere.join("f5"), "keep").unwrap();
        let out = Dir::create(&dir.join("out")).unwrap();
        symlink(&elsewhere, dir.join("out/sub")).unwrap();
        assert!(out.remove_file("sub/f5").is_err());
        assert_eq!(fs::read_to_string(elsewhere.join("f5")).unwrap(), "keep");
        assert!(out.file_id("sub/f5").is_none() && out.open_file("sub/f5").is_err());
        out.create_file("real/f6").unwrap();
        assert!(out.file_id("real/f6").is_some());
        assert!(out.remove_file("real/f6").unwrap());
        assert!(!dir.join("out/real").exists(), "the emptied subdirectory was left");
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_directory_handle_is_locked_once() {
        let dir = tempfile_dir();
        let a = Dir::create(&dir).unwrap();
        let b = Dir::open(&dir).unwrap();
        assert!(a.try_lock().unwrap());
        assert!(!b.try_lock().unwrap());
        drop(a);
        assert!(b.try_lock().unwrap());
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
