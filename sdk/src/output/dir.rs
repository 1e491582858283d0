//! [`Dir`]: an output directory held open, and every file operation relative to that handle.

use std::ffi::OsStr;
use std::fs::File;
use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::path::{Path, PathBuf};

use super::walk::{split_plain, walk, Links};
use super::{refuse, sys, OutputError};

/// An output directory, opened without following a symbolic link another user could point
/// anywhere (as root; see the module docs). Files are created, read and removed relative to
/// this handle and never through a link inside it: once open, renaming or replacing the path
/// cannot make it write elsewhere.
#[derive(Debug)]
pub struct Dir {
    fd: OwnedFd,
    path: PathBuf,
}

impl Dir {
    /// Opens the existing directory `path`.
    pub fn open(path: &Path) -> Result<Self, OutputError> {
        Ok(Self { fd: walk(None, path, path, false, Links::for_output_dir())?, path: path.to_owned() })
    }

    /// Opens the directory `path`, creating it and its missing parents.
    pub fn create(path: &Path) -> Result<Self, OutputError> {
        Ok(Self { fd: walk(None, path, path, true, Links::for_output_dir())?, path: path.to_owned() })
    }

    #[cfg(test)]
    pub(crate) fn create_with(path: &Path, links: Links) -> Result<Self, OutputError> {
        Ok(Self { fd: walk(None, path, path, true, links)?, path: path.to_owned() })
    }

    /// The path the directory was opened by.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The directory's device and inode numbers.
    pub fn id(&self) -> io::Result<(u64, u64)> {
        sys::fstat(Some(self.fd.as_fd())).map(|st| (st.st_dev, st.st_ino))
    }

    /// Opens the directory holding `relative` (creating it when `create` is set) and returns it
    /// with the file name. No link on the way is followed.
    fn parent_of<'r>(&self, relative: &'r Path, create: bool) -> Result<(OwnedFd, &'r OsStr), OutputError> {
        let path = self.path.join(relative);
        let (parent, name) = split_plain(relative, &path)?;
        Ok((walk(Some(self.fd.as_fd()), &path, parent, create, Links::Refuse)?, name))
    }

    /// Creates the output file `relative` (e.g. `"trace.json"`, `"archive/trace.xpa"`),
    /// replacing whatever had that name (a link is removed, never followed); subdirectories are
    /// created and must be real directories. Returns the file, open for writing, and its path.
    pub fn create_file(&self, relative: impl AsRef<Path>) -> Result<(File, PathBuf), OutputError> {
        let relative = relative.as_ref();
        let path = self.path.join(relative);
        let (parent, name) = self.parent_of(relative, true)?;
        let fail = |source: io::Error| OutputError::new(path.clone(), source);
        match sys::lstatat(Some(parent.as_fd()), name) {
            Ok(st) if st.st_mode & libc::S_IFMT == libc::S_IFDIR => {
                return Err(refuse(&path, "a directory has the output file's name"))
            }
            Ok(_) => sys::unlinkat(parent.as_fd(), name, 0).map_err(fail)?,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(fail(e)),
        }
        let flags = libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW;
        let fd = sys::openat(Some(parent.as_fd()), name, flags, 0o644).map_err(fail)?;
        Ok((File::from(fd), path))
    }

    /// Opens the regular file `relative` for reading (no link followed, no FIFO or device).
    pub fn open_file(&self, relative: impl AsRef<Path>) -> Result<File, OutputError> {
        let relative = relative.as_ref();
        let path = self.path.join(relative);
        let (parent, name) = self.parent_of(relative, false)?;
        let flags = libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_NONBLOCK;
        let fd = sys::openat(Some(parent.as_fd()), name, flags, 0)
            .map_err(|e| OutputError::new(path.clone(), e))?;
        let st = sys::fstat(Some(fd.as_fd())).map_err(|e| OutputError::new(path.clone(), e))?;
        if st.st_mode & libc::S_IFMT != libc::S_IFREG {
            return Err(refuse(&path, "it is not a regular file"));
        }
        Ok(File::from(fd))
    }

    /// Device and inode of `relative` when it is a regular file reached without links.
    pub fn file_id(&self, relative: impl AsRef<Path>) -> Option<(u64, u64)> {
        let (parent, name) = self.parent_of(relative.as_ref(), false).ok()?;
        let st = sys::lstatat(Some(parent.as_fd()), name).ok()?;
        (st.st_mode & libc::S_IFMT == libc::S_IFREG).then_some((st.st_dev, st.st_ino))
    }

    /// Removes the file (or link) `relative`, then its directory when that is left empty.
    /// Returns false when there was nothing to remove or a directory has the name. A link on
    /// the way is never followed: it is an error.
    pub fn remove_file(&self, relative: impl AsRef<Path>) -> Result<bool, OutputError> {
        let relative = relative.as_ref();
        let path = self.path.join(relative);
        let (parent, name) = self.parent_of(relative, false)?;
        match sys::lstatat(Some(parent.as_fd()), name) {
            Ok(st) if st.st_mode & libc::S_IFMT == libc::S_IFDIR => return Ok(false),
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(false),
            Err(e) => return Err(OutputError::new(path, e)),
        }
        sys::unlinkat(parent.as_fd(), name, 0).map_err(|e| OutputError::new(path, e))?;
        let sub = relative.parent().filter(|p| !p.as_os_str().is_empty());
        if let Some((grand, last)) = sub.and_then(|s| self.parent_of(s, false).ok()) {
            let _ = sys::unlinkat(grand.as_fd(), last, libc::AT_REMOVEDIR); // only when empty
        }
        Ok(true)
    }

    /// Takes an exclusive `flock` on the directory for as long as this handle is open; false
    /// when another open handle (another session) holds it.
    pub fn try_lock(&self) -> Result<bool, OutputError> {
        sys::try_lock(self.fd.as_fd()).map_err(|e| OutputError::new(self.path.clone(), e))
    }
}
