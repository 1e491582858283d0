//! # xpuprof-sdk: writing xpuprof plugins
//!
//! xpuprof is a small host that loads **source** plugins (which record events: eBPF CPU stacks,
//! CUPTI, ROCm, Level Zero, ...) and **sink** plugins (which write outputs: folded stacks, Chrome
//! trace, archive, ...) from shared libraries at run time. This crate is the whole contract: the
//! event model, the plugin traits, and the stable ABI they travel through. It depends on almost
//! nothing, so a plugin builds in seconds. C and C++ authors use the same contract through
//! `sdk/include/xpuprof/plugin.h` (same records, same checks, same host).
//!
//! ## Step by step
//!
//! The full walk-through, for Rust and for C/C++ and for in-target agents, with the installed
//! layout, is the plugin tutorial: `PREFIX/share/xpuprof/plugin-tutorial.md` in an
//! installation (`scripts/install.sh`), `docs/plugin-tutorial.md` in xpuprof's repository. In
//! short:
//!
//! 0. **Install xpuprof** with `scripts/install.sh --prefix PREFIX`: besides `PREFIX/bin/xpuprof`
//!    it installs this crate's sources (`PREFIX/share/xpuprof/sdk`), the conformance kit
//!    (`PREFIX/share/xpuprof/plugin-test`), the C headers (`PREFIX/include/xpuprof`), the C
//!    agent kit (`PREFIX/lib/libxpuprof_agent.so`), `PREFIX/lib/pkgconfig/xpuprof.pc` and the C
//!    examples (`PREFIX/share/xpuprof/examples`).
//! 1. **Generate a plugin** that builds and passes the conformance kit as it is:
//!    `xpuprof new-plugin --kind source --lang rust mysource` (or `--kind sink`, or `--lang c`
//!    for a C file and its Makefile on `pkg-config`). It uses the kit installed beside the
//!    running xpuprof. Then `cd mysource && cargo test` (C: `make check`).
//! 2. **Keep the name rule.** The host loads `libxpuprof_plugin_<name>.so` files only
//!    (`-` in the name becomes `_`): `[lib] name = "xpuprof_plugin_mysource"` and
//!    `crate-type = ["cdylib", "rlib"]`, and [`PluginInfo::name`] is what users type
//!    (`--source mysource`, `[source.mysource]`).
//! 3. **Declare the config** once with [`plugin_config!`](crate::plugin_config): keys, types,
//!    defaults, ranges and docs. The host checks the user's table before anything runs, and
//!    `xpuprof plugins` documents it.
//! 4. **Implement the lifecycle** ([`Source`] or [`Sink`]; the rules are below): a source emits
//!    definitions and events through its [`Emitter`], a sink reads them in `consume`.
//! 5. **Test** with the conformance kit, `xpuprof-plugin-test`, from your own `cargo test`
//!    (the generated `tests/conformance.rs`; it runs `xpuprof check-plugin`): the whole
//!    lifecycle in the host's harness, with the id, ordering and clock rules, panics, slow and
//!    blocked calls, in your terms. C authors run the same checks with
//!    `xpuprof check-plugin ./libxpuprof_plugin_x.so`.
//! 6. **Run it**: `xpuprof --plugin-dir target/debug --source mysource --sink folded -- ./app`;
//!    `xpuprof plugins` says whether it loads and why not.
//!
//! Complete examples, each loaded by the real host in xpuprof's tests: `examples/rust-source-fake`
//! (a fictitious accelerator: devices, launch stacks, kernels in a device clock, a loss),
//! `examples/rust-sink-speedscope` (a speedscope profile), and their C twins
//! `examples/c-source-acme` and `examples/c-sink-csv`, with a whole backend: `examples/c-agent-acme`
//! (a third-party in-target agent on the C agent kit) and `examples/rust-source-acme-agent` (the
//! source that decodes its stream with [`wire`](crate#agent-streams), feature `agent-stream`);
//! these are installed in `PREFIX/share/xpuprof/examples`.
//!
//! ## Agent streams
//!
//! A source whose agent runs inside the target (on the C agent kit, `xpuprof/agent.h`) reads
//! the agent's stream with the `agent-stream` feature: `xpuprof_sdk::wire` is the stream's crate,
//! and `wire::stream::StreamReader` turns one connection's bytes into typed messages (hello,
//! module map, launch stacks and entries, the agent's own messages 128–255, losses, bye). The
//! byte layout is `PREFIX/share/xpuprof/agent-stream.md` (`docs/agent-stream.md`).
//!
//! ## A plugin in five lines
//!
//! ```ignore
//! use xpuprof_sdk::prelude::*;
//!
//! struct Hello { emitter: Emitter, names: StringInterner }
//!
//! impl Source for Hello {
//!     fn info() -> PluginInfo {
//!         PluginInfo { name: "hello", version: env!("CARGO_PKG_VERSION"),
//!                      description: "says hello", config_keys: vec![], capabilities: vec![] }
//!     }
//!     fn create(ctx: CreateContext) -> PluginResult<Self> {
//!         Ok(Self { emitter: ctx.emitter, names: StringInterner::default() })
//!     }
//!     fn start(&mut self, pid: u32) -> PluginResult<()> { Ok(()) }
//!     fn stop(&mut self) -> PluginResult<()> { self.emitter.flush(); Ok(()) }
//! }
//!
//! xpuprof_sdk::export_plugin!(source: Hello);
//! ```
//!
//! Build it as a `cdylib` (`[lib] crate-type = ["cdylib"]`) and put the `.so` in a directory
//! named by `--plugin-dir` or `XPUPROF_PLUGIN_PATH`. `xpuprof plugins` shows whether it loads.
//!
//! ## Lifecycle and threading
//!
//! - **Sources**: `create` → `prepare` (add environment variables for the target, e.g. an
//!   injection library path) → `start(pid)` (the target is forked but held before `exec`, so a
//!   source can attach before the first instruction) → `stop` (the target and all its children
//!   exited, or Ctrl+C) → drop. The host calls these on one thread. Events may be emitted from
//!   any thread between `start` and the return of `stop`; `stop` must flush everything.
//! - **Capture windows and attach** (sources, optional): between `start` and `stop` the host may
//!   call [`Source::set_capture`] to open (`true`) and close (`false`) capture windows; outside a
//!   window the source is dormant and costs the target nothing measurable (detach the vendor's
//!   tracing, close perf events). A session that starts with no window says so in
//!   [`SessionInfo::start_paused`]; sources that implement the program's own markers read
//!   [`SessionInfo::capture_range`] and report each window as a [`model::CaptureWindow`] record.
//!   For `xpuprof attach`, [`Source::attach`] replaces `prepare` + `start` on a running process,
//!   and `stop` must leave it as it was. Both default to a refusal: the host then records the
//!   whole run with that source, or attaches without it.
//! - **Sinks**: `create` → `consume(records)` any number of times → `finish` → drop. Records come
//!   in order: a definition before any event that uses it, ids session-wide, timestamps in the
//!   session clock, device work already joined to its launch by the host's correlator.
//!
//! ## Describing what the plugin needs
//!
//! Besides [`PluginInfo`], a plugin tells the host about itself through default methods of
//! [`Source`] and [`Sink`]; the host itself knows no backend:
//!
//! - `machine_checks`: one [`MachineCheck`] per [`Capability`] it declares (ok, warn or fail,
//!   what was found, and the fix), printed by `xpuprof doctor`;
//! - `default_source` (sources): run when the user names no source, if every check passed;
//! - `backends` (sources): the name reports give the correlation backend it issues ids for
//!   ([`BackendName`]); sinks read it back with [`SessionInfo::backend_name`].
//!
//! ## Events and ids
//!
//! See [`model`]. Definitions (strings, processes, threads, devices, streams, modules, frames,
//! stacks) are sent once and referenced by `u32` id; 0 means "none". A source numbers its own
//! definitions from 1 in one id space per kind; the host renumbers them, so sources never
//! coordinate. Frames may be sent as module + file offset: the host symbolises them (with
//! inlined functions, demangled) before sinks see them.
//!
//! Correlation: an API call, its [`model::LaunchSite`] and the [`model::DeviceOp`]s it caused
//! share a [`model::Correlation`] (backend + the backend's own id); the key also includes the
//! process. The host joins on exact keys only; unmatched work is counted, never dropped. The
//! three may come in any order: device work waits (up to 2 s) for its launch site, also when
//! the API call came first and no site of that process came yet, so a launch keeps its stack
//! whichever the source emits first. `xpuprof check-plugin` runs a source's records through the
//! host's correlator and names device work that reaches no launch.
//!
//! Losses: anything a plugin drops (full buffers, records the vendor library dropped, probes that
//! failed to attach) must be reported as a [`model::Loss`] record. Nothing is lost silently.
//!
//! ## Clocks
//!
//! Timestamps are nanoseconds of the session clock, `CLOCK_MONOTONIC` ([`clock::now_ns`]). A
//! source whose device stamps its own ticks leaves them as they are: it declares the domain once
//! with a [`model::ClockDomainDef`] (tick rate, and valid bits for counters that wrap), names it
//! in each record's `clock` field, and emits [`model::ClockSync`] pairs (a reading of its clock
//! and of the session clock at the same moment), at least one at start and one at stop. The host
//! unwraps and converts; records of a domain never paired are dropped and reported as a loss.
//!
//! ## What the host does for you
//!
//! - renumbers ids: each source numbers its own from 1, and identical definitions from
//!   different sources share one session id;
//! - converts every clock domain to the session clock;
//! - turns `Virtual` frames (process addresses) into module + file offset, symbolises them with
//!   inlined functions, and demangles;
//! - gives every mangled name (a kernel's `_Z...`) its demangled text for people in
//!   [`model::StrDef::display`], once, under the session's one `demangle` switch: a source sends
//!   names as its runtime reports them, a sink shows [`model::StrDef::shown`] and still has the
//!   raw [`model::StrDef::text`];
//! - joins device work to its launch site and API call by (backend, process, correlation id)
//!   and fills [`model::DeviceOp::launch`]; what it cannot join is counted and shown;
//! - hands every sink the same sequence, each definition before its first use.
//!
//! ## Ownership of buffers
//!
//! [`Emitter::emit`] encodes into the emitter's own buffer; batches are copied by the host when
//! handed over, so the plugin keeps ownership of everything it passes. A sink's `consume` slice
//! is only valid during the call: copy what you keep.
//!
//! ## Errors and panics
//!
//! Entry points return [`PluginResult`]; write messages as `failed to <verb> <object>: <cause>`
//! with a hint when the fix is known. Panics never cross the ABI: the export glue catches them
//! and reports `plugin `name` panicked in <entry point>: <message> (at file:line)`; the host
//! then disables that plugin and the session goes on without it. A panic in a thread the plugin
//! started (which no entry point catches) is logged as an error naming the plugin and the
//! thread; that thread's work is lost, so catch panics in your threads where you can recover.
//!
//! **Plugins must unwind.** Catching a panic needs the unwinding panic runtime: never set
//! `panic = "abort"` in a profile that builds a plugin. Such a library would abort xpuprof (and
//! lose every output) on its first panic, so the host refuses it at load time, saying why.
//!
//! Text a plugin hands the host is bounded: log messages and error strings are cut at 4 KiB,
//! string definitions at 64 KiB (the cut says how many bytes it dropped).
//!
//! ## ABI stability
//!
//! What a plugin may rely on, and how it is tested:
//!
//! - **Identity is [`abi::ABI_VERSION`]**, never this crate's version. A plugin built with any
//!   SDK of the same ABI loads into any host of that ABI, newer or older; a plugin of another ABI
//!   is refused with a message naming both versions. `xpuprof plugins` shows each plugin's ABI
//!   and SDK version.
//! - **Growth by appending only.** The root module ([`abi::PluginModule`]) and the descriptor
//!   extension ([`abi::FfiDescriptorExt`]) are prefix types checked at load time: new entry
//!   points and descriptor fields are appended at the end, and a reader sees each as absent
//!   (`None`) in plugins built before it existed, so newer hosts treat them as optional. The
//!   record encoding ([`codec`]) only grows by appending record kinds and fields, which older
//!   readers skip.
//! - **Tested both ways in CI** against a frozen copy of SDK 0.1.0 (`tests/abi/` in xpuprof's
//!   repository): today's host loads and runs a plugin built with it, and a host built with it
//!   loads and runs today's plugins. The rules for changing the ABI are in [`abi`]'s docs.
//! - This crate builds on its own, outside xpuprof's workspace, from three dependencies
//!   (`abi_stable`, `toml`, `libc`), and a fourth with the `agent-stream` feature (`xpuprof-wire`,
//!   installed beside it); the repository's tests build it that way.
//! - Each interface's promise, deprecation policy and tests (plugin ABI, C header, agent kit,
//!   agent stream) are in `PREFIX/share/xpuprof/stability.md` (`docs/stability.md`).

