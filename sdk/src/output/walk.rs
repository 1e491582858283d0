//! Walking a path one component at a time with `openat(O_NOFOLLOW | O_DIRECTORY)`, deciding at
//! each symbolic link whether it may be followed. Nothing here resolves a path in one call, so a
//! link that another user plants or swaps mid-path is seen, wherever it is (`out/`, `out/.`,
//! `link/newsub` included: a trailing slash makes `lstat` follow a link, `openat` per name does not).

use std::collections::VecDeque;
use std::ffi::{OsStr, OsString};
use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::{Component, Path};

use super::{refuse, sys, OutputError};

/// Links followed on one walk, at most (the kernel's own limit).
const MAX_LINKS: u32 = 40;

const DIR_FLAGS: libc::c_int = libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW;

/// What a walk does at a symbolic link.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Links {
    /// Follow it (without root: a user can write only where they could anyway).
    Follow,
    /// Never (names inside the output directory).
    Refuse,
    /// As root, the way sudo checks its files: follow a link only when one of these users owns
    /// it and its directory (which no other user can change, or only with the sticky bit). The
    /// output directory itself, the last name, is never a link.
    OwnedBy([u32; 2]),
}

impl Links {
    /// The rule for the output directory's own path: [`Links::OwnedBy`] root and the invoking
    /// user when running as root, else [`Links::Follow`].
    pub(crate) fn for_output_dir() -> Self {
        if crate::trust::running_as_root() {
            Self::OwnedBy([0, crate::trust::invoking_uid().unwrap_or(0)])
        } else {
            Self::Follow
        }
    }

    fn allow(
        self,
        dir: Option<BorrowedFd<'_>>,
        name: &OsStr,
        link: &libc::stat,
        last: bool,
    ) -> Result<(), String> {
        let name = Path::new(name).display();
        let uids = match self {
            Self::Follow => return Ok(()),
            Self::Refuse => {
                return Err(format!("`{name}` is a symbolic link; outputs are never written through links"))
            }
            Self::OwnedBy(uids) => uids,
        };
        let root = "refused while running as root:";
        if last {
            return Err(format!(
                "{root} the output directory `{name}` is a symbolic link, which its owner can point anywhere; \
                 give the real directory with -o"
            ));
        }
        if !uids.contains(&link.st_uid) {
            return Err(format!(
                "{root} `{name}` on the output path is a symbolic link owned by uid {}, who can point it \
                 anywhere; give a path without other users' links with -o",
                link.st_uid
            ));
        }
        let d = sys::fstat(dir).map_err(|e| format!("cannot read the directory of `{name}`: {e}"))?;
        let others_write = d.st_mode & 0o022 != 0 && (d.st_mode & 0o002 != 0 || d.st_gid != 0);
        if !uids.contains(&d.st_uid) || (others_write && d.st_mode & 0o1000 == 0) {
            return Err(format!(
                "{root} `{name}` on the output path is a symbolic link in a directory other users can change \
                 (owner uid {}, mode {:o}); give a path without such links with -o",
                d.st_uid,
                d.st_mode & 0o7777
            ));
        }
        Ok(())
    }
}

/// Opens the directory `path` (relative to `base`, the current directory when `None`; `shown`
/// names it in errors), creating missing directories when `create` is set, and following
/// links only as `links` allows.
pub(crate) fn walk(
    base: Option<BorrowedFd<'_>>,
    shown: &Path,
    path: &Path,
    create: bool,
    links: Links,
) -> Result<OwnedFd, OutputError> {
    let fail = |e: io::Error| OutputError::new(shown.to_owned(), e);
    let mut pending = VecDeque::new();
    let mut at: Option<OwnedFd> = None; // None: `base`
    if splice(&mut pending, path) {
        at = Some(sys::openat(None, OsStr::new("/"), DIR_FLAGS, 0).map_err(fail)?);
    }
    let (mut hops, mut created) = (0, 0);
    while let Some(name) = pending.pop_front() {
        let cur = at.as_ref().map(AsFd::as_fd).or(base);
        let err = match sys::openat(cur, &name, DIR_FLAGS, 0) {
            Ok(fd) => {
                at = Some(fd);
                continue;
            }
            Err(e) => e,
        };
        if err.kind() == io::ErrorKind::NotFound && create && created < 2 * MAX_LINKS {
            match sys::mkdirat(cur, &name, 0o755) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
                Err(e) => return Err(fail(e)),
            }
            created += 1;
            pending.push_front(name); // now opened like any other
            continue;
        }
        if !matches!(err.raw_os_error(), Some(libc::ELOOP | libc::ENOTDIR)) {
            return Err(fail(err));
        }
        let st = sys::lstatat(cur, &name).map_err(fail)?;
        if st.st_mode & libc::S_IFMT != libc::S_IFLNK {
            return Err(refuse(shown, &format!("`{}` is not a directory", Path::new(&name).display())));
        }
        links.allow(cur, &name, &st, pending.is_empty()).map_err(|why| refuse(shown, &why))?;
        hops += 1;
        if hops > MAX_LINKS {
            return Err(fail(io::Error::from_raw_os_error(libc::ELOOP)));
        }
        let target = sys::readlinkat(cur, &name).map_err(fail)?;
        if splice(&mut pending, Path::new(&target)) {
            at = Some(sys::openat(None, OsStr::new("/"), DIR_FLAGS, 0).map_err(fail)?);
        }
    }
    match at {
        Some(fd) => Ok(fd),
        None => sys::openat(base, OsStr::new("."), DIR_FLAGS, 0).map_err(fail),
    }
}

/// Puts the names of `path` in front of `pending`; true when `path` is absolute.
fn splice(pending: &mut VecDeque<OsString>, path: &Path) -> bool {
    let names: Vec<OsString> = path
        .components()
        .filter_map(|c| match c {
            Component::Normal(n) => Some(n.to_owned()),
            Component::ParentDir => Some("..".into()),
            Component::CurDir | Component::RootDir | Component::Prefix(_) => None,
        })
        .collect();
    for n in names.into_iter().rev() {
        pending.push_front(n);
    }
    path.is_absolute()
}

/// Splits an output name into its directory part and file name; refuses anything but a plain
/// relative path (no `..`, no `/` at the start, not empty). `path` names it in errors.
pub(crate) fn split_plain<'a>(relative: &'a Path, path: &Path) -> Result<(&'a Path, &'a OsStr), OutputError> {
    if !relative.components().all(|c| matches!(c, Component::Normal(_))) {
        return Err(refuse(
            path,
            "an output name must be a plain relative path (no `..`, no `/` at the start)",
        ));
    }
    match (relative.parent(), relative.file_name()) {
        (Some(parent), Some(name)) => Ok((parent, name)),
        _ => Err(refuse(path, "an output name must not be empty")),
    }
}
