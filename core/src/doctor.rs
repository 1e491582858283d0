//! `xpuprof plugins` and `xpuprof doctor`: what was found, and what this machine offers.

use std::fmt::Write;
use std::path::Path;

use xpuprof_sdk::abi::ABI_VERSION;
use xpuprof_sdk::PluginKind;

use crate::host::Registry;

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

fn cap_eff() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| s.lines().find(|l| l.starts_with("CapEff:")).map(|l| l[7..].trim().to_owned()))
        .and_then(|h| u64::from_str_radix(&h, 16).ok())
        .unwrap_or(0)
}

fn can_dlopen(name: &str) -> bool {
    // SAFETY: loading a system library by name to see whether it exists; it is unloaded at once.
    unsafe { libloading::Library::new(name) }.is_ok()
}

/// One doctor check.
#[derive(Debug, Clone)]
pub struct Check {
    /// Capability name (as plugins declare it).
    pub capability: &'static str,
    /// Whether this machine has it.
    pub ok: bool,
    /// What was found, or what to do.
    pub detail: String,
}

/// Runs every machine check.
pub fn checks() -> Vec<Check> {
    let caps = cap_eff();
    let has = |bit: u32| caps & (1u64 << bit) != 0;
    let bpf_perf = has(21) || (has(39) && has(38));
    let paranoid = std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid").unwrap_or_default();
    let btf = Path::new("/sys/kernel/btf/vmlinux").exists();
    let uprobes = Path::new("/sys/bus/event_source/devices/uprobe").exists();
    let cuda = can_dlopen("libcuda.so.1");
    let nvdev = Path::new("/dev/nvidia0").exists() || Path::new("/dev/nvidiactl").exists();
    vec![
        Check {
            capability: "bpf-perf",
            ok: bpf_perf,
            detail: if bpf_perf {
                format!(
                    "CAP_BPF+CAP_PERFMON or CAP_SYS_ADMIN present; perf_event_paranoid = {}",
                    paranoid.trim()
                )
            } else {
                "missing: run as root (sudo) or grant CAP_BPF and CAP_PERFMON".into()
            },
        },
        Check {
            capability: "kernel-btf",
            ok: btf && uprobes,
            detail: match (btf, uprobes) {
                (true, true) => "/sys/kernel/btf/vmlinux present; uprobes supported".into(),
                (false, _) => {
                    "missing /sys/kernel/btf/vmlinux: use a kernel built with CONFIG_DEBUG_INFO_BTF=y".into()
                }
                (true, false) => "no uprobe PMU: use a kernel built with CONFIG_UPROBE_EVENTS=y".into(),
            },
        },
        Check {
            capability: "cuda",
            ok: cuda,
            detail: match (cuda, nvdev) {
                (true, true) => "NVIDIA driver (libcuda.so.1) and device nodes found".into(),
                (true, false) => "libcuda.so.1 found but no /dev/nvidia* device nodes".into(),
                _ => "no NVIDIA driver (libcuda.so.1 not loadable): install the NVIDIA driver".into(),
            },
        },
        rocm(),
        level_zero(),
    ]
}

/// The first of `names` that loads.
fn first_loadable<'a>(names: &[&'a str]) -> Option<&'a str> {
    names.iter().copied().find(|n| can_dlopen(n))
}

/// The ROCm runtime and how the `rocm` source reaches it: the HIP runtime; the library it hands
/// its API tables to (librocprofiler-register, ROCm 6.2 and later) with rocprofiler-sdk 1.x, or
/// roctracer on older ROCm; and the amdgpu driver's /dev/kfd, without which HIP finds no GPU and
/// ROCr loads no tool.
fn rocm() -> Check {
    let hip = first_loadable(&["libamdhip64.so", "libamdhip64.so.7", "libamdhip64.so.6", "libamdhip64.so.5"]);
    let register = first_loadable(&["librocprofiler-register.so.0", "librocprofiler-register.so"]);
    let sdk = first_loadable(&["librocprofiler-sdk.so.1", "librocprofiler-sdk.so"]);
    let roctracer = first_loadable(&["libroctracer64.so.4", "libroctracer64.so"]);
    let kfd = Path::new("/dev/kfd").exists();
    let mut missing = Vec::new();
    if hip.is_none() {
        missing.push("the HIP runtime libamdhip64.so (ROCm's hip-runtime-amd; Debian: libamdhip64-5)");
    }
    match (register, sdk, roctracer) {
        (Some(_), None, _) => missing.push("librocprofiler-sdk.so.1 (install rocprofiler-sdk 1.x: the runtime registers with librocprofiler-register, which loads tools through it)"),
        (None, _, None) => missing.push("a tracing library: librocprofiler-register + librocprofiler-sdk (ROCm 6.2+: rocprofiler-register, rocprofiler-sdk) or libroctracer64 (older ROCm: roctracer)"),
        _ => {}
    }
    if !kfd {
        missing
            .push("/dev/kfd (the amdgpu kernel driver: without it HIP finds no GPU and ROCr loads no tool)");
    }
    let found: Vec<String> = [
        ("HIP", hip),
        ("rocprofiler-register", register),
        ("rocprofiler-sdk", sdk),
        ("roctracer", roctracer),
    ]
    .into_iter()
    .filter_map(|(what, lib)| lib.map(|l| format!("{what} {l}")))
    .collect();
    let found = if found.is_empty() { "nothing of ROCm".to_owned() } else { found.join(", ") };
    Check {
        capability: "rocm",
        ok: missing.is_empty(),
        detail: if missing.is_empty() {
            format!("{found}, /dev/kfd")
        } else {
            format!("found {found}; missing: {}", missing.join("; "))
        },
    }
}

