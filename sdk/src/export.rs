//! Glue between the plugin traits and the ABI: turns a [`Source`] or [`Sink`] type into a
//! [`PluginModule`], contains panics, and keeps a plugin that panicked from running again.
//!
//! Used through [`crate::export_plugin!`]; nothing here is meant to be called directly.

use std::ffi::c_void;
use std::path::PathBuf;

use abi_stable::prefix_type::PrefixTypeTrait;
use abi_stable::std_types::{RResult, RSlice, RStr, RString, RVec, Tuple2};

use crate::abi::*;
use crate::codec::Decoder;
use crate::config::{ConfigSchema, PluginConfig};
use crate::emit::{Emitter, Logger};
use crate::machine::MachineCheck;
use crate::model::Record;
use crate::panics;
use crate::plugin::*;

struct Instance<T> {
    name: &'static str,
    plugin: Option<T>,
    poisoned: bool,
    scratch: Vec<Record>,
}

/// Runs `f`, turning an error or a panic into the ABI's error string.
fn guarded<R>(
    name: &str,
    what: &str,
    poisoned: Option<&mut bool>,
    f: impl FnOnce() -> PluginResult<R>,
) -> FfiResult<R> {
    if poisoned.as_deref() == Some(&true) {
        return RResult::RErr(RString::from(format!("plugin `{name}` is disabled after an earlier panic")));
    }
    match panics::catch(f) {
        Ok(Ok(v)) => RResult::ROk(v),
        Ok(Err(e)) => RResult::RErr(RString::from(e.0)),
        Err(msg) => {
            if let Some(p) = poisoned {
                *p = true;
            }
            RResult::RErr(RString::from(format!("plugin `{name}` panicked in {what}: {msg}")))
        }
    }
}

fn descriptor(info: PluginInfo, kind: u8) -> FfiDescriptor {
    FfiDescriptor {
        name: info.name.into(),
        kind,
        version: info.version.into(),
        description: info.description.into(),
        config_keys: info
            .config_keys
            .iter()
            .map(|k| FfiConfigKey {
                name: k.name.as_str().into(),
                ty: k.ty as u8,
                default: k.default.as_ref().map(|v| v.to_string()).unwrap_or_default().into(),
                doc: k.doc.as_str().into(),
            })
            .collect(),
        capabilities: info.capabilities.iter().map(|c| RString::from(c.as_str())).collect(),
    }
}

/// What a plugin declares beyond [`PluginInfo`] (its trait's default methods).
struct Extra {
    machine_checks: extern "C" fn() -> RVec<FfiMachineCheck>,
    default_source: bool,
    backends: Vec<BackendName>,
}

/// The descriptor extension of a plugin declaring `info` and `extra`. Built on each call and
/// leaked (the host calls it once per load), so its fields can be `'static`.
fn descriptor_ext(info: PluginInfo, extra: Extra) -> FfiDescriptorExtRef {
    // Built once per load and leaked, as the extension's fields must be `Copy`.
    let schema: &'static str = Box::leak(ConfigSchema::new(info.config_keys).to_toml().into_boxed_str());
    let backends: Vec<FfiBackendName> = extra
        .backends
        .into_iter()
        .map(|b| FfiBackendName { id: b.id, name: RStr::from_str(Box::leak(b.name.into_boxed_str())) })
        .collect();
    FfiDescriptorExt {
        sdk_version: RStr::from_str(SDK_VERSION),
        config_schema: RStr::from_str(schema),
        record_layout: crate::model::record_layout(),
        machine_checks: extra.machine_checks,
        default_source: extra.default_source,
        backends: RSlice::from_slice(Box::leak(backends.into_boxed_slice())),
    }
    .leak_into_prefix()
}

