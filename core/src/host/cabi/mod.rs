//! Plugins written against the C header (`sdk/include/xpuprof/plugin.h`): found by the same
//! discovery, checked by the same file checks, then read through their size-prefixed
//! descriptor instead of the Rust root module. Records cross in the same encoded batches.

pub mod ffi;
mod instance;

use std::ffi::{c_char, CStr};
use std::path::Path;

use xpuprof_sdk::{BackendName, ConfigSchema, PluginKind};

pub use instance::CInstance;

use super::bounded;
use super::checks::{self, MachineChecks};
use super::loader::PluginMeta;

/// A loaded C plugin's descriptor (the library stays mapped for the rest of the process).
#[derive(Debug, Clone, Copy)]
pub struct CModule {
    desc: &'static ffi::Plugin,
}

// SAFETY: the descriptor is immutable static data of a library that is never unloaded; its
// entry points are called from one thread per instance, as the header documents.
unsafe impl Send for CModule {}
// SAFETY: as above; nothing in it is mutated after loading.
unsafe impl Sync for CModule {}

impl CModule {
    pub(crate) fn desc(&self) -> &'static ffi::Plugin {
        self.desc
    }
}

/// Whether the library at `path` exports the C entry symbol (read from its ELF dynamic symbol
/// table, without loading it).
pub fn exports_entry(path: &Path) -> bool {
    super::elf::exports_symbol(path, ffi::ENTRY_SYMBOL)
}

/// Loads a C plugin: calls its entry function and checks the descriptor.
pub fn load(path: &Path) -> Result<(CModule, PluginMeta), String> {
    // SAFETY: loading runs the library's initialisers; plugin files passed the trust and ELF
    // checks already, as for Rust plugins.
    let lib = unsafe { libloading::Library::new(path) }
        .map_err(|e| format!("cannot be loaded by the dynamic loader: {e}"))?;
    // SAFETY: the header declares the entry as `const xpuprof_plugin *xpuprof_plugin_v1(void)`.
    let entry =
        unsafe { lib.get::<unsafe extern "C" fn() -> *const ffi::Plugin>(ffi::ENTRY_SYMBOL.as_bytes()) }
            .map_err(|e| format!("cannot find its entry `{}`: {e}", ffi::ENTRY_SYMBOL))?;
    // SAFETY: the entry takes no arguments and returns a pointer to static data.
    let ptr = unsafe { entry() };
    // Plugins are never unloaded (their threads may outlive their instances).
    std::mem::forget(lib);
    if ptr.is_null() {
        return Err(format!("its `{}` returned NULL instead of a descriptor", ffi::ENTRY_SYMBOL));
    }
    // SAFETY: non-null, and `size` is the descriptor's first field in every version.
    let size = unsafe { std::ptr::read(ptr.cast::<u32>()) } as usize;
    if size < ffi::Plugin::MIN_SIZE {
        return Err(format!(
            "its descriptor is {size} bytes, shorter than the {} of C ABI {}: set `size` with \
             XPUPROF_PLUGIN_INIT (xpuprof/plugin.h)",
            ffi::Plugin::MIN_SIZE,
            ffi::C_ABI_VERSION
        ));
    }
    let desc: &'static ffi::Plugin = Box::leak(Box::new(copy_descriptor(ptr, size)));
    let meta = describe(desc)?;
    Ok((CModule { desc }, meta))
}

/// A copy of the descriptor at `ptr`, `size` bytes as the plugin was compiled: the fields an
/// older header did not have yet (past `size`) are zero, i.e. NULL entry points; a newer
/// plugin's appended fields beyond ours are not read.
fn copy_descriptor(ptr: *const ffi::Plugin, size: usize) -> ffi::Plugin {
    let mut out = std::mem::MaybeUninit::<ffi::Plugin>::zeroed();
    let n = size.min(std::mem::size_of::<ffi::Plugin>());
    // SAFETY: the plugin declares `size` readable bytes at `ptr` (at least `MIN_SIZE`, checked
    // by the caller); `out` has room for `n`. Every field of `ffi::Plugin` is an integer, a raw
    // pointer or an `Option` of a function pointer, for which all-zero bytes are valid (0 or
    // NULL/None), so the partly copied value is initialised.
    unsafe {
        std::ptr::copy_nonoverlapping(ptr.cast::<u8>(), out.as_mut_ptr().cast::<u8>(), n);
        out.assume_init()
    }
}

