//! Loading plugin libraries through the SDK's ABI, with checks and clear failures.

use std::path::{Path, PathBuf};

use abi_stable::abi_stability::abi_checking::{check_layout_compatibility, AbiInstabilityErrors};
use abi_stable::library::{lib_header_from_path, LibHeader, LibraryError};
use abi_stable::StableAbi;
use xpuprof_sdk::abi::{
    abi_of_stamp, PluginModuleRef, ABI_STAMP, ABI_VERSION, KIND_SINK, KIND_SOURCE, ROOT_MODULE_SYMBOL,
};
use xpuprof_sdk::{BackendName, ConfigKey, ConfigSchema, ConfigType, PluginKind};

use super::cabi::{self, CModule};
use super::checks::{self, MachineChecks};
use super::discovery::{self, Found, SearchPath};
use super::{bounded, elf, trust};

/// Longest plugin name accepted.
const MAX_NAME_BYTES: usize = 64;

/// Largest config schema accepted (today's plugins declare a few KiB).
const MAX_SCHEMA_BYTES: usize = 1 << 20;

/// What a loaded plugin says about itself.
#[derive(Debug, Clone)]
pub struct PluginMeta {
    /// Name.
    pub name: String,
    /// Source or sink.
    pub kind: PluginKind,
    /// Plugin version.
    pub version: String,
    /// One-line description.
    pub description: String,
    /// Accepted configuration keys, with types, defaults and constraints.
    pub config: ConfigSchema,
    /// The plugin predates typed configs (SDK 0.1): it expects the host to fill in the declared
    /// defaults of the keys the user left out, as that SDK documented.
    pub host_fills_defaults: bool,
    /// Required capabilities (SDK names).
    pub capabilities: Vec<String>,
    /// The plugin ABI version it was built for.
    pub abi: u32,
    /// The `xpuprof-sdk` version it was built with; `None` for SDK 0.1, which did not say.
    pub sdk_version: Option<String>,
    /// The fingerprint of the plugin's `Record` layout (SDK 0.3 and later): when it is the
    /// host's, sinks are lent decoded records instead of encoded batches.
    pub record_layout: Option<u64>,
    /// Sources: run when the user names no source, if every capability passed its machine
    /// check (SDK 0.4 and later; `false` for older plugins).
    pub default_source: bool,
    /// Sources: the correlation backends the plugin issues ids for, with their names in
    /// reports (SDK 0.4 and later).
    pub backends: Vec<BackendName>,
    /// How to run the plugin's machine checks (SDK 0.4 and later).
    pub machine_checks: Option<MachineChecks>,
}

/// A plugin library that loaded and passed every check.
#[derive(Clone)]
pub struct LoadedPlugin {
    /// The file.
    pub path: PathBuf,
    /// Its metadata.
    pub meta: PluginMeta,
    /// Its entry points.
    pub module: PluginEntry,
}

/// How the host calls a plugin: through the Rust SDK's root module, or the C header's
/// descriptor (`sdk/include/xpuprof/plugin.h`).
#[derive(Clone, Copy)]
pub enum PluginEntry {
    /// Built with `xpuprof_sdk::export_plugin!`.
    Rust(PluginModuleRef),
    /// Built with `XPUPROF_EXPORT_PLUGIN` (C or C++).
    C(CModule),
}

impl std::fmt::Debug for PluginEntry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Rust(_) => "PluginEntry::Rust",
            Self::C(_) => "PluginEntry::C",
        })
    }
}

impl std::fmt::Debug for LoadedPlugin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoadedPlugin")
            .field("path", &self.path)
            .field("meta", &self.meta)
            .finish_non_exhaustive()
    }
}

/// A plugin file that could not be used, and why.
#[derive(Debug, Clone)]
pub struct LoadFailure {
    /// The file (or directory).
    pub path: PathBuf,
    /// Why it cannot be used, with the fix when known.
    pub reason: String,
}

/// Everything discovery found.
#[derive(Debug, Default)]
pub struct Registry {
    /// Usable plugins, first found wins for a given name.
    pub plugins: Vec<LoadedPlugin>,
    /// Plugins shadowed by an earlier one of the same name and kind.
    pub shadowed: Vec<LoadedPlugin>,
    /// Files and directories that could not be used.
    pub failures: Vec<LoadFailure>,
}