/// Runs a plugin's machine checks for the host; a panic in them becomes a failed check.
fn machine_checks(name: &str, checks: impl FnOnce() -> Vec<MachineCheck>) -> RVec<FfiMachineCheck> {
    let checks = panics::catch(checks).unwrap_or_else(|msg| {
        vec![MachineCheck::fail(
            Capability::named("machine-checks"),
            format!("plugin `{name}` panicked in its machine checks: {msg}"),
            "",
        )]
    });
    checks
        .into_iter()
        .map(|c| FfiMachineCheck {
            capability: c.capability.as_str().into(),
            status: c.status.as_u8(),
            detail: c.detail.into(),
            hint: c.hint.into(),
        })
        .collect()
}

/// Reads the session's correlation backends from the `[session]` table's `backends` array of
/// `{ id, name }` tables (hosts of SDK 0.4 and later).
fn session_backends(s: &toml::Table) -> Vec<BackendName> {
    let Some(list) = s.get("backends").and_then(|v| v.as_array()) else { return Vec::new() };
    list.iter()
        .filter_map(|b| {
            let id = u32::try_from(b.get("id")?.as_integer()?).ok()?;
            Some(BackendName::new(id, b.get("name")?.as_str()?))
        })
        .collect()
}

/// Parses the `create` arguments: `[plugin]` and `[session]` tables.
fn parse_args(args: &str, host: FfiHost) -> PluginResult<CreateContext> {
    let mut doc: toml::Table = args
        .parse()
        .map_err(|e| PluginError::new(format!("failed to parse plugin arguments from the host: {e}")))?;
    let plugin = match doc.remove("plugin") {
        Some(toml::Value::Table(t)) => t,
        _ => toml::Table::new(),
    };
    let s = match doc.remove("session") {
        Some(toml::Value::Table(t)) => t,
        _ => toml::Table::new(),
    };
    let strs = |k: &str| -> Vec<String> {
        s.get(k)
            .and_then(|v| v.as_array())
            .map(|a| a.iter().filter_map(|x| x.as_str().map(str::to_owned)).collect())
            .unwrap_or_default()
    };
    let session = SessionInfo {
        output_dir: PathBuf::from(s.get("output_dir").and_then(|v| v.as_str()).unwrap_or(".")),
        command: strs("command"),
        sources: strs("sources"),
        sinks: strs("sinks"),
        backends: session_backends(&s),
        start_time: s.get("start_time").and_then(|v| v.as_integer()).unwrap_or(0) as u64,
        verbosity: s.get("verbosity").and_then(|v| v.as_integer()).unwrap_or(0) as u8,
        // Hosts that predate capture windows leave these out.
        start_paused: s.get("start_paused").and_then(|v| v.as_bool()).unwrap_or(false),
        capture_range: s.get("capture_range").and_then(|v| v.as_str()).unwrap_or("").to_owned(),
        capture_range_end: s.get("capture_range_end").and_then(|v| v.as_str()).unwrap_or("").to_owned(),
    };
    Ok(CreateContext {
        config: PluginConfig::from_table(plugin),
        session,
        emitter: Emitter::new(host),
        log: Logger::new(host),
    })
}

fn instance<'a, T>(inst: FfiInstance) -> &'a mut Instance<T> {
    // SAFETY: the host only passes back pointers that `create_*` returned for this module, never
    // after `destroy`, and calls entry points of one instance from one thread at a time.
    unsafe { &mut *(inst.0 as *mut Instance<T>) }
}

fn with_plugin<T, R>(
    inst: FfiInstance,
    what: &str,
    f: impl FnOnce(&mut T, &mut Vec<Record>) -> PluginResult<R>,
) -> FfiResult<R> {
    let i = instance::<T>(inst);
    let name = i.name;
    let Some(plugin) = i.plugin.as_mut() else {
        return RResult::RErr(RString::from(format!("plugin `{name}` has no live instance")));
    };
    guarded(name, what, Some(&mut i.poisoned), || f(plugin, &mut i.scratch))
}