/// The Level Zero loader, its tracing layer (the `levelzero` source needs both) and a GPU driver
/// for the loader (Intel's compute runtime, or one named by `ZE_ENABLE_ALT_DRIVERS`).
fn level_zero() -> Check {
    let loader = can_dlopen("libze_loader.so.1");
    let layer = can_dlopen("libze_tracing_layer.so.1");
    let alt = std::env::var("ZE_ENABLE_ALT_DRIVERS").ok().filter(|v| !v.is_empty());
    let gpu = ["libze_intel_gpu.so.1", "libze_intel_gpu_legacy1.so.1"].iter().any(|d| can_dlopen(d));
    let mut missing = Vec::new();
    if !loader {
        missing.push("the loader libze_loader.so.1 (Debian/Ubuntu: apt-get install libze1)");
    }
    if !layer {
        missing.push("the tracing layer libze_tracing_layer.so.1 (shipped with the loader: libze1)");
    }
    if !gpu && alt.is_none() {
        missing.push("a GPU driver libze_intel_gpu.so.1 (Intel's compute runtime, intel-level-zero-gpu)");
    }
    let driver = match (gpu, &alt) {
        (true, _) => "Intel GPU driver found".to_owned(),
        (false, Some(a)) => format!("driver from ZE_ENABLE_ALT_DRIVERS={a}"),
        (false, None) => "no GPU driver".to_owned(),
    };
    Check {
        capability: "level-zero",
        ok: loader && layer && (gpu || alt.is_some()),
        detail: if missing.is_empty() {
            format!("loader libze_loader.so.1, tracing layer, {driver}")
        } else {
            format!("missing: {}", missing.join("; "))
        },
    }
}

/// The `xpuprof doctor` report.
pub fn doctor_report(reg: &Registry) -> String {
    let checks = checks();
    let mut s = String::from("machine:\n");
    // SAFETY: geteuid has no preconditions.
    let euid = unsafe { libc::geteuid() };
    let _ = writeln!(s, "  running as uid {euid}{}", if euid == 0 { " (root)" } else { "" });
    for c in &checks {
        let _ = writeln!(s, "  [{}] {:<11} {}", if c.ok { " ok " } else { "MISS" }, c.capability, c.detail);
    }
    let _ = writeln!(s, "\nsources:");
    for p in reg.plugins.iter().filter(|p| p.meta.kind == PluginKind::Source) {
        let _ = writeln!(s, "  {:<12} {}", p.meta.name, verdict(&checks, &p.meta.capabilities));
    }
    s
}

/// What a source's needs come to here. Capabilities are an open set: one this xpuprof has no
/// check for (a third-party backend's) is listed as not checked, not as missing.
fn verdict(checks: &[Check], needs: &[String]) -> String {
    let known = |c: &String| checks.iter().find(|k| k.capability == c.as_str());
    let missing: Vec<&str> =
        needs.iter().filter(|c| known(c).is_some_and(|k| !k.ok)).map(String::as_str).collect();
    let unchecked: Vec<&str> = needs.iter().filter(|c| known(c).is_none()).map(String::as_str).collect();
    let mut v =
        if missing.is_empty() { "ready".to_owned() } else { format!("missing: {}", missing.join(", ")) };
    if !unchecked.is_empty() {
        v.push_str(&format!(" (not checked by this xpuprof: {})", unchecked.join(", ")));
    }
    v
}

/// Names of the real (non-test) sources whose needs this machine meets: the default when no
/// `--source` is given.
pub fn default_sources(reg: &Registry) -> Vec<String> {
    let checks = checks();
    ["ebpf", "cupti"]
        .iter()
        .filter_map(|n| reg.find(PluginKind::Source, n))
        .filter(|p| {
            p.meta.capabilities.iter().all(|c| checks.iter().any(|k| k.capability == c.as_str() && k.ok))
        })
        .map(|p| p.meta.name.clone())
        .collect()
}

/// Plugins that exist only for xpuprof's own tests; left out of the example config.
pub const TEST_PLUGINS: &[&str] = &["scripted", "panicky", "wrong-abi"];

/// `xpuprof.toml.example`: every key of the file and of every (non-test) plugin found, with its
/// default and documentation, generated from what the plugins declare so it cannot drift.
pub fn example_config(reg: &Registry) -> String {
    let mut s = String::from(
        "# xpuprof.toml.example: every key xpuprof and its plugins accept, with defaults.\n\
         # Generated by `xpuprof plugins --config-example`; copy to xpuprof.toml and edit.\n\
         # Unknown keys, wrong types and unknown plugin names are errors (file:line:column).\n\
         # Command-line flags override this file.\n\n\
         # Source plugins to run (default: ebpf and cupti, where this machine supports them).\n\
         # sources = [\"ebpf\", \"cupti\"]\n\n\
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
                "\n# {} `{}`: {}\n[{}.{}]\n",
                kind.as_str(),
                p.meta.name,
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

    #[test]
    fn a_capability_without_a_check_is_not_missing() {
        let checks = vec![
            Check { capability: "cuda", ok: false, detail: String::new() },
            Check { capability: "bpf-perf", ok: true, detail: String::new() },
        ];
        let needs = |n: &[&str]| n.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(verdict(&checks, &needs(&["bpf-perf"])), "ready");
        assert_eq!(verdict(&checks, &needs(&["cuda", "bpf-perf"])), "missing: cuda");
        assert_eq!(
            verdict(&checks, &needs(&["npu-runtime"])),
            "ready (not checked by this xpuprof: npu-runtime)"
        );
    }
}
