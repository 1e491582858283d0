//! The binary contract between the xpuprof host and a plugin library.
//!
//! A plugin library exports one root module, [`PluginModule`], a prefix type: fields are only
//! ever appended after the last one of a release, so a plugin built against an older SDK of the
//! same [`ABI_VERSION`] keeps loading (the host sees the missing fields as absent), and an older
//! host loads a newer plugin (it never looks past the fields it knows). The same holds for the
//! descriptor extension [`FfiDescriptorExt`]. Layouts are checked at load time by `abi_stable`;
//! this module is the only place that names it, so it can be replaced without touching plugin
//! code.
//!
//! # ABI identity
//!
//! The identity a plugin and a host compare is [`ABI_VERSION`], never this crate's version.
//! `abi_stable` stamps every type layout with its crate's name and version and refuses a
//! different `0.x` minor, so the build script pins that stamp (and [`ABI_STAMP`], the root
//! module's version string) to `0.<ABI_VERSION>.0`: SDK 0.1.0, the first release, stamped
//! `0.1.0`, so its plugins keep loading under every later SDK of ABI 1. The crate's real version
//! is [`SDK_VERSION`]; plugins report it through [`FfiDescriptorExt::sdk_version`].
//!
//! # Growing the ABI
//!
//! - A new entry point or descriptor field is appended at the end of [`PluginModule`] or
//!   [`FfiDescriptorExt`], never inserted, never after a reorder, with a doc line saying which
//!   SDK added it. The `#[sabi(last_prefix_field)]` marks never move.
//! - Readers see every appended field as an `Option`: `None` when the plugin was built with an
//!   SDK that predates it. The host must work without it (that is what "optional" means).
//! - [`FfiDescriptor`] and [`FfiConfigKey`] are frozen at ABI 1 (they travel by value); richer
//!   metadata goes into new fields of [`FfiDescriptorExt`], which travels by reference.
//! - Changing or removing anything is a new [`ABI_VERSION`] (and a new stamp).
//!
//! `xpuprof-core`'s loader accepts a layout that differs only by appended fields in either
//! direction; the tests under `tests/abi/` load a plugin built with a frozen copy of SDK 0.1
//! into today's host, and today's plugins into a host built with that frozen SDK.
//!
//! Plugin authors never use this module directly: implement [`crate::Source`] or
//! [`crate::Sink`] and call [`crate::export_plugin!`]. The host side (`xpuprof-core`) uses
//! [`PluginModuleRef`] and the `Ffi*` types.

use std::ffi::c_void;

use abi_stable::{
    declare_root_module_statics,
    library::RootModule,
    sabi_types::VersionStrings,
    std_types::{RResult, RSlice, RStr, RString, RVec, Tuple2},
    StableAbi,
};

/// The plugin ABI version this SDK speaks. A host loads plugins of exactly this version.
pub const ABI_VERSION: u32 = 1;

/// The version stamp `abi_stable` compares: `0.<ABI_VERSION>.0`, set by the build script (see
/// the module docs). Not the crate's version.
pub const ABI_STAMP: &str = env!("XPUPROF_ABI_STAMP");

/// The version of this crate, `xpuprof-sdk`, as plugins report it.
pub const SDK_VERSION: &str = env!("XPUPROF_SDK_VERSION");

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

/// What a plugin says about itself beyond [`FfiDescriptor`]; added in SDK 0.2, absent from
/// plugins built with SDK 0.1.
///
/// A prefix type: new fields are appended at the end (see the module docs), and the host reads
/// each appended field as an `Option`. Fields must be `Copy` (the reader copies them out): it is
/// built once per load and leaked, so text is an `RStr<'static>` and lists an
/// `RSlice<'static, T>` of leaked data.
#[repr(C)]
#[derive(StableAbi)]
#[allow(missing_debug_implementations)]
#[sabi(kind(Prefix(prefix_ref = FfiDescriptorExtRef)))]
#[sabi(missing_field(option))]
pub struct FfiDescriptorExt {
    /// [`SDK_VERSION`] of the SDK the plugin was built with.
    #[sabi(last_prefix_field)]
    pub sdk_version: RStr<'static>,
    /// The plugin's configuration schema, a TOML document in the format of [`crate::config`];
    /// empty when the plugin declares none (hosts then use [`FfiDescriptor::config_keys`]).
    /// Added in SDK 0.2.
    pub config_schema: RStr<'static>,
    /// The fingerprint of the plugin's [`crate::model::Record`] layout
    /// ([`crate::model::record_layout`]): when it equals the host's, the host may lend a sink
    /// its decoded records through [`PluginModule::consume_records`]. Added in SDK 0.3.
    pub record_layout: u64,
    /// The plugin's machine checks for `xpuprof doctor` ([`crate::Source::machine_checks`]);
    /// the host calls it when it needs them (`doctor`, choosing default sources), never at load.
    /// Added in SDK 0.4.
    pub machine_checks: extern "C" fn() -> RVec<FfiMachineCheck>,
    /// Sources: run when the user names no source, if every capability passed its check
    /// ([`crate::Source::default_source`]). Added in SDK 0.4.
    pub default_source: bool,
    /// Sources: the correlation backends the plugin issues ids for, with their names in
    /// reports ([`crate::Source::backends`]). Added in SDK 0.4.
    pub backends: RSlice<'static, FfiBackendName>,
    // Append new fields here, each with a doc line naming the SDK version that added it.
}