impl Registry {
    /// Scans the search path and loads every candidate. The first file of a name wins, also
    /// when it cannot be loaded: a plugin of the same name found later is shadowed, not used in
    /// its stead (a session that names the plugin stops with the first file's refusal).
    pub fn discover(path: &SearchPath) -> Self {
        let mut reg = Registry::default();
        for found in discovery::scan(path) {
            match found {
                Found::BadDir { dir, origin, reason } => reg.failures.push(LoadFailure {
                    path: dir,
                    reason: format!("plugin directory from {origin} cannot be read: {reason}"),
                }),
                Found::File(file) => match load(&file) {
                    Ok(p) => reg.add(p),
                    Err(reason) => reg.failures.push(LoadFailure { path: file, reason }),
                },
            }
        }
        reg
    }

    /// Adds a loaded plugin: usable, unless an earlier plugin or unloadable file has its name.
    fn add(&mut self, p: LoadedPlugin) {
        let dup = self.plugins.iter().any(|q| q.meta.name == p.meta.name && q.meta.kind == p.meta.kind);
        let refused = self.failure_for(&p.meta.name).map(|f| f.path.display().to_string());
        if let (false, Some(first)) = (dup, &refused) {
            tracing::debug!(
                "plugin {} at {} is not used: {first}, found first, cannot be loaded",
                p.meta.name,
                p.path.display()
            );
        }
        if dup || refused.is_some() {
            self.shadowed.push(p);
        } else {
            self.plugins.push(p);
        }
    }

    /// The plugin of `kind` named `name`.
    pub fn find(&self, kind: PluginKind, name: &str) -> Option<&LoadedPlugin> {
        self.plugins.iter().find(|p| p.meta.kind == kind && p.meta.name == name)
    }

    /// Names of the usable plugins of `kind`, sorted.
    pub fn names(&self, kind: PluginKind) -> Vec<String> {
        let mut v: Vec<String> =
            self.plugins.iter().filter(|p| p.meta.kind == kind).map(|p| p.meta.name.clone()).collect();
        v.sort();
        v
    }

    /// The first load failure of a file whose name says it is plugin `name`
    /// ([`discovery::claimed_name`]), if any.
    pub fn failure_for(&self, name: &str) -> Option<&LoadFailure> {
        let name = name.replace('-', "_");
        self.failures.iter().find(|f| discovery::claimed_name(&f.path).as_deref() == Some(name.as_str()))
    }
}

/// Loads one plugin library and checks it: ownership of the file and its directories (as root),
/// that its ELF headers fit the file, that it is an xpuprof plugin, ABI version, layout
/// compatibility, and its descriptor.
pub fn load(path: &Path) -> Result<LoadedPlugin, String> {
    trust::check_trusted_file(path, "the plugin file")?;
    elf::check_elf(path)?;
    if cabi::exports_entry(path) {
        let (module, meta) = cabi::load(path)?;
        return Ok(LoadedPlugin { path: path.to_path_buf(), meta, module: PluginEntry::C(module) });
    }
    elf::check_unwinds(path, ROOT_MODULE_SYMBOL)?;
    precheck_symbol(path)?;
    let header = lib_header_from_path(path).map_err(|e| explain(&e))?;
    check_stamp(header)?;
    check_layout(header)?;
    // SAFETY: `check_layout` just checked the library's root module layout against ours
    // (equal, or differing only by fields appended at the end, which are read as `Option`).
    let module = unsafe { header.init_root_module_with_unchecked_layout::<PluginModuleRef>() }
        .map_err(|e| explain(&e))?;
    let abi = module.abi_version();
    if abi != ABI_VERSION {
        return Err(wrong_abi(abi));
    }
    let meta = describe(module)?;
    Ok(LoadedPlugin { path: path.to_path_buf(), meta, module: PluginEntry::Rust(module) })
}