fn text(p: *const c_char, what: &str) -> Result<String, String> {
    if p.is_null() {
        return Err(format!("its descriptor has no {what} (NULL)"));
    }
    // SAFETY: the header requires NUL-terminated strings that live as long as the library.
    let s = unsafe { CStr::from_ptr(p) }.to_string_lossy();
    Ok(bounded::cap(&s, bounded::MAX_MESSAGE_BYTES).into_owned())
}

fn optional_text(p: *const c_char) -> String {
    text(p, "").unwrap_or_default()
}

fn describe(d: &ffi::Plugin) -> Result<PluginMeta, String> {
    if d.abi_version != ffi::C_ABI_VERSION {
        return Err(format!(
            "built for C plugin ABI {}, this xpuprof speaks C ABI {}; rebuild the plugin with this \
             xpuprof's xpuprof/plugin.h",
            d.abi_version,
            ffi::C_ABI_VERSION
        ));
    }
    let kind = match d.kind {
        1 => PluginKind::Source,
        2 => PluginKind::Sink,
        k => {
            return Err(format!(
                "declares unknown plugin kind {k} (XPUPROF_KIND_SOURCE or XPUPROF_KIND_SINK)"
            ))
        }
    };
    let name = text(d.name, "name")?;
    super::loader::check_name(&name)?;
    let missing =
        |what: &str| Err(format!("declares itself a {} but its `{what}` entry point is NULL", kind.as_str()));
    if d.create.is_none() {
        return missing("create");
    }
    if d.destroy.is_none() {
        return missing("destroy");
    }
    match kind {
        PluginKind::Source if d.start.is_none() => return missing("start"),
        PluginKind::Source if d.stop.is_none() => return missing("stop"),
        PluginKind::Sink if d.consume.is_none() => return missing("consume"),
        PluginKind::Sink if d.finish.is_none() => return missing("finish"),
        _ => {}
    }
    let schema = optional_text(d.config_schema);
    let config = ConfigSchema::from_toml(&schema).map_err(|e| {
        format!("declares an unreadable config schema: {e}; see xpuprof/plugin.h, `config_schema`")
    })?;
    Ok(PluginMeta {
        name,
        kind,
        version: optional_text(d.version),
        description: optional_text(d.description),
        config,
        // C plugins read values through getters that see the declared defaults.
        host_fills_defaults: true,
        capabilities: capabilities(d.capabilities),
        abi: d.abi_version,
        sdk_version: Some(format!("{} (C header)", optional_text(d.header_version))),
        // C plugins read encoded batches only.
        record_layout: None,
        // Appended in header 0.4 (zero, i.e. absent, in older descriptors: see `copy_descriptor`).
        default_source: kind == PluginKind::Source && d.default_source != 0,
        backends: backends(d.backends),
        machine_checks: d.machine_checks.map(MachineChecks::C),
    })
}

/// The correlation backends of a descriptor: a list ended by a NULL name (at most 64 read).
fn backends(mut p: *const ffi::BackendName) -> Vec<BackendName> {
    let mut out: Vec<(u32, String)> = Vec::new();
    if p.is_null() {
        return Vec::new();
    }
    // SAFETY: the header requires an array ended by an entry whose name is NULL, of
    // NUL-terminated names; at most 64 entries are read.
    unsafe {
        while !(*p).name.is_null() && out.len() < 64 {
            out.push(((*p).id, CStr::from_ptr((*p).name).to_string_lossy().into_owned()));
            p = p.add(1);
        }
    }
    checks::backend_names(out.iter().map(|(id, name)| (*id, name.as_str())))
}

fn capabilities(mut p: *const *const c_char) -> Vec<String> {
    let mut out = Vec::new();
    if p.is_null() {
        return out;
    }
    // SAFETY: the header requires a NULL-terminated array of NUL-terminated strings; at most 64
    // entries are read.
    unsafe {
        while !(*p).is_null() && out.len() < 64 {
            out.push(CStr::from_ptr(*p).to_string_lossy().into_owned());
            p = p.add(1);
        }
    }
    out
}
