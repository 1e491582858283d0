//! Launch variants newer than loader 1.8.12's tracing layer (`...WithArguments`,
//! `...WithParameters`), which a program reaches through `zeDriverGetExtensionFunctionAddress`:
//! traced like every other launch, under their exact stacks, with the scripted durations.

use crate::harness::{device_lines, run, target_dir, workload};

#[test]
fn launches_through_extension_functions_have_exact_stacks_and_durations() {
    let r = run("with_args", "kernel.k_args=10000;kernel.k_params=6000", "with_args", &[]);
    let folded = r.folded();
    for (leaf, stack) in [
        ("[GPU_Kernel]k_args", ";main;launch_with_arguments;zeCommandListAppendLaunchKernelWithArguments;"),
        (
            "[GPU_Kernel]k_params",
            ";main;launch_with_parameters;zeCommandListAppendLaunchKernelWithParameters;",
        ),
    ] {
        let line =
            folded.iter().find(|l| l.contains(leaf)).unwrap_or_else(|| panic!("no {leaf} in {folded:#?}"));
        assert!(line.contains(stack), "{leaf} is not under {stack}: {line}");
    }
    assert!(r.stderr.contains("3 with launch stack, 0 with API call only, 0 unmatched"), "{}", r.stderr);
    assert!(r.stderr.contains("losses: none"), "{}", r.stderr);
    assert_eq!(
        device_lines(&r.chrome()),
        "\"kernel\" \"k_args\" dur=10.0 bytes=null\n\"kernel\" \"k_args\" dur=10.0 bytes=null\n\"kernel\" \"k_params\" dur=6.0 bytes=null\n"
    );
}

/// `launch_stacks` is a setting of the sources whose agent can leave launch stacks to the eBPF
/// source; this agent always captures its own (see `src/source.rs`), so the key is refused with
/// the ones it accepts instead of being ignored.
#[test]
fn launch_stacks_is_refused_with_the_keys_levelzero_accepts() {
    let exe = workload("immediate"); // builds the host and the plugins first
    let dir = target_dir();
    let tmp = std::env::temp_dir().join(format!("xpuprof-levelzero-launch-stacks-{}", std::process::id()));
    std::fs::create_dir_all(&tmp).unwrap();
    let config = tmp.join("xpuprof.toml");
    std::fs::write(&config, "[source.levelzero]\nlaunch_stacks = \"ebpf\"\n").unwrap();
    let o = std::process::Command::new(dir.join("xpuprof"))
        .arg("--plugin-dir")
        .arg(&dir)
        .arg("-c")
        .arg(&config)
        .args(["--source", "levelzero", "--sink", "folded", "-o"])
        .arg(tmp.join("out"))
        .arg("--")
        .arg(exe)
        .env_remove("XPUPROF_PLUGIN_PATH")
        .output()
        .expect("run xpuprof");
    let _ = std::fs::remove_dir_all(&tmp);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success(), "{stderr}");
    assert!(
        stderr.contains("unknown key `launch_stacks` for source `levelzero`; it accepts: agent, python"),
        "{stderr}"
    );
}
