//! How programs load and use Level Zero: `dlopen`/`dlsym` (SYCL's Unified Runtime), two
//! threads on two sub-devices, a child process.

use crate::harness::{run, workload};

fn line<'a>(folded: &'a [String], leaf: &str) -> &'a str {
    folded.iter().find(|l| l.contains(leaf)).unwrap_or_else(|| panic!("no {leaf} in {folded:#?}"))
}

#[test]
fn a_loader_opened_with_dlopen_is_traced() {
    let r = run("dlopen", "kernel.k_dl=40000", "dlopen", &[]);
    let folded = r.folded();
    let l = line(&folded, "[GPU_Kernel]k_dl ");
    assert!(l.contains(";main;dl_launch;zeCommandListAppendLaunchKernel;[GPU_Kernel]k_dl 40"), "{l}");
}

#[test]
fn two_threads_on_two_sub_devices() {
    let r = run("threads", "subdevices=2;kernel.k_thread_a=16000;kernel.k_thread_b=24000", "threads", &[]);
    let folded = r.folded();
    let a = line(&folded, "[GPU_Kernel]k_thread_a");
    let b = line(&folded, "[GPU_Kernel]k_thread_b");
    assert!(
        a.contains("thread_a;thread_launch;zeCommandListAppendLaunchKernel;[GPU_Kernel]k_thread_a 32"),
        "{a}"
    );
    assert!(
        b.contains("thread_b;thread_launch;zeCommandListAppendLaunchKernel;[GPU_Kernel]k_thread_b 48"),
        "{b}"
    );
    let events = r.chrome();
    let device_of = |kernel: &str| {
        let pid = events.iter().find(|e| e["name"] == kernel).expect("kernel event")["pid"].clone();
        let meta = events.iter().find(|e| e["ph"] == "M" && e["name"] == "process_name" && e["pid"] == pid);
        meta.expect("device track")["args"]["name"].as_str().unwrap_or("").to_owned()
    };
    assert!(device_of("k_thread_a").ends_with("tile 0)"), "{}", device_of("k_thread_a"));
    assert!(device_of("k_thread_b").ends_with("tile 1)"), "{}", device_of("k_thread_b"));
}

#[test]
fn a_child_process_is_traced_too() {
    let child = workload("immediate");
    let r = run("child", "", "child", &[child.to_str().expect("utf-8 path")]);
    let folded = r.folded();
    assert!(
        line(&folded, "[GPU_Kernel]k_parent").contains(";main;parent_work;zeCommandListAppendLaunchKernel;")
    );
    assert!(
        line(&folded, "[GPU_Kernel]k_small").contains(";main;launch_small;zeCommandListAppendLaunchKernel;")
    );
    assert!(r.stderr.contains("9 with launch stack"), "{}", r.stderr);
}