fn boxed<T>(name: &'static str, plugin: T, host: FfiHost) -> FfiInstance {
    let b = Box::new(Instance { name, plugin: Some(plugin), poisoned: false, scratch: Vec::new() });
    let ptr = Box::into_raw(b) as *mut c_void;
    panics::register(ptr as usize, name, host);
    FfiInstance(ptr)
}

extern "C" fn destroy<T>(inst: FfiInstance) {
    if inst.0.is_null() {
        return;
    }
    // SAFETY: `inst` came from `boxed::<T>` and the host calls destroy exactly once.
    let b = unsafe { Box::from_raw(inst.0 as *mut Instance<T>) };
    let name = b.name;
    // Dropping the plugin runs its code: contain a panic there too.
    let _ = guarded(name, "drop", None, move || {
        drop(b);
        Ok(())
    });
    panics::unregister(inst.0 as usize);
}

// ---- sources ----

extern "C" fn describe_source<S: Source>() -> FfiDescriptor {
    descriptor(S::info(), KIND_SOURCE)
}

extern "C" fn describe_ext_source<S: Source>() -> FfiDescriptorExtRef {
    let extra = Extra {
        machine_checks: machine_checks_source::<S>,
        default_source: S::default_source(),
        backends: S::backends(),
    };
    descriptor_ext(S::info(), extra)
}

extern "C" fn machine_checks_source<S: Source>() -> RVec<FfiMachineCheck> {
    machine_checks(S::info().name, S::machine_checks)
}

extern "C" fn create_source<S: Source>(args: RStr<'_>, host: FfiHost) -> FfiResult<FfiInstance> {
    let name = S::info().name;
    guarded(name, "create", None, || Ok(boxed(name, S::create(parse_args(args.as_str(), host)?)?, host)))
}

extern "C" fn prepare_source<S: Source>(inst: FfiInstance, env: &mut FfiEnv) -> FfiResult<()> {
    with_plugin::<S, _>(inst, "prepare", |p, _| {
        let mut e = TargetEnv::default();
        p.prepare(&mut e)?;
        env.extend(
            e.vars().iter().map(|(k, v)| Tuple2(RString::from(k.as_str()), RString::from(v.as_str()))),
        );
        Ok(())
    })
}

extern "C" fn start_source<S: Source>(inst: FfiInstance, pid: u32) -> FfiResult<()> {
    with_plugin::<S, _>(inst, "start", |p, _| p.start(pid))
}

extern "C" fn stop_source<S: Source>(inst: FfiInstance) -> FfiResult<()> {
    with_plugin::<S, _>(inst, "stop", |p, _| p.stop())
}

extern "C" fn set_capture_source<S: Source>(inst: FfiInstance, on: bool) -> FfiResult<()> {
    with_plugin::<S, _>(inst, "set_capture", |p, _| p.set_capture(on))
}

extern "C" fn attach_source<S: Source>(inst: FfiInstance, pid: u32, tree: bool) -> FfiResult<()> {
    with_plugin::<S, _>(inst, "attach", |p, _| p.attach(pid, tree))
}

extern "C" fn not_a_sink(_inst: FfiInstance, _batch: RSlice<'_, u8>) -> FfiResult<()> {
    RResult::RErr(RString::from("this plugin is a source, not a sink"))
}

extern "C" fn not_a_sink_records(_inst: FfiInstance, _records: FfiRecords) -> FfiResult<()> {
    RResult::RErr(RString::from("this plugin is a source, not a sink"))
}

extern "C" fn not_a_sink_finish(_inst: FfiInstance) -> FfiResult<RVec<RString>> {
    RResult::RErr(RString::from("this plugin is a source, not a sink"))
}

