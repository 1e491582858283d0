//! Whether a file may be loaded or read while xpuprof runs as root, checked the way sudo checks
//! its own files: the file and every directory on its path must be owned by root or by the
//! invoking user (`SUDO_UID`), and none may be writable by others, or by its group unless that
//! is root's group (a directory may be when it has the sticky bit, like `/tmp`: others can add
//! entries there but not replace ours).
//! Otherwise another user could put their code into a root process.
//!
//! One implementation for everything xpuprof uses as root: the host checks plugin files, config
//! files and the output directory with it, and a source plugin checks the in-target agent
//! library it hands to the target (`CUDA_INJECTION64_PATH`) with the same function. Without root
//! there is nothing to protect (a user can only load what they could run anyway).

use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

const WRITABLE_BY_OTHERS: u32 = 0o022;
const STICKY: u32 = 0o1000;

/// The user who invoked xpuprof through sudo (`SUDO_UID`), if any.
pub fn invoking_uid() -> Option<u32> {
    std::env::var("SUDO_UID").ok().and_then(|s| s.parse().ok())
}

/// True when this process runs with effective uid 0.
pub fn running_as_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// When running as root, refuses `path` unless it and every directory on its path (as named
/// and after resolving symbolic links) are trusted. `what` names the file in the message
/// ("the plugin file", "the config file", ...). Without root it always passes.
pub fn check_trusted_file(path: &Path, what: &str) -> Result<(), String> {
    if !running_as_root() {
        return Ok(());
    }
    check_trusted_file_for(path, what, invoking_uid())
}

/// [`check_trusted_file`] for a given invoking user, whatever the effective user.
pub fn check_trusted_file_for(path: &Path, what: &str, invoking: Option<u32>) -> Result<(), String> {
    let meta = fs::metadata(path).map_err(|e| format!("cannot read the metadata of {what}: {e}"))?;
    check_entry(path, &meta, what, invoking, false)?;
    let real = fs::canonicalize(path).map_err(|e| format!("cannot resolve the path of {what}: {e}"))?;
    let named_parent = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let named_parent =
        fs::canonicalize(named_parent).map_err(|e| format!("cannot resolve the directory of {what}: {e}"))?;
    // The directory the path names (a link there can be swapped) and the one the file is in.
    for start in [named_parent.as_path(), real.parent().unwrap_or(Path::new("/"))] {
        for dir in start.ancestors() {
            let m = fs::metadata(dir)
                .map_err(|e| format!("cannot read the metadata of {}: {e}", dir.display()))?;
            check_entry(dir, &m, what, invoking, true)?;
        }
    }
    Ok(())
}

fn check_entry(
    p: &Path,
    meta: &fs::Metadata,
    what: &str,
    invoking: Option<u32>,
    is_dir: bool,
) -> Result<(), String> {
    let owner = meta.uid();
    let entry = if is_dir { format!("its directory {}", p.display()) } else { what.to_owned() };
    if owner != 0 && Some(owner) != invoking {
        return Err(format!(
            "refused while running as root: {entry} is owned by uid {owner}, not by root or the invoking user, so \
             that user could replace {what}; fix with `chown root {}`",
            p.display()
        ));
    }
    let mode = meta.mode();
    // Like sudo: group write is fine when the group is root's.
    let writable = mode & WRITABLE_BY_OTHERS != 0 && (mode & 0o002 != 0 || meta.gid() != 0);
    if writable && !(is_dir && mode & STICKY != 0) {
        return Err(format!(
            "refused while running as root: {entry} is writable by group or others (mode {:o}), so another user \
             could replace {what}; fix with `chmod go-w {}`",
            mode & 0o7777,
            p.display()
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn set_mode(p: &Path, mode: u32) {
        fs::set_permissions(p, fs::Permissions::from_mode(mode)).unwrap();
    }

    /// A file in a fresh directory below the system temp dir, both private to the owner.
    fn fixture() -> (tempfile::TempDir, std::path::PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        set_mode(dir.path(), 0o755);
        let f = dir.path().join("libxpuprof_plugin_x.so");
        fs::write(&f, b"x").unwrap();
        set_mode(&f, 0o644);
        (dir, f)
    }

    fn me() -> u32 {
        // SAFETY: geteuid has no preconditions.
        unsafe { libc::geteuid() }
    }

    #[test]
    fn a_private_file_in_private_directories_is_trusted() {
        let (_d, f) = fixture();
        // Whoever runs the test is the invoking user; /tmp is root-owned and sticky.
        check_trusted_file_for(&f, "the plugin file", Some(me())).unwrap();
    }

    #[test]
    fn a_world_writable_directory_without_sticky_bit_is_refused() {
        let (d, f) = fixture();
        set_mode(d.path(), 0o777);
        let e = check_trusted_file_for(&f, "the plugin file", Some(me())).unwrap_err();
        assert!(e.contains("its directory") && e.contains("mode 777") && e.contains("chmod go-w"), "{e}");
    }

    #[test]
    fn a_sticky_world_writable_directory_is_trusted() {
        let (d, f) = fixture();
        set_mode(d.path(), 0o1777);
        check_trusted_file_for(&f, "the plugin file", Some(me())).unwrap();
    }

    #[test]
    fn a_file_writable_by_others_is_refused() {
        let (_d, f) = fixture();
        set_mode(&f, 0o646);
        let e = check_trusted_file_for(&f, "the plugin file", Some(me())).unwrap_err();
        assert!(e.starts_with("refused while running as root: the plugin file is writable"), "{e}");
    }

    // A directory owned by another user needs root to set up: core/tests/host/abi.rs
    // `as_root_a_plugin_in_a_world_writable_directory_of_another_user_is_refused` (CI runs as root).

    #[test]
    fn a_link_into_an_untrusted_directory_is_refused() {
        let (d, f) = fixture();
        let (other, _) = fixture();
        set_mode(d.path(), 0o777);
        let link = other.path().join("libxpuprof_plugin_link.so");
        std::os::unix::fs::symlink(&f, &link).unwrap();
        let e = check_trusted_file_for(&link, "the plugin file", Some(me())).unwrap_err();
        assert!(e.contains(&d.path().display().to_string()), "{e}");
    }
}
