//! `xpuprof plugins` and `xpuprof doctor`: what was found, and what this machine offers.

use std::fmt::Write;

use xpuprof_sdk::abi::ABI_VERSION;
use xpuprof_sdk::{CheckStatus, PluginKind};

use crate::host::discovery::{self, Searched};
use crate::host::{PluginCheck, Registry, SearchPath};

/// The `xpuprof plugins` listing.
pub fn plugins_report(reg: &Registry) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "xpuprof {} speaks plugin ABI {ABI_VERSION}", env!("CARGO_PKG_VERSION"));
    for kind in [PluginKind::Source, PluginKind::Sink] {
        let _ = writeln!(s, "\n{}s:", kind.as_str());
        let mut any = false;
        for p in reg.plugins.iter().filter(|p| p.meta.kind == kind) {
            any = true;
            let sdk =
                p.meta.sdk_version.as_deref().unwrap_or("0.1 (predates SDK versions in the descriptor)");
            let _ = writeln!(
                s,
                "  {:<12} {:<8} ABI {}  SDK {sdk}  {}\n  {:<12} {}",
                p.meta.name,
                p.meta.version,
                p.meta.abi,
                p.path.display(),
                "",
                p.meta.description
            );
            if !p.meta.capabilities.is_empty() {
                let _ = writeln!(s, "  {:<12} needs: {}", "", p.meta.capabilities.join(", "));
            }
            for k in p.meta.config.keys() {
                let d = k.default.as_ref().map_or_else(|| " (unset)".to_owned(), |v| format!(" = {v}"));
                let _ = writeln!(s, "  {:<12}   {}{d}  ({}) {}", "", k.name, k.describe(), k.doc);
            }
        }
        if !any {
            let _ = writeln!(s, "  (none)");
        }
    }
    for p in &reg.shadowed {
        let _ = writeln!(
            s,
            "\nshadowed (an earlier plugin has the same name): {} at {}",
            p.meta.name,
            p.path.display()
        );
    }
    if !reg.failures.is_empty() {
        let _ = writeln!(s, "\nnot loadable:");
        for f in &reg.failures {
            let _ = writeln!(s, "  {}: {}", f.path.display(), f.reason);
        }
    }
    s
}

/// Where `xpuprof plugins` looked: with `verbose`, every folder searched and, for each of its
/// files, why it was or was not taken; always, a note for each `--plugin-dir` that held no
/// plugin.
pub fn search_report(path: &SearchPath, reg: &Registry, verbose: bool) -> String {
    let searched = discovery::survey(path);
    let mut s = String::new();
    if verbose {
        let _ = writeln!(s, "\nsearched, in this order:");
        for entry in &searched {
            searched_entry(&mut s, entry, reg);
        }
    }
    for entry in searched.iter().filter(|e| e.origin == "--plugin-dir") {
        if entry.files.as_ref().is_ok_and(|f| !f.iter().any(|(_, candidate)| *candidate)) {
            let _ = writeln!(
                s,
                "\nnote: --plugin-dir {} holds no plugin (a file named {}<name>{}); a Rust plugin's \
                 library is put there by `cargo build` (`cargo test` alone does not)",
                entry.dir.display(),
                discovery::FILE_PREFIX,
                discovery::FILE_SUFFIX
            );
        }
    }
    s
}

/// One searched folder and what became of each of its files.
fn searched_entry(s: &mut String, entry: &Searched, reg: &Registry) {
    let _ = writeln!(s, "  {} ({})", entry.dir.display(), entry.origin);
    let files = match &entry.files {
        Ok(files) => files,
        Err(e) => {
            let _ = writeln!(s, "    cannot be read: {e}");
            return;
        }
    };
    let mut others = 0;
    for (file, candidate) in files {
        let name =
            file.file_name().map_or_else(|| file.display().to_string(), |n| n.to_string_lossy().into());
        if !candidate {
            if name.ends_with(discovery::FILE_SUFFIX) {
                let _ = writeln!(
                    s,
                    "    {name}: not taken, not named {}<name>{}",
                    discovery::FILE_PREFIX,
                    discovery::FILE_SUFFIX
                );
            } else {
                others += 1;
            }
            continue;
        }
        let _ = writeln!(s, "    {name}: {}", file_outcome(file, reg));
    }
    if others > 0 {
        let _ = writeln!(s, "    ({others} other files: not taken, not shared libraries)");
    }
}