/// Builds the root module of source `S`, declaring ABI version `abi_version`.
#[doc(hidden)]
pub fn source_module<S: Source>(abi_version: u32) -> PluginModuleRef {
    PluginModule {
        abi_version,
        describe: describe_source::<S>,
        create: create_source::<S>,
        prepare: prepare_source::<S>,
        start: start_source::<S>,
        stop: stop_source::<S>,
        consume: not_a_sink,
        finish: not_a_sink_finish,
        destroy: destroy::<S>,
        describe_ext: describe_ext_source::<S>,
        consume_records: not_a_sink_records,
        set_capture: set_capture_source::<S>,
        attach: attach_source::<S>,
    }
    .leak_into_prefix()
}

// ---- sinks ----

extern "C" fn describe_sink<K: Sink>() -> FfiDescriptor {
    descriptor(K::info(), KIND_SINK)
}

extern "C" fn describe_ext_sink<K: Sink>() -> FfiDescriptorExtRef {
    let extra =
        Extra { machine_checks: machine_checks_sink::<K>, default_source: false, backends: Vec::new() };
    descriptor_ext(K::info(), extra)
}

extern "C" fn machine_checks_sink<K: Sink>() -> RVec<FfiMachineCheck> {
    machine_checks(K::info().name, K::machine_checks)
}

extern "C" fn create_sink<K: Sink>(args: RStr<'_>, host: FfiHost) -> FfiResult<FfiInstance> {
    let name = K::info().name;
    guarded(name, "create", None, || Ok(boxed(name, K::create(parse_args(args.as_str(), host)?)?, host)))
}

extern "C" fn consume_sink<K: Sink>(inst: FfiInstance, batch: RSlice<'_, u8>) -> FfiResult<()> {
    with_plugin::<K, _>(inst, "consume", |p, scratch| {
        scratch.clear();
        for r in Decoder::new(batch.as_slice()) {
            scratch.push(
                r.map_err(|e| PluginError::new(format!("failed to decode a batch from the host: {e}")))?,
            );
        }
        p.consume(scratch)
    })
}

extern "C" fn consume_records_sink<K: Sink>(inst: FfiInstance, records: FfiRecords) -> FfiResult<()> {
    with_plugin::<K, _>(inst, "consume", |p, _| {
        // SAFETY: the host lends records it keeps alive for the whole call (`FfiRecords::lend`).
        match unsafe { records.records() } {
            Some(records) => p.consume(records),
            None => Err(PluginError::new(
                "the host lent records of another layout (its build differs from this plugin's); \
                 this is a host bug: it must send encoded batches through `consume` instead",
            )),
        }
    })
}

extern "C" fn finish_sink<K: Sink>(inst: FfiInstance) -> FfiResult<RVec<RString>> {
    with_plugin::<K, _>(inst, "finish", |p, _| {
        Ok(p.finish()?.iter().map(|f| RString::from(f.to_string_lossy().as_ref())).collect())
    })
}

extern "C" fn not_a_source_prepare(_inst: FfiInstance, _env: &mut FfiEnv) -> FfiResult<()> {
    RResult::RErr(RString::from("this plugin is a sink, not a source"))
}

extern "C" fn not_a_source(_inst: FfiInstance, _pid: u32) -> FfiResult<()> {
    RResult::RErr(RString::from("this plugin is a sink, not a source"))
}

extern "C" fn not_a_source_set_capture(_inst: FfiInstance, _on: bool) -> FfiResult<()> {
    RResult::RErr(RString::from("this plugin is a sink, not a source"))
}

extern "C" fn not_a_source_attach(_inst: FfiInstance, _pid: u32, _tree: bool) -> FfiResult<()> {
    RResult::RErr(RString::from("this plugin is a sink, not a source"))
}

extern "C" fn not_a_source_stop(_inst: FfiInstance) -> FfiResult<()> {
    RResult::RErr(RString::from("this plugin is a sink, not a source"))
}