/// One machine check as it crosses the ABI (see [`crate::MachineCheck`]). Added in SDK 0.4.
#[repr(C)]
#[derive(StableAbi, Debug, Clone)]
pub struct FfiMachineCheck {
    /// The capability it decides.
    pub capability: RString,
    /// [`crate::CheckStatus::as_u8`].
    pub status: u8,
    /// What was found or is missing.
    pub detail: RString,
    /// The fix; empty when there is none.
    pub hint: RString,
}

/// A correlation backend and its name in reports (see [`crate::BackendName`]). Added in SDK 0.4.
#[repr(C)]
#[derive(StableAbi, Debug, Clone, Copy)]
pub struct FfiBackendName {
    /// The backend id ([`crate::model::backend`]).
    pub id: u32,
    /// Its name in reports.
    pub name: RStr<'static>,
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

/// Records the host lends a sink for the length of one [`PluginModule::consume_records`] call:
/// `len` values of [`crate::model::Record`] at `ptr`, laid out as in a build whose
/// [`crate::model::record_layout`] is `layout`. The host passes it only to a plugin that declared
/// the same fingerprint; the plugin checks it again before reading.
#[repr(C)]
#[derive(StableAbi, Debug, Clone, Copy)]
pub struct FfiRecords {
    /// The first record (dangling but aligned when `len` is 0).
    pub ptr: *const c_void,
    /// Number of records.
    pub len: usize,
    /// The layout fingerprint of the build that made the records.
    pub layout: u64,
}

impl FfiRecords {
    /// Lends `records` (valid while the borrow lasts).
    pub fn lend(records: &[crate::model::Record]) -> Self {
        Self { ptr: records.as_ptr().cast(), len: records.len(), layout: crate::model::record_layout() }
    }

    /// The records, when they were made by a build with this build's layout.
    ///
    /// # Safety
    /// `self` must come from [`FfiRecords::lend`] (in any build) on records that are still
    /// borrowed for `'a`.
    pub unsafe fn records<'a>(self) -> Option<&'a [crate::model::Record]> {
        if self.layout != crate::model::record_layout() {
            return None;
        }
        if self.len == 0 {
            return Some(&[]);
        }
        // SAFETY: same layout fingerprint, so the lending build's `Record` is ours; the caller
        // guarantees the pointer and length came from a live slice.
        Some(unsafe { std::slice::from_raw_parts(self.ptr.cast(), self.len) })
    }
}

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
    /// Describes the plugin beyond [`FfiDescriptor`]. Added in SDK 0.2: `None` for plugins
    /// built with SDK 0.1.
    pub describe_ext: extern "C" fn() -> FfiDescriptorExtRef,
    /// Sinks: consumes records the host decoded once and lends for the call (no decoding in the
    /// plugin). The host calls it instead of `consume` only when the plugin's
    /// [`FfiDescriptorExt::record_layout`] equals its own. Added in SDK 0.3: `None` for plugins
    /// built with an older SDK, which get encoded batches through `consume`.
    pub consume_records: extern "C" fn(inst: FfiInstance, records: FfiRecords) -> FfiResult<()>,
    /// Sources: opens (`true`) or closes (`false`) a capture window
    /// ([`crate::Source::set_capture`]). Added in SDK 0.4: `None` for plugins built with an older
    /// SDK, which cannot pause (they record the whole run).
    pub set_capture: extern "C" fn(inst: FfiInstance, on: bool) -> FfiResult<()>,
    /// Sources: starts recording the running process `pid` (with `tree`, its descendants too),
    /// instead of `prepare` + `start` ([`crate::Source::attach`]). Added in SDK 0.4: `None` for
    /// plugins built with an older SDK, which cannot attach.
    pub attach: extern "C" fn(inst: FfiInstance, pid: u32, tree: bool) -> FfiResult<()>,
    // Append new entry points here, each with a doc line naming the SDK version that added it.
}

impl RootModule for PluginModuleRef {
    declare_root_module_statics! {PluginModuleRef}
    const BASE_NAME: &'static str = "xpuprof_plugin";
    const NAME: &'static str = "xpuprof_plugin";
    const VERSION_STRINGS: VersionStrings = VersionStrings::new(ABI_STAMP);
}

/// Name of the symbol a plugin library exports its root module under.
///
/// `export_plugin!` spells it out literally (a `macro_rules!` macro cannot build an identifier);
/// a test pins it to `abi_stable`'s own constant.
pub const ROOT_MODULE_SYMBOL: &str = "_1as_0lib_1header_0root_bmodule_bloader";

/// The ABI version a plugin's version stamp names (`0.<abi>.x`), if it is one.
pub fn abi_of_stamp(stamp: &str) -> Option<u32> {
    let mut parts = stamp.split('.');
    match (parts.next(), parts.next()) {
        (Some("0"), Some(minor)) => minor.parse().ok(),
        _ => None,
    }
}

#[doc(hidden)]
pub mod __private {
    pub use abi_stable;
    pub use abi_stable::library::{LibHeader, RootModuleResult};
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stamp_names_the_abi_version_not_the_crate_version() {
        assert_eq!(ABI_STAMP, format!("0.{ABI_VERSION}.0"));
        assert_eq!(abi_of_stamp(ABI_STAMP), Some(ABI_VERSION));
        // What abi_stable stamps on every type layout of this crate.
        assert_eq!(env!("CARGO_PKG_VERSION"), ABI_STAMP);
        assert_ne!(SDK_VERSION, "", "the build script passes the crate's real version");
    }

    #[test]
    fn stamps_of_other_abis_are_recognised() {
        assert_eq!(abi_of_stamp("0.2.0"), Some(2));
        assert_eq!(abi_of_stamp("1.0.0"), None);
        assert_eq!(abi_of_stamp("garbage"), None);
    }
}
