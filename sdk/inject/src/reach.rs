//! Whether the target can load the library at all, checked before anything touches it: it must
//! see the same file at the same path (a process in a container has a mount namespace of its
//! own, where the path may not exist or name another file), and its user must be able to read
//! it and search every folder above it (a library built under `/root` cannot be loaded by a job
//! running as another user). Without these checks the target's `dlopen` would fail after the
//! injection stopped one of its threads, with a message that does not say why.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Component, Path, PathBuf};

use crate::error::InjectError;

/// The user the target runs as: effective uid, effective gid and supplementary groups.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct User {
    pub uid: u32,
    pub gids: Vec<u32>,
}

impl User {
    /// The target's user, from `/proc/PID/status`; `None` when it cannot be read.
    pub fn of(pid: u32) -> Option<Self> {
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
        let field = |key: &str| {
            status.lines().find_map(|l| l.strip_prefix(key)?.strip_prefix(':').map(str::to_owned))
        };
        let ids = |v: String| v.split_whitespace().filter_map(|x| x.parse().ok()).collect::<Vec<u32>>();
        let uid = *ids(field("Uid")?).get(1)?;
        let mut gids = vec![*ids(field("Gid")?).get(1)?];
        gids.extend(ids(field("Groups").unwrap_or_default()));
        Some(Self { uid, gids })
    }

    /// Whether this user may do `bit` (4 read, 1 search/execute) on a file with `meta`.
    fn may(&self, meta: &std::fs::Metadata, bit: u32) -> bool {
        if self.uid == 0 {
            return true;
        }
        let mode = meta.permissions().mode();
        let shift = if meta.uid() == self.uid {
            6
        } else if self.gids.contains(&meta.gid()) {
            3
        } else {
            0
        };
        mode >> shift & bit != 0
    }
}

/// Checks that a process whose root folder is `root` (`/proc/PID/root`) sees `library` (a
/// canonical path here) as the same file, and that `user` may read it; the refusal says why and
/// what to do.
pub(crate) fn check(pid: u32, root: &Path, library: &Path, user: Option<&User>) -> Result<(), InjectError> {
    let refuse = |why: String| InjectError::Unreachable { pid, path: library.to_path_buf(), why };
    let here = std::fs::metadata(library)
        .map_err(|e| InjectError::Library { path: library.to_path_buf(), why: e.to_string() })?;
    let inside = in_root(root, library);
    match std::fs::metadata(&inside) {
        Ok(there) if (there.dev(), there.ino()) == (here.dev(), here.ino()) => {}
        Ok(_) => {
            return Err(refuse(
                "it sees another file at that path (it runs in a mount namespace of its own, a container): put this \
                 xpuprof's agent at that path inside it, point xpuprof at the copy the process sees, or run xpuprof \
                 inside the container"
                    .into(),
            ))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(refuse(
                "no such file in its view of the filesystem (it runs in a mount namespace of its own, a container): \
                 make the agent available inside it at the same path (a bind mount or a copy), or run xpuprof \
                 inside the container"
                    .into(),
            ))
        }
        // Its root cannot be read from here (no permission yet): the ptrace checks say why.
        Err(_) => return Ok(()),
    }
    let Some(user) = user else { return Ok(()) };
    let mut dir = PathBuf::from("/");
    for c in library.parent().unwrap_or(Path::new("/")).components() {
        if let Component::Normal(name) = c {
            dir.push(name);
        }
        if let Ok(meta) = std::fs::metadata(in_root(root, &dir)) {
            if !user.may(&meta, 1) {
                return Err(refuse(format!(
                    "its user (uid {}) may not enter the folder {}: install xpuprof where every user can read it \
                     (e.g. under /usr/local or /opt), or allow it (chmod o+x {})",
                    user.uid,
                    dir.display(),
                    dir.display()
                )));
            }
        }
    }
    if !user.may(&here, 4) {
        return Err(refuse(format!(
            "its user (uid {}) may not read it: install xpuprof where every user can read it (e.g. under /usr/local \
             or /opt), or allow it (chmod o+r {})",
            user.uid,
            library.display()
        )));
    }
    Ok(())
}

/// `path` (absolute) under `root`.
fn in_root(root: &Path, path: &Path) -> PathBuf {
    root.join(path.strip_prefix("/").unwrap_or(path))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lib_in(dir: &Path) -> PathBuf {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        let lib = dir.join("lib").join("libagent.so");
        std::fs::create_dir_all(lib.parent().unwrap()).unwrap();
        std::fs::write(&lib, b"\x7fELF").unwrap();
        lib.canonicalize().unwrap()
    }

    #[test]
    fn a_process_that_does_not_see_the_library_is_refused_with_the_fix() {
        let dir = tempfile::tempdir().unwrap();
        let lib = lib_in(dir.path());
        assert!(check(1, Path::new("/"), &lib, None).is_ok(), "the same file seen from the same root");
        // A root of its own (a container's) without the file, then with another file there.
        let other = tempfile::tempdir().unwrap();
        let e = check(1, other.path(), &lib, None).unwrap_err().to_string();
        assert!(e.contains("mount namespace") && e.contains("inside the container"), "{e}");
        let copy = in_root(other.path(), &lib);
        std::fs::create_dir_all(copy.parent().unwrap()).unwrap();
        std::fs::write(&copy, b"\x7fELF").unwrap();
        let e = check(1, other.path(), &lib, None).unwrap_err().to_string();
        assert!(e.contains("another file at that path"), "{e}");
    }

    #[test]
    fn a_user_who_cannot_read_the_library_is_refused_with_the_fix() {
        let dir = tempfile::tempdir().unwrap();
        let lib = lib_in(dir.path());
        let owner = std::fs::metadata(&lib).unwrap().uid();
        let stranger = User { uid: owner + 12345, gids: vec![owner + 12345] };
        std::fs::set_permissions(lib.parent().unwrap(), std::fs::Permissions::from_mode(0o755)).unwrap();
        std::fs::set_permissions(&lib, std::fs::Permissions::from_mode(0o600)).unwrap();
        let e = check(1, Path::new("/"), &lib, Some(&stranger)).unwrap_err().to_string();
        assert!(e.contains("may not read it") && e.contains("chmod o+r"), "{e}");
        std::fs::set_permissions(&lib, std::fs::Permissions::from_mode(0o644)).unwrap();
        std::fs::set_permissions(lib.parent().unwrap(), std::fs::Permissions::from_mode(0o700)).unwrap();
        let e = check(1, Path::new("/"), &lib, Some(&stranger)).unwrap_err().to_string();
        assert!(e.contains("may not enter the folder") && e.contains("chmod o+x"), "{e}");
        std::fs::set_permissions(lib.parent().unwrap(), std::fs::Permissions::from_mode(0o755)).unwrap();
        assert!(check(1, Path::new("/"), &lib, Some(&stranger)).is_ok());
        let owner_user = User { uid: owner, gids: vec![] };
        std::fs::set_permissions(&lib, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert!(check(1, Path::new("/"), &lib, Some(&owner_user)).is_ok(), "its owner reads it");
    }
}
