//! `xpuprof check-plugin`: runs one plugin library through its whole lifecycle in a harness and
//! reports, in the plugin author's terms, what breaks the contract: loading and ABI checks, the
//! descriptor and config schema, every entry point (errors, panics, slow and blocked calls), and
//! for sources the record rules (ids defined before use and never redefined, clock domains
//! declared and paired, session-clock timestamps, host-only fields), then the records go through
//! the host's own pipeline to find what the host would lose (device work its launch never
//! reaches). Sinks are fed a canonical session the way the host delivers one, plus a record kind
//! from a future SDK. Every distinct problem is reported (repeats of one are counted), and
//! `--keep DIR` keeps the records and outputs the check produced.
//!
//! Used by the `check-plugin` command, which the `xpuprof-plugin-test` crate runs from a
//! plugin's own `cargo test`.

pub mod isolate;
mod keep;
mod lifecycle;
mod losses;
mod report;
mod rules;

use std::path::{Path, PathBuf};
use std::time::Duration;

pub use report::{Finding, Report, Severity};
pub use rules::StreamRules;

use crate::host::{discovery, loader};

/// How to run the check.
#[derive(Debug, Clone)]
pub struct CheckOptions {
    /// A config file (`xpuprof.toml` format) whose `[source.NAME]`/`[sink.NAME]` table to use.
    pub config_file: Option<PathBuf>,
    /// The target a source records (default `sleep 0.2`).
    pub command: Vec<String>,
    /// A call slower than this is a warning.
    pub slow: Duration,
    /// A call that has not returned after this is abandoned and an error.
    pub timeout: Duration,
    /// Expect the file name rule `libxpuprof_plugin_<name>.so` (off for renamed test builds).
    pub file_name_rule: bool,
    /// `--set KIND.PLUGIN.KEY=VALUE` over the config file's table ([`crate::overrides`]).
    pub sets: Vec<String>,
    /// Keep a source's records, a sink's input and outputs here.
    pub keep: Option<PathBuf>,
    /// A sink is given these records (the SDK's record encoding) instead of the canonical session.
    pub input: Option<PathBuf>,
}

impl Default for CheckOptions {
    fn default() -> Self {
        Self {
            config_file: None,
            command: vec!["sleep".into(), "0.2".into()],
            slow: Duration::from_secs(1),
            timeout: Duration::from_secs(10),
            file_name_rule: true,
            sets: Vec::new(),
            keep: None,
            input: None,
        }
    }
}

/// Checks the plugin library at `path`; `progress` hears the name of each step as it starts.
pub fn check_plugin(path: &Path, opts: &CheckOptions, progress: &mut dyn FnMut(&str)) -> Report {
    let mut report = Report::default();
    progress("load");
    let plugin = match loader::load(path) {
        Ok(p) => p,
        Err(e) => {
            report.error("the library loads as an xpuprof plugin", format!("{}: {e}", path.display()));
            return report;
        }
    };
    let meta = &plugin.meta;
    report.plugin = Some(format!("{} `{}`", meta.kind.as_str(), meta.name));
    let iface = match plugin.module {
        loader::PluginEntry::Rust(_) => format!("Rust SDK {}", meta.sdk_version.as_deref().unwrap_or("0.1")),
        loader::PluginEntry::C(_) => format!(
            "C ABI, header {}",
            meta.sdk_version.as_deref().unwrap_or("?").trim_end_matches(" (C header)")
        ),
    };
    report.pass(
        "the library loads as an xpuprof plugin",
        format!("{} `{}` {}, plugin ABI {}, {iface}", meta.kind.as_str(), meta.name, meta.version, meta.abi),
    );
    descriptor(path, &plugin, opts, &mut report);
    let Some(table) = config(&plugin, opts, &mut report) else { return report };
    lifecycle::run(&plugin, table, opts, &mut report, progress);
    report
}

fn descriptor(path: &Path, plugin: &loader::LoadedPlugin, opts: &CheckOptions, report: &mut Report) {
    let meta = &plugin.meta;
    let want = format!("{}{}{}", discovery::FILE_PREFIX, meta.name.replace('-', "_"), discovery::FILE_SUFFIX);
    let file = path.file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_default();
    if opts.file_name_rule && file != want {
        report.warn(
            "the file is named after the plugin",
            format!(
                "the file is `{file}`; discovery only looks at libxpuprof_plugin_*.so, and `xpuprof` explains a \
                 load failure of plugin `{}` only for `{want}`: name it that",
                meta.name
            ),
        );
    }
    if meta.description.trim().is_empty() {
        report.warn("the descriptor is complete", "the description is empty; `xpuprof plugins` shows it");
    }
    if meta.version.trim().is_empty() {
        report.warn("the descriptor is complete", "the version is empty; `xpuprof plugins` shows it");
    }
    let undocumented: Vec<&str> =
        meta.config.keys().iter().filter(|k| k.doc.trim().is_empty()).map(|k| k.name.as_str()).collect();
    if !undocumented.is_empty() {
        report.warn(
            "config keys are documented",
            format!(
                "keys without a doc line: {} (`xpuprof plugins` and xpuprof.toml.example show it)",
                undocumented.join(", ")
            ),
        );
    }
}

/// The config table the check creates the plugin with: the file's, checked like the host does.
fn config(plugin: &loader::LoadedPlugin, opts: &CheckOptions, report: &mut Report) -> Option<toml::Table> {
    let meta = &plugin.meta;
    let file = opts.config_file.as_deref().map(crate::config::FileConfig::load).transpose();
    let file = file.and_then(|f| crate::overrides::apply(f, &opts.sets));
    let file = match file {
        Ok(f) => f,
        Err(e) => {
            report.error("the config is valid", format!("{e}"));
            return None;
        }
    };
    match crate::config::plugin_table(file.as_ref(), meta.kind, &meta.name, &meta.config) {
        Ok(mut table) => {
            if meta.host_fills_defaults {
                crate::config::fill_defaults(&mut table, &meta.config);
            }
            report.pass(
                "the config is valid",
                format!(
                    "{} keys declared, defaults within their own constraints{}",
                    meta.config.keys().len(),
                    if opts.config_file.is_some() || !opts.sets.is_empty() {
                        ", the given table accepted"
                    } else {
                        ""
                    }
                ),
            );
            Some(table)
        }
        Err(e) => {
            report.error("the config is valid", format!("{e}"));
            None
        }
    }
}
