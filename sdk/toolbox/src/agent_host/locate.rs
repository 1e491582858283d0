//! Finding an agent library and injecting it: the plugin's own folder, the user's setting, the
//! trust check, `LD_PRELOAD`, and whether a vendor library can be loaded at all.

use std::path::{Path, PathBuf};

use xpuprof_sdk::TargetEnv;

use super::AgentHostError;

/// Where a source looks for its agent library, and what it tells the user when it is missing.
#[derive(Debug, Clone, Copy)]
pub struct AgentLocator {
    /// The library's file name (`libxpuprof_cupti_agent.so`).
    pub file: &'static str,
    /// The environment variable naming it (`XPUPROF_CUPTI_AGENT`).
    pub env_var: &'static str,
    /// The config key naming it, as users write it (`[source.cupti] agent`).
    pub config_key: &'static str,
    /// The cargo package that builds it (`xpuprof-cupti-agent`).
    pub package: &'static str,
    /// What it is, for messages (`CUPTI agent`).
    pub what: &'static str,
}

impl AgentLocator {
    /// Finds the agent: the path `configured` by the user, else the environment variable, else
    /// next to the plugin, else next to the running binary. A path the user named is used or
    /// refused, never skipped for another one. As root the file must pass
    /// [`xpuprof_sdk::trust::check_trusted_file`] (it runs inside the target).
    pub fn find(&self, configured: Option<&str>) -> Result<PathBuf, AgentHostError> {
        let named = match (configured, std::env::var_os(self.env_var)) {
            (Some(c), _) => Some((PathBuf::from(c), self.config_key)),
            (None, Some(p)) => Some((PathBuf::from(p), self.env_var)),
            (None, None) => None,
        };
        if let Some((path, origin)) = named {
            if !path.is_file() {
                return Err(AgentHostError::Agent(format!(
                    "failed to find the {} {} named by {origin}: no such file",
                    self.what,
                    path.display()
                )));
            }
            return trusted(&path).map_err(|e| AgentHostError::Agent(format!("{e} (named by {origin})")));
        }
        let candidates: Vec<PathBuf> =
            [own_dir(), std::env::current_exe().ok().and_then(|e| e.parent().map(Path::to_path_buf))]
                .into_iter()
                .flatten()
                .map(|d| d.join(self.file))
                .collect();
        if let Some(c) = candidates.iter().find(|c| c.is_file()) {
            return trusted(c).map_err(AgentHostError::Agent);
        }
        let tried: Vec<String> = candidates.iter().map(|c| c.display().to_string()).collect();
        Err(AgentHostError::Agent(format!(
            "failed to find the {} {} (looked at: {}); build it with `cargo build -p {}` or set {} = \"/path/to/{}\"",
            self.what,
            self.file,
            tried.join(", "),
            self.package,
            self.config_key,
            self.file
        )))
    }
}

/// The canonical path of an agent that passed the trust check.
fn trusted(path: &Path) -> Result<PathBuf, String> {
    xpuprof_sdk::trust::check_trusted_file(path, &format!("the agent library {}", path.display()))?;
    Ok(std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf()))
}

/// The folder holding the shared library this code is linked into (a plugin's: agents are
/// built next to it).
pub fn own_dir() -> Option<PathBuf> {
    let mut info = libc::Dl_info {
        dli_fname: std::ptr::null(),
        dli_fbase: std::ptr::null_mut(),
        dli_sname: std::ptr::null(),
        dli_saddr: std::ptr::null_mut(),
    };
    // SAFETY: dladdr only reads the address and fills `info`, a valid out-pointer.
    if unsafe { libc::dladdr(own_dir as *const libc::c_void, &mut info) } == 0 || info.dli_fname.is_null() {
        return None;
    }
    // SAFETY: dladdr returned a valid NUL-terminated path.
    let path = unsafe { std::ffi::CStr::from_ptr(info.dli_fname) }.to_string_lossy().into_owned();
    Path::new(&path).parent().map(Path::to_path_buf)
}

/// Preloads `agent` in the target, ahead of an `LD_PRELOAD` the user already set.
pub fn preload(env: &mut TargetEnv, agent: &Path) {
    let mut value = agent.display().to_string();
    if let Some(existing) = std::env::var("LD_PRELOAD").ok().filter(|e| !e.is_empty()) {
        value = format!("{value}:{existing}");
    }
    env.set("LD_PRELOAD", value);
}

/// True when the shared library `name` can be loaded here (a vendor driver or runtime).
pub fn loadable(name: &str) -> bool {
    let Ok(c) = std::ffi::CString::new(name) else { return false };
    // SAFETY: dlopen with a valid C string; the handle is closed right away.
    let h = unsafe { libc::dlopen(c.as_ptr(), libc::RTLD_LAZY | libc::RTLD_LOCAL) };
    if !h.is_null() {
        // SAFETY: `h` is a handle dlopen just returned.
        unsafe { libc::dlclose(h) };
    }
    !h.is_null()
}