/// Builds the root module of sink `K`, declaring ABI version `abi_version`.
#[doc(hidden)]
pub fn sink_module<K: Sink>(abi_version: u32) -> PluginModuleRef {
    PluginModule {
        abi_version,
        describe: describe_sink::<K>,
        create: create_sink::<K>,
        prepare: not_a_source_prepare,
        start: not_a_source,
        stop: not_a_source_stop,
        consume: consume_sink::<K>,
        finish: finish_sink::<K>,
        destroy: destroy::<K>,
        describe_ext: describe_ext_sink::<K>,
        consume_records: consume_records_sink::<K>,
        set_capture: not_a_source_set_capture,
        attach: not_a_source_attach,
    }
    .leak_into_prefix()
}

/// Exports a [`Source`] or [`Sink`] type as this library's plugin. Use once per `cdylib`:
///
/// ```ignore
/// xpuprof_sdk::export_plugin!(source: MySource);
/// // or
/// xpuprof_sdk::export_plugin!(sink: MySink);
/// ```
#[macro_export]
macro_rules! export_plugin {
    (source: $ty:ty) => {
        $crate::__export_root_module!($crate::export::source_module::<$ty>($crate::abi::ABI_VERSION));
    };
    (sink: $ty:ty) => {
        $crate::__export_root_module!($crate::export::sink_module::<$ty>($crate::abi::ABI_VERSION));
    };
    // For xpuprof's own ABI tests: a plugin that claims another ABI version.
    (source: $ty:ty, abi_version = $v:expr) => {
        $crate::__export_root_module!($crate::export::source_module::<$ty>($v));
    };
}

#[doc(hidden)]
#[macro_export]
macro_rules! __export_root_module {
    ($module:expr) => {
        #[doc(hidden)]
        fn __xpuprof_root_module() -> $crate::abi::PluginModuleRef {
            $module
        }

        /// The library header `abi_stable` looks up (see `xpuprof_sdk::abi::ROOT_MODULE_SYMBOL`).
        #[no_mangle]
        #[allow(non_upper_case_globals)]
        pub static _1as_0lib_1header_0root_bmodule_bloader: $crate::abi::__private::LibHeader = {
            extern "C" fn __xpuprof_erased_module() -> $crate::abi::__private::RootModuleResult {
                $crate::abi::__private::abi_stable::library::__call_root_module_loader(__xpuprof_root_module)
            }
            // SAFETY: the constructor returns the `PluginModuleRef` the header is typed with, and
            // the layout is checked by the host at load time (`CheckTypeLayout::Yes`).
            unsafe {
                $crate::abi::__private::LibHeader::from_constructor::<$crate::abi::PluginModuleRef>(
                    __xpuprof_erased_module,
                    $crate::abi::__private::abi_stable::library::CheckTypeLayout::Yes,
                )
            }
        };
    };
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::backend;
    use crate::CheckStatus;

    #[test]
    fn sinks_get_the_backend_names_the_host_passes_and_the_sdks_own() {
        let table: toml::Table = "backends = [{ id = 300, name = \"npu\" }, { id = -1, name = \"bad\" }]\n\
                                  [x]\n"
            .parse()
            .unwrap();
        let session = SessionInfo { backends: session_backends(&table), ..SessionInfo::default() };
        assert_eq!(session.backends, [BackendName::new(300, "npu")]);
        assert_eq!(session.backend_name(300), "npu");
        assert_eq!(session.backend_name(backend::UNCORRELATED), "uncorrelated");
        assert_eq!(session.backend_name(backend::TEST), "test");
        assert_eq!(session.backend_name(301), "backend-301");
        // A host that predates backend names sends none.
        assert!(session_backends(&toml::Table::new()).is_empty());
    }

    #[test]
    fn a_panic_in_machine_checks_is_a_failed_check() {
        let checks = machine_checks("p", || panic!("boom"));
        assert_eq!(checks.len(), 1);
        assert_eq!(CheckStatus::from_u8(checks[0].status), CheckStatus::Fail);
        assert!(
            checks[0].detail.contains("plugin `p` panicked in its machine checks: boom"),
            "{:?}",
            checks[0]
        );
    }
}