/// Why the candidate `file` was or was not taken.
fn file_outcome(file: &std::path::Path, reg: &Registry) -> String {
    if let Some(p) = reg.plugins.iter().find(|p| p.path == file) {
        return format!("taken, {} {}", p.meta.kind.as_str(), p.meta.name);
    }
    if let Some(p) = reg.shadowed.iter().find(|p| p.path == file) {
        return format!(
            "not taken, {} {} was found first under the same name",
            p.meta.kind.as_str(),
            p.meta.name
        );
    }
    match reg.failures.iter().find(|f| f.path == file) {
        Some(f) => format!("not taken, cannot be loaded: {}", f.reason),
        None => "not taken".to_owned(),
    }
}

/// The `xpuprof doctor` report: each plugin's machine checks, then what each source's needs
/// come to here. The checks are the plugins' own; xpuprof knows no backend.
pub fn doctor_report(reg: &Registry) -> String {
    let checks = reg.machine_checks();
    let mut s = String::from("machine:\n");
    // SAFETY: geteuid has no preconditions.
    let euid = unsafe { libc::geteuid() };
    let _ = writeln!(s, "  running as uid {euid}{}", if euid == 0 { " (root)" } else { "" });
    for c in &checks {
        let mark = match c.status {
            CheckStatus::Ok => " ok ",
            CheckStatus::Warn => "WARN",
            CheckStatus::Fail => "MISS",
        };
        let _ = writeln!(s, "  [{mark}] {:<11} {}", c.capability, c.detail);
        if !c.hint.is_empty() {
            let _ = writeln!(s, "         {:<11} hint: {}", "", c.hint);
        }
    }
    if checks.is_empty() {
        let _ = writeln!(s, "  (no plugin found checks anything)");
    }
    let _ = writeln!(s, "\nsources:");
    for p in reg.plugins.iter().filter(|p| p.meta.kind == PluginKind::Source) {
        let default = if p.meta.default_source { "  (a default source)" } else { "" };
        let _ = writeln!(s, "  {:<12} {}{default}", p.meta.name, verdict(&checks, &p.meta.capabilities));
    }
    s
}

/// What a source's needs come to here. Capabilities are an open set: one no plugin checks is
/// listed as not checked, not as missing.
fn verdict(checks: &[PluginCheck], needs: &[String]) -> String {
    let known = |c: &String| checks.iter().find(|k| k.capability == *c);
    let missing: Vec<&str> =
        needs.iter().filter(|c| known(c).is_some_and(|k| !k.status.usable())).map(String::as_str).collect();
    let unchecked: Vec<&str> = needs.iter().filter(|c| known(c).is_none()).map(String::as_str).collect();
    let mut v =
        if missing.is_empty() { "ready".to_owned() } else { format!("missing: {}", missing.join(", ")) };
    if !unchecked.is_empty() {
        v.push_str(&format!(" (not checked by any plugin: {})", unchecked.join(", ")));
    }
    v
}

/// Names of the sources that declare themselves default and whose needs this machine meets:
/// the default when no `--source` is given.
pub fn default_sources(reg: &Registry) -> Vec<String> {
    let defaults: Vec<_> =
        reg.plugins.iter().filter(|p| p.meta.kind == PluginKind::Source && p.meta.default_source).collect();
    if defaults.is_empty() {
        return Vec::new();
    }
    let checks = reg.machine_checks();
    defaults
        .into_iter()
        .filter(|p| {
            p.meta.capabilities.iter().all(|c| checks.iter().any(|k| k.capability == *c && k.status.usable()))
        })
        .map(|p| p.meta.name.clone())
        .collect()
}

