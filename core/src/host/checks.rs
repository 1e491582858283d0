//! What plugins say about the machine and their backends: their machine checks (run on demand,
//! for `xpuprof doctor` and the default sources) and the names of their correlation backends
//! (handed to the sinks in the `[session]` table). The host knows no backend itself.

use abi_stable::std_types::RVec;
use xpuprof_sdk::abi::{FfiBackendName, FfiMachineCheck};
use xpuprof_sdk::{BackendName, CheckStatus, PluginKind};

use super::bounded;
use super::loader::{LoadedPlugin, Registry};

/// Most checks read from one plugin; the rest are dropped.
const MAX_CHECKS: usize = 64;

/// Most backends read from one plugin's descriptor.
const MAX_BACKENDS: usize = 64;

/// How the host runs a plugin's machine checks.
#[derive(Debug, Clone, Copy)]
pub enum MachineChecks {
    /// The Rust SDK's `FfiDescriptorExt::machine_checks` (SDK 0.4 and later).
    Rust(extern "C" fn() -> RVec<FfiMachineCheck>),
}

/// One machine check, as a plugin reported it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PluginCheck {
    /// The capability it decides, by the name sources declare.
    pub capability: String,
    /// How it came out.
    pub status: CheckStatus,
    /// What was found or is missing.
    pub detail: String,
    /// The fix; empty when there is none.
    pub hint: String,
    /// The plugin that ran it.
    pub plugin: String,
}

impl LoadedPlugin {
    /// Runs the plugin's machine checks (none for a plugin that predates them).
    pub fn machine_checks(&self) -> Vec<PluginCheck> {
        let text = |s: &str| bounded::cap(s, bounded::MAX_MESSAGE_BYTES).into_owned();
        let Some(MachineChecks::Rust(f)) = self.meta.machine_checks else { return Vec::new() };
        f().iter()
            .take(MAX_CHECKS)
            .map(|c| PluginCheck {
                capability: text(&c.capability),
                status: CheckStatus::from_u8(c.status),
                detail: text(&c.detail),
                hint: text(&c.hint),
                plugin: self.meta.name.clone(),
            })
            .collect()
    }
}

impl Registry {
    /// Every plugin's machine checks, in load order; of two checks of one capability the first
    /// is kept.
    pub fn machine_checks(&self) -> Vec<PluginCheck> {
        let mut out: Vec<PluginCheck> = Vec::new();
        for c in self.plugins.iter().flat_map(LoadedPlugin::machine_checks) {
            if !out.iter().any(|k| k.capability == c.capability) {
                out.push(c);
            }
        }
        out
    }

    /// The correlation backends every source declares, the first declaration of an id kept.
    pub fn backend_names(&self) -> Vec<BackendName> {
        let mut out: Vec<BackendName> = Vec::new();
        for b in
            self.plugins.iter().filter(|p| p.meta.kind == PluginKind::Source).flat_map(|p| &p.meta.backends)
        {
            if !out.iter().any(|k| k.id == b.id) {
                out.push(b.clone());
            }
        }
        out
    }

    /// The `backends` entry of the `[session]` table: an array of `{ id, name }` tables, read
    /// by the SDK into `SessionInfo::backends`.
    pub fn session_backends(&self) -> toml::Value {
        let table = |b: &BackendName| {
            let mut t = toml::Table::new();
            t.insert("id".into(), toml::Value::Integer(i64::from(b.id)));
            t.insert("name".into(), toml::Value::String(b.name.clone()));
            toml::Value::Table(t)
        };
        toml::Value::Array(self.backend_names().iter().map(table).collect())
    }
}

/// The backends a descriptor declares, bounded, with names that are plain words.
pub(crate) fn backend_names(list: &[FfiBackendName]) -> Vec<BackendName> {
    let word = |s: &str| !s.is_empty() && s.len() <= 64 && s.bytes().all(|c| c.is_ascii_graphic());
    list.iter()
        .take(MAX_BACKENDS)
        .filter(|b| word(b.name.as_str()))
        .map(|b| BackendName::new(b.id, b.name.as_str()))
        .collect()
}
