//! What plugins say about the machine and their backends: their machine checks (run on demand,
//! for `xpuprof doctor` and the default sources) and the names of their correlation backends
//! (handed to the sinks in the `[session]` table). The host knows no backend itself.

use std::ffi::{c_char, c_int, c_void, CStr};

use abi_stable::std_types::RVec;
use xpuprof_sdk::abi::FfiMachineCheck;
use xpuprof_sdk::{BackendName, CheckStatus, PluginKind};

use super::bounded;
use super::cabi::ffi;
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
    /// The C header's `xpuprof_plugin.machine_checks` (header 0.4 and later).
    C(ffi::MachineChecksFn),
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
        let mut checks = match self.meta.machine_checks {
            None => return Vec::new(),
            Some(MachineChecks::Rust(f)) => f()
                .iter()
                .take(MAX_CHECKS)
                .map(|c| check(&c.capability, c.status, &c.detail, &c.hint))
                .collect(),
            Some(MachineChecks::C(f)) => c_checks(f),
        };
        for c in &mut checks {
            c.plugin.clone_from(&self.meta.name);
        }
        checks
    }
}

/// One check as a plugin reported it, its texts bounded (the plugin's name is set by the caller).
fn check(capability: &str, status: u8, detail: &str, hint: &str) -> PluginCheck {
    let text = |s: &str| bounded::cap(s, bounded::MAX_MESSAGE_BYTES).into_owned();
    PluginCheck {
        capability: text(capability),
        status: CheckStatus::from_u8(status),
        detail: text(detail),
        hint: text(hint),
        plugin: String::new(),
    }
}

/// Runs a C plugin's `machine_checks`, collecting what it reports through `add`.
fn c_checks(f: ffi::MachineChecksFn) -> Vec<PluginCheck> {
    extern "C" fn add(
        ctx: *mut c_void,
        capability: *const c_char,
        status: c_int,
        detail: *const c_char,
        hint: *const c_char,
    ) {
        // SAFETY: `ctx` is the `Vec` `c_checks` lends for the length of the call, the only time
        // the header allows `add` to be called.
        let out = unsafe { &mut *ctx.cast::<Vec<PluginCheck>>() };
        let text = |p: *const c_char| {
            if p.is_null() {
                return Default::default();
            }
            // SAFETY: the header requires NUL-terminated strings (or NULL, handled above).
            unsafe { CStr::from_ptr(p) }.to_string_lossy()
        };
        if out.len() < MAX_CHECKS && !capability.is_null() {
            let status = u8::try_from(status).unwrap_or(u8::MAX);
            out.push(check(&text(capability), status, &text(detail), &text(hint)));
        }
    }
    let mut out: Vec<PluginCheck> = Vec::new();
    let checks = ffi::Checks {
        size: std::mem::size_of::<ffi::Checks>() as u32,
        ctx: (&mut out as *mut Vec<PluginCheck>).cast(),
        add,
    };
    // SAFETY: the descriptor's entry point, called with a valid `xpuprof_checks` that outlives
    // the call.
    unsafe { f(&checks) };
    out
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
pub(crate) fn backend_names<'a>(list: impl IntoIterator<Item = (u32, &'a str)>) -> Vec<BackendName> {
    let word = |s: &str| !s.is_empty() && s.len() <= 64 && s.bytes().all(|c| c.is_ascii_graphic());
    list.into_iter()
        .take(MAX_BACKENDS)
        .filter(|(_, name)| word(name))
        .map(|(id, name)| BackendName::new(id, name))
        .collect()
}