pub mod abi;
pub mod clock;
pub mod codec;
pub mod config;
pub mod emit;
#[doc(hidden)]
pub mod export;
pub mod hash;
mod machine;
pub mod model;
pub mod output;
mod panics;
pub mod plugin;
pub mod trampoline;
pub mod trust;
/// The stream of an in-target agent (feature `agent-stream`): the `xpuprof-wire` crate, for the
/// source plugin that decodes its agent's stream. [`wire::stream::StreamReader`] reads one
/// connection's messages; the byte layout is `agent-stream.md` (`PREFIX/share/xpuprof`).
#[cfg(feature = "agent-stream")]
pub use xpuprof_wire as wire;

pub use config::{ConfigKey, ConfigSchema, ConfigType, PluginConfig, TypedConfig};
pub use emit::{Emitter, Level, Logger, StringInterner};
pub use machine::{CheckStatus, MachineCheck};
pub use plugin::{
    BackendName, Capability, CreateContext, PluginError, PluginInfo, PluginKind, PluginResult, SessionInfo,
    Sink, Source, TargetEnv,
};

/// Everything a plugin author usually needs.
pub mod prelude {
    pub use crate::config::{ConfigKey, ConfigSchema, ConfigType, PluginConfig, TypedConfig};
    pub use crate::emit::{Emitter, Logger, StringInterner};
    pub use crate::machine::{CheckStatus, MachineCheck};
    pub use crate::model::*;
    pub use crate::plugin::{
        BackendName, Capability, CreateContext, PluginError, PluginInfo, PluginResult, SessionInfo, Sink,
        Source, TargetEnv,
    };
}

#[cfg(test)]
mod tests {
    #[test]
    fn root_module_symbol_matches_abi_stable() {
        assert_eq!(crate::abi::ROOT_MODULE_SYMBOL, abi_stable::library::ROOT_MODULE_LOADER_NAME);
    }
}