/// Reads the plugin's descriptor (and its extension, where the plugin's SDK has one).
fn describe(module: PluginModuleRef) -> Result<PluginMeta, String> {
    let d = (module.describe())();
    let kind = match d.kind {
        KIND_SOURCE => PluginKind::Source,
        KIND_SINK => PluginKind::Sink,
        k => return Err(format!("declares unknown plugin kind {k}")),
    };
    // The keys as SDK 0.1 declared them: no constraints, defaults as TOML literals.
    let keys = d
        .config_keys
        .iter()
        .map(|k| {
            let ty = ConfigType::from_u8(k.ty)
                .ok_or_else(|| format!("config key `{}` has unknown type {}", k.name, k.ty))?;
            let doc = bounded::cap(&k.doc, bounded::MAX_MESSAGE_BYTES);
            Ok(ConfigKey::new(&k.name, ty, &k.default, &doc))
        })
        .collect::<Result<Vec<_>, String>>()?;
    check_name(&d.name)?;
    // Appended in SDK 0.2: absent (`None`) in plugins built with SDK 0.1.
    let ext = module.describe_ext().map(|f| f());
    let text = |s: &str| bounded::cap(s, bounded::MAX_MESSAGE_BYTES).into_owned();
    let schema = ext.and_then(|e| e.config_schema()).filter(|s| !s.is_empty());
    let host_fills_defaults = schema.is_none();
    let config = match schema {
        Some(s) if s.len() > MAX_SCHEMA_BYTES => {
            return Err(format!("declares a config schema of {} bytes (at most {MAX_SCHEMA_BYTES})", s.len()))
        }
        Some(s) => ConfigSchema::from_toml(s.as_str())
            .map_err(|e| format!("declares an unreadable config schema: {}", text(&e)))?,
        None => ConfigSchema::new(keys),
    };
    Ok(PluginMeta {
        name: d.name.into(),
        kind,
        version: text(&d.version),
        description: text(&d.description),
        config,
        host_fills_defaults,
        capabilities: d.capabilities.iter().map(|c| c.to_string()).collect(),
        abi: module.abi_version(),
        sdk_version: ext.map(|e| e.sdk_version().to_string()),
        // Appended in SDK 0.3.
        record_layout: ext.and_then(|e| e.record_layout()),
        // Appended in SDK 0.4.
        default_source: ext.and_then(|e| e.default_source()).unwrap_or(false),
        backends: ext
            .and_then(|e| e.backends())
            .map(|b| checks::backend_names(b.as_slice().iter().map(|b| (b.id, b.name.as_str()))))
            .unwrap_or_default(),
        machine_checks: ext.and_then(|e| e.machine_checks()).map(MachineChecks::Rust),
    })
}

/// Refuses a plugin name that is too long or holds other characters than letters, digits, `-`
/// and `_` (it becomes a file name, a config table name and a command-line word).
pub(crate) fn check_name(name: &str) -> Result<(), String> {
    if name.len() > MAX_NAME_BYTES {
        return Err(format!("declares a plugin name of {} bytes (at most {MAX_NAME_BYTES})", name.len()));
    }
    if name.is_empty() || name.contains(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '_')) {
        return Err(format!("declares an invalid plugin name {name:?}"));
    }
    Ok(())
}

fn wrong_abi(abi: u32) -> String {
    format!(
        "built for plugin ABI {abi}, this xpuprof speaks ABI {ABI_VERSION}; rebuild the plugin against an \
         xpuprof-sdk of ABI {ABI_VERSION}"
    )
}

/// Refuses a library stamped for another plugin ABI before its layout is compared.
fn check_stamp(header: &LibHeader) -> Result<(), String> {
    let stamp = header.version_strings().version.as_str();
    match abi_of_stamp(stamp) {
        Some(abi) if abi == ABI_VERSION => Ok(()),
        Some(abi) => Err(wrong_abi(abi)),
        None => Err(format!(
            "carries the version stamp {stamp:?}, not one of an xpuprof plugin ABI (this xpuprof expects \
             {ABI_STAMP}); rebuild the plugin against an xpuprof-sdk of ABI {ABI_VERSION}"
        )),
    }
}

/// Compares the library's root module layout with ours. `abi_stable` accepts a library whose
/// prefix types have more fields than ours (a newer plugin: we never read past our fields) but
/// refuses one with fewer ("too many fields"), although an older plugin of the same ABI only
/// lacks fields appended since, which we read as `None`. So a mismatch is checked the other way
/// round as well: a layout that is a prefix of ours loads too.
fn check_layout(header: &LibHeader) -> Result<(), String> {
    let Some(found) = header.layout() else {
        return Err("exports no layout information for its root module: build it with \
                    xpuprof_sdk::export_plugin!"
            .into());
    };
    let expected = <PluginModuleRef as StableAbi>::LAYOUT;
    let Err(forward) = check_layout_compatibility(expected, found) else { return Ok(()) };
    if check_layout_compatibility(found, expected).is_ok() {
        return Ok(());
    }
    tracing::debug!("plugin layout mismatch, abi_stable's full report:\n{forward}");
    Err(format!(
        "its plugin interface layout does not match this xpuprof (ABI {ABI_VERSION}, xpuprof-sdk {}): {}; \
         rebuild the plugin against an xpuprof-sdk of ABI {ABI_VERSION} (`-vv` shows abi_stable's full report)",
        xpuprof_sdk::abi::SDK_VERSION,
        layout_summary(&forward)
    ))
}

