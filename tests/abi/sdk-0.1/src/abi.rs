//! The binary contract between the xpuprof host and a plugin library.
//!
//! A plugin library exports one root module, [`PluginModule`], a prefix type: fields are only
//! ever appended after the last one of a release, so a plugin built against an older SDK of the
//! same [`ABI_VERSION`] keeps loading (the host sees the missing fields as absent). Layouts are
//! checked at load time by `abi_stable`; this module is the only place that names it, so it can be
//! replaced without touching plugin code.
//!
//! Plugin authors never use this module directly: implement [`crate::Source`] or
//! [`crate::Sink`] and call [`crate::export_plugin!`]. The host side (`xpuprof-core`) uses
//! [`PluginModuleRef`] and the `Ffi*` types.

use std::ffi::c_void;

use abi_stable::{
    declare_root_module_statics,
    library::RootModule,
    package_version_strings,
    sabi_types::VersionStrings,
    std_types::{RResult, RSlice, RStr, RString, RVec, Tuple2},
    StableAbi,
};

/// The plugin ABI version this SDK speaks. A host loads plugins of exactly this version.
pub const ABI_VERSION: u32 = 1;

/// Plugin kind as it travels through the ABI.
pub const KIND_SOURCE: u8 = 1;
/// Plugin kind as it travels through the ABI.
pub const KIND_SINK: u8 = 2;

/// A configuration key a plugin accepts.
#[repr(C)]
#[derive(StableAbi, Debug, Clone)]
pub struct FfiConfigKey {
    /// Key name.
    pub name: RString,
    /// Value type, see [`crate::ConfigType`].
    pub ty: u8,
    /// Default value as a TOML literal (empty when there is none).
    pub default: RString,
    /// One-line documentation.
    pub doc: RString,
}

/// What a plugin says about itself.
#[repr(C)]
#[derive(StableAbi, Debug, Clone)]
pub struct FfiDescriptor {
    /// Plugin name as used on the command line (`cupti`, `folded`).
    pub name: RString,
    /// [`KIND_SOURCE`] or [`KIND_SINK`].
    pub kind: u8,
    /// The plugin's own version.
    pub version: RString,
    /// One-line description.
    pub description: RString,
    /// Accepted configuration keys.
    pub config_keys: RVec<FfiConfigKey>,
    /// Required capabilities, see [`crate::Capability`].
    pub capabilities: RVec<RString>,
}

/// Callbacks the host gives every plugin instance. All of them may be called from any thread.
#[repr(C)]
#[derive(StableAbi, Debug, Clone, Copy)]
pub struct FfiHost {
    /// Opaque host context, passed back to every callback.
    pub ctx: *const c_void,
    /// Hands a batch of encoded records ([`crate::codec`]) to the host. The host copies it.
    pub emit: extern "C" fn(ctx: *const c_void, batch: RSlice<'_, u8>),
    /// Logs a message: level 1 = error, 2 = warn, 3 = info, 4 = debug.
    pub log: extern "C" fn(ctx: *const c_void, level: u8, message: RStr<'_>),
}

// SAFETY: the host guarantees that `ctx` stays valid and that both callbacks are thread-safe
// for as long as any plugin instance created with it exists.
unsafe impl Send for FfiHost {}
// SAFETY: as above; the callbacks only take shared access to `ctx`.
unsafe impl Sync for FfiHost {}

/// An opaque plugin instance, owned by the host until it calls `destroy`.
#[repr(transparent)]
#[derive(StableAbi, Debug, Clone, Copy)]
pub struct FfiInstance(pub *mut c_void);

/// Result type of plugin entry points: the error is a user-facing message.
pub type FfiResult<T> = RResult<T, RString>;

/// Environment variables a source asks the host to set in the target.
pub type FfiEnv = RVec<Tuple2<RString, RString>>;

/// The root module every plugin library exports.
///
/// `args` passed to `create` is a TOML document with a `[plugin]` table (the user's validated
/// configuration for this plugin) and a `[session]` table (output directory, command, ...).
#[repr(C)]
#[derive(StableAbi)]
#[allow(missing_debug_implementations)]
#[sabi(kind(Prefix(prefix_ref = PluginModuleRef)))]
#[sabi(missing_field(option))]
pub struct PluginModule {
    /// [`ABI_VERSION`] of the SDK the plugin was built with.
    pub abi_version: u32,
    /// Describes the plugin.
    pub describe: extern "C" fn() -> FfiDescriptor,
    /// Creates an instance.
    pub create: extern "C" fn(args: RStr<'_>, host: FfiHost) -> FfiResult<FfiInstance>,
    /// Sources: adds environment variables the target needs (injection paths, sockets).
    pub prepare: extern "C" fn(inst: FfiInstance, env: &mut FfiEnv) -> FfiResult<()>,
    /// Sources: starts recording the process tree rooted at `pid`.
    pub start: extern "C" fn(inst: FfiInstance, pid: u32) -> FfiResult<()>,
    /// Sources: the target has exited or the session is ending; emit everything and stop.
    pub stop: extern "C" fn(inst: FfiInstance) -> FfiResult<()>,
    /// Sinks: consumes one batch of encoded records.
    pub consume: extern "C" fn(inst: FfiInstance, batch: RSlice<'_, u8>) -> FfiResult<()>,
    /// Sinks: finishes the output; returns the paths of the files written.
    pub finish: extern "C" fn(inst: FfiInstance) -> FfiResult<RVec<RString>>,
    /// Releases the instance. Never called twice.
    #[sabi(last_prefix_field)]
    pub destroy: extern "C" fn(inst: FfiInstance),
}

impl RootModule for PluginModuleRef {
    declare_root_module_statics! {PluginModuleRef}
    const BASE_NAME: &'static str = "xpuprof_plugin";
    const NAME: &'static str = "xpuprof_plugin";
    const VERSION_STRINGS: VersionStrings = package_version_strings!();
}

/// Name of the symbol a plugin library exports its root module under.
///
/// `export_plugin!` spells it out literally (a `macro_rules!` macro cannot build an identifier);
/// a test pins it to `abi_stable`'s own constant.
pub const ROOT_MODULE_SYMBOL: &str = "_1as_0lib_1header_0root_bmodule_bloader";

#[doc(hidden)]
pub mod __private {
    pub use abi_stable;
    pub use abi_stable::library::{LibHeader, RootModuleResult};
}
