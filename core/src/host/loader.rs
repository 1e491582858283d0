//! Loading plugin libraries through the SDK's ABI, with checks and clear failures.

use std::path::{Path, PathBuf};

use abi_stable::library::{lib_header_from_path, LibraryError, RootModule};
use xpuprof_sdk::abi::{PluginModuleRef, ABI_VERSION, KIND_SINK, KIND_SOURCE, ROOT_MODULE_SYMBOL};
use xpuprof_sdk::{ConfigKey, ConfigType, PluginKind};

use super::discovery::{self, Found, SearchPath};

/// A configuration key as a plugin declared it (owned: it came through the ABI).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeySpec {
    /// Name.
    pub name: String,
    /// Type.
    pub ty: ConfigType,
    /// Default, as a TOML literal; empty when none.
    pub default: String,
    /// Documentation.
    pub doc: String,
}

impl From<&ConfigKey> for KeySpec {
    fn from(k: &ConfigKey) -> Self {
        Self { name: k.name.into(), ty: k.ty, default: k.default.into(), doc: k.doc.into() }
    }
}

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
    /// Accepted configuration keys.
    pub keys: Vec<KeySpec>,
    /// Required capabilities (SDK names).
    pub capabilities: Vec<String>,
}

/// A plugin library that loaded and passed every check.
#[derive(Clone)]
pub struct LoadedPlugin {
    /// The file.
    pub path: PathBuf,
    /// Its metadata.
    pub meta: PluginMeta,
    /// Its root module.
    pub module: PluginModuleRef,
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
    /// Scans the search path and loads every candidate.
    pub fn discover(path: &SearchPath) -> Self {
        let mut reg = Registry::default();
        for found in discovery::scan(path) {
            match found {
                Found::BadDir { dir, origin, reason } => reg.failures.push(LoadFailure {
                    path: dir,
                    reason: format!("plugin directory from {origin} cannot be read: {reason}"),
                }),
                Found::File(file) => match load(&file) {
                    Ok(p) => {
                        let dup = reg
                            .plugins
                            .iter()
                            .any(|q| q.meta.name == p.meta.name && q.meta.kind == p.meta.kind);
                        if dup {
                            reg.shadowed.push(p);
                        } else {
                            reg.plugins.push(p);
                        }
                    }
                    Err(reason) => reg.failures.push(LoadFailure { path: file, reason }),
                },
            }
        }
        reg
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

    /// The load failure of a file whose name suggests it is plugin `name`, if any.
    pub fn failure_for(&self, name: &str) -> Option<&LoadFailure> {
        let file = format!("{}{}{}", discovery::FILE_PREFIX, name.replace('-', "_"), discovery::FILE_SUFFIX);
        self.failures.iter().find(|f| f.path.file_name().and_then(|n| n.to_str()) == Some(file.as_str()))
    }
}

/// Loads one plugin library and checks it: ownership (as root), that it is an xpuprof plugin,
/// layout compatibility, ABI version, and its descriptor.
pub fn load(path: &Path) -> Result<LoadedPlugin, String> {
    discovery::check_ownership(path)?;
    precheck_symbol(path)?;
    let header = lib_header_from_path(path).map_err(|e| explain(&e))?;
    let module = header.init_root_module::<PluginModuleRef>().map_err(|e| explain(&e))?;
    let abi = module.abi_version();
    if abi != ABI_VERSION {
        return Err(format!(
            "built for plugin ABI {abi}, this xpuprof speaks ABI {ABI_VERSION}; rebuild the plugin against \
             xpuprof-sdk with ABI {ABI_VERSION}"
        ));
    }
    let d = (module.describe())();
    let kind = match d.kind {
        KIND_SOURCE => PluginKind::Source,
        KIND_SINK => PluginKind::Sink,
        k => return Err(format!("declares unknown plugin kind {k}")),
    };
    let mut keys = Vec::new();
    for k in d.config_keys.iter() {
        let ty = ConfigType::from_u8(k.ty)
            .ok_or_else(|| format!("config key `{}` has unknown type {}", k.name, k.ty))?;
        keys.push(KeySpec {
            name: k.name.to_string(),
            ty,
            default: k.default.to_string(),
            doc: k.doc.to_string(),
        });
    }
    if d.name.is_empty() || d.name.contains(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '_')) {
        return Err(format!("declares an invalid plugin name {:?}", d.name.as_str()));
    }
    Ok(LoadedPlugin {
        path: path.to_path_buf(),
        meta: PluginMeta {
            name: d.name.into(),
            kind,
            version: d.version.into(),
            description: d.description.into(),
            keys,
            capabilities: d.capabilities.iter().map(|c| c.to_string()).collect(),
        },
        module,
    })
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
            "not an xpuprof plugin: it exports no plugin root module (build it with xpuprof_sdk::export_plugin!)"
                .into(),
        );
    }
    // Keep the library mapped: abi_stable opens it again and leaks it on purpose.
    std::mem::forget(lib);
    Ok(())
}

fn explain(e: &LibraryError) -> String {
    match e {
        LibraryError::IncompatibleVersionNumber { library_name, expected_version, actual_version } => format!(
            "built with xpuprof-sdk {actual_version}, incompatible with this xpuprof's SDK {expected_version} \
             ({library_name}); rebuild the plugin against xpuprof-sdk {expected_version}"
        ),
        LibraryError::AbiInstability(_) => format!(
            "its plugin interface layout does not match this xpuprof (SDK {}): rebuild the plugin against the \
             same xpuprof-sdk version",
            <PluginModuleRef as RootModule>::VERSION_STRINGS.version
        ),
        other => format!("failed to load: {other}"),
    }
}