/// The gist of `abi_stable`'s report on one line: each error with the path of fields it was
/// found on and what was expected and found, without the full type layouts (those go to the
/// debug log).
pub(crate) fn layout_summary(e: &AbiInstabilityErrors) -> String {
    let mut out = Vec::new();
    for err in e.errors.iter().filter(|err| !err.errs.is_empty()) {
        // Each step's text starts with `field_name:<name>` and `type:<type>` lines.
        let path: Vec<String> = err
            .stack_trace
            .iter()
            .filter_map(|step| {
                let text = step.expected.to_string();
                let value =
                    |key: &str| text.lines().find_map(|l| l.trim().strip_prefix(key).map(str::to_owned));
                let (name, ty) = (value("field_name:")?, value("type:").unwrap_or_default());
                (name.parse::<u32>().is_err()).then(|| format!("{name}: {ty}"))
            })
            .collect();
        let text = err.to_string();
        let detail = text.find("\nError:").map_or(text.as_str(), |i| &text[i + 1..]);
        let detail = detail.split_whitespace().collect::<Vec<_>>().join(" ");
        let detail =
            detail.replace("Error:", "").replace(" Expected:", ", expected").replace(" Found:", ", found");
        if path.is_empty() {
            out.push(detail);
        } else {
            out.push(format!("at `{}`: {detail}", path.join(" > ")));
        }
    }
    out.join("; ")
}

/// Opens the file with the dynamic loader and checks for the root-module symbol, so that a
/// library that is not an xpuprof plugin gets a plain message.
fn precheck_symbol(path: &Path) -> Result<(), String> {
    // SAFETY: loading a library runs its initialisers; plugin directories are trusted locations
    // and, as root, files writable by others were refused above.
    let lib = unsafe { libloading::Library::new(path) }
        .map_err(|e| format!("cannot be loaded by the dynamic loader: {e}"))?;
    // SAFETY: only the symbol's presence is checked; it is not used.
    let sym = unsafe { lib.get::<*const u8>(ROOT_MODULE_SYMBOL.as_bytes()) };
    if sym.is_err() {
        return Err(
            "not an xpuprof plugin: it exports no plugin root module (build it with xpuprof_sdk::export_plugin!, \
             or with XPUPROF_EXPORT_PLUGIN from xpuprof/plugin.h in C)"
                .into(),
        );
    }
    // Keep the library mapped: abi_stable opens it again and leaks it on purpose.
    std::mem::forget(lib);
    Ok(())
}

fn explain(e: &LibraryError) -> String {
    match e {
        LibraryError::IncompatibleVersionNumber { actual_version, .. } => {
            match abi_of_stamp(&actual_version.to_string()) {
                Some(abi) => wrong_abi(abi),
                None => {
                    format!("carries the version stamp {actual_version}, not one of plugin ABI {ABI_VERSION}")
                }
            }
        }
        LibraryError::AbiInstability(detail) => {
            tracing::debug!("plugin layout mismatch, abi_stable's full report:\n{detail}");
            format!(
                "its plugin interface layout does not match this xpuprof (ABI {ABI_VERSION}): rebuild the plugin \
                 against an xpuprof-sdk of ABI {ABI_VERSION} (`-vv` shows abi_stable's full report)"
            )
        }
        other => format!("failed to load: {other}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use abi_stable::abi_stability::abi_checking::check_layout_compatibility;

    // Two releases of one root module: the second changed a field's type (not allowed within
    // one ABI) and appended an entry point (allowed). Only their layouts are used.
    #[allow(dead_code)]
    mod v1 {
        #[repr(C)]
        #[derive(abi_stable::StableAbi)]
        #[sabi(kind(Prefix(prefix_ref = ModRef)))]
        #[sabi(missing_field(option))]
        pub struct Mod {
            pub version: u32,
            #[sabi(last_prefix_field)]
            pub start: extern "C" fn(pid: u32) -> u32,
        }
    }
    #[allow(dead_code)]
    mod v2 {
        #[repr(C)]
        #[derive(abi_stable::StableAbi)]
        #[sabi(kind(Prefix(prefix_ref = ModRef)))]
        #[sabi(missing_field(option))]
        pub struct Mod {
            pub version: u64,
            #[sabi(last_prefix_field)]
            pub start: extern "C" fn(pid: u32) -> u32,
            pub stop: extern "C" fn(),
        }
    }

    #[test]
    fn a_layout_mismatch_is_summarised_with_the_field_and_both_sides() {
        let e =
            check_layout_compatibility(<v1::ModRef as StableAbi>::LAYOUT, <v2::ModRef as StableAbi>::LAYOUT)
                .unwrap_err();
        let s = layout_summary(&e);
        assert_eq!(s, "at `version: u32`: mismatched type, expected u32, found u64");
        assert!(!s.contains('\n'), "one line: {s}");
    }
}
