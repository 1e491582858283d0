//! Under `sudo`, the target runs as the user who invoked sudo (`SUDO_UID`/`SUDO_GID`), not as
//! root: xpuprof needs root for kernel tracing, the profiled program does not. `--keep-root` keeps root.

use std::ffi::{CStr, CString};

use xpuprof_sdk::trust;

/// The identity the target takes just before `exec`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunAs {
    /// User id.
    pub uid: u32,
    /// Primary group id.
    pub gid: u32,
    /// Supplementary groups.
    pub groups: Vec<libc::gid_t>,
    /// User name and home directory, when the user database knows the uid.
    pub account: Option<(String, String)>,
}

impl RunAs {
    /// The invoking user when xpuprof runs as root under sudo, unless `keep_root`; `None` when
    /// the target keeps xpuprof's own identity.
    pub fn from_sudo(keep_root: bool) -> Result<Option<Self>, String> {
        if keep_root || !trust::running_as_root() {
            return Ok(None);
        }
        let Some(uid) = trust::invoking_uid() else { return Ok(None) };
        let account = account(uid);
        let gid = match std::env::var("SUDO_GID").ok().map(|g| g.parse::<u32>()) {
            Some(Ok(g)) => g,
            Some(Err(_)) => {
                return Err("SUDO_GID is not a number; run with --keep-root or fix the environment".into())
            }
            None => account.as_ref().map(|a| a.2).ok_or_else(|| {
                format!("SUDO_UID is {uid} but SUDO_GID is unset and the user database has no such user")
            })?,
        };
        let groups = match &account {
            Some((name, _, _)) => group_list(name, gid),
            None => vec![gid],
        };
        Ok(Some(Self { uid, gid, groups, account: account.map(|(n, h, _)| (n, h)) }))
    }

    /// Environment the target gets as this user: `HOME`, `USER` and `LOGNAME`.
    pub fn env(&self) -> Vec<(String, String)> {
        let Some((name, home)) = &self.account else { return Vec::new() };
        vec![("HOME".into(), home.clone()), ("USER".into(), name.clone()), ("LOGNAME".into(), name.clone())]
    }

    /// Drops to this identity; returns the errno of the call that failed.
    ///
    /// # Safety
    /// Only async-signal-safe system calls: may be called in a freshly forked child.
    pub unsafe fn apply(&self) -> Result<(), i32> {
        // SAFETY: setgroups reads `groups.len()` ids from a live vector; setgid/setuid take
        // plain integers. Order matters: groups and gid while still root, uid last.
        unsafe {
            if libc::setgroups(self.groups.len(), self.groups.as_ptr()) != 0
                || libc::setgid(self.gid) != 0
                || libc::setuid(self.uid) != 0
            {
                return Err(*libc::__errno_location());
            }
        }
        Ok(())
    }
}

/// Name, home directory and primary group of `uid` from the user database.
fn account(uid: u32) -> Option<(String, String, u32)> {
    let mut buf = vec![0u8; 16 * 1024];
    // SAFETY: a zeroed passwd is a valid out-parameter; getpwuid_r fills it with pointers into
    // `buf`, which outlives every read below.
    unsafe {
        let mut pw: libc::passwd = std::mem::zeroed();
        let mut result: *mut libc::passwd = std::ptr::null_mut();
        let rc = libc::getpwuid_r(uid, &mut pw, buf.as_mut_ptr().cast(), buf.len(), &mut result);
        if rc != 0 || result.is_null() {
            return None;
        }
        let name = CStr::from_ptr(pw.pw_name).to_string_lossy().into_owned();
        let home = CStr::from_ptr(pw.pw_dir).to_string_lossy().into_owned();
        Some((name, home, pw.pw_gid))
    }
}

/// The groups `name` belongs to, with `gid` first.
fn group_list(name: &str, gid: u32) -> Vec<libc::gid_t> {
    let Ok(cname) = CString::new(name) else { return vec![gid] };
    let mut groups: Vec<libc::gid_t> = vec![0; 256];
    let mut n = groups.len() as libc::c_int;
    // SAFETY: `groups` has room for `n` entries; getgrouplist writes at most that many and
    // stores the real count in `n`.
    let rc = unsafe { libc::getgrouplist(cname.as_ptr(), gid, groups.as_mut_ptr(), &mut n) };
    if rc < 0 {
        return vec![gid];
    }
    groups.truncate(n.max(0) as usize);
    groups
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keep_root_or_no_sudo_means_no_switch() {
        assert_eq!(RunAs::from_sudo(true), Ok(None));
    }

    #[test]
    fn the_user_database_gives_home_and_groups() {
        let (name, home, gid) = account(0).expect("root is in the user database");
        assert_eq!(name, "root");
        assert!(!home.is_empty());
        assert!(group_list(&name, gid).contains(&gid));
    }
}