/// Plugins that exist only for xpuprof's own tests; left out of the example config.
pub const TEST_PLUGINS: &[&str] = &["scripted", "panicky", "wrong-abi"];

/// `xpuprof.toml.example`: every key of the file and of every (non-test) plugin found, with its
/// default and documentation, generated from what the plugins declare so it cannot drift.
pub fn example_config(reg: &Registry) -> String {
    let defaults: Vec<String> = reg
        .plugins
        .iter()
        .filter(|p| p.meta.kind == PluginKind::Source && p.meta.default_source)
        .map(|p| format!("\"{}\"", p.meta.name))
        .collect();
    let defaults = defaults.join(", ");
    let mut s = format!(
        "# xpuprof.toml.example: every key xpuprof and its plugins accept, with defaults.\n\
         # Generated by `xpuprof plugins --config-example`; copy to xpuprof.toml and edit.\n\
         # Unknown keys, wrong types and unknown plugin names are errors (file:line:column).\n\
         # Command-line flags override this file.\n\n\
         # Source plugins to run (default: the sources below marked default, where this machine\n\
         # supports them: `xpuprof doctor` says which).\n\
         # sources = [{defaults}]\n\n\
         # Sink plugins to write outputs with (default: folded and summary).\n\
         # sinks = [\"folded\", \"chrome\", \"flamegraph\", \"summary\"]\n\n\
         # Output directory.\n# output = \"xpuprof-out\"\n\n\
         # Extra plugin directories (searched after --plugin-dir and XPUPROF_PLUGIN_PATH).\n\
         # plugin_dirs = []\n\n\
         # Seconds one call into a plugin may take before the plugin is abandoned and named\n\
         # (a second Ctrl+C cuts it to 1 s).\n# plugin_timeout = 30\n\n\
         # Show mangled C++ names (kernels, functions) demangled in every output; sinks still\n\
         # receive the raw name (the archive keeps both).\n# demangle = true\n\n\
         # Defaults for `xpuprof diff`.\n[diff]\n# threshold = \"5%\"\n# metric = \"total\"\n",
    );
    for kind in [PluginKind::Source, PluginKind::Sink] {
        let mut plugins: Vec<_> = reg
            .plugins
            .iter()
            .filter(|p| p.meta.kind == kind && !TEST_PLUGINS.contains(&p.meta.name.as_str()))
            .collect();
        plugins.sort_by(|a, b| a.meta.name.cmp(&b.meta.name));
        for p in plugins {
            let _ = write!(
                s,
                "\n# {} `{}`{}: {}\n[{}.{}]\n",
                kind.as_str(),
                p.meta.name,
                if p.meta.default_source { " (default)" } else { "" },
                p.meta.description,
                kind.as_str(),
                p.meta.name
            );
            s.push_str(&p.meta.config.example());
        }
    }
    s
}

#[cfg(test)]
mod verdict_tests {
    use super::*;

    fn check(capability: &str, status: CheckStatus) -> PluginCheck {
        PluginCheck {
            capability: capability.into(),
            status,
            detail: String::new(),
            hint: String::new(),
            plugin: "p".into(),
        }
    }

    #[test]
    fn a_capability_without_a_check_is_not_missing() {
        let checks = vec![
            check("gpu-runtime", CheckStatus::Fail),
            check("cpu-sampling", CheckStatus::Ok),
            check("gpu-nodes", CheckStatus::Warn),
        ];
        let needs = |n: &[&str]| n.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(verdict(&checks, &needs(&["cpu-sampling", "gpu-nodes"])), "ready");
        assert_eq!(verdict(&checks, &needs(&["gpu-runtime", "cpu-sampling"])), "missing: gpu-runtime");
        assert_eq!(
            verdict(&checks, &needs(&["npu-runtime"])),
            "ready (not checked by any plugin: npu-runtime)"
        );
    }
}
