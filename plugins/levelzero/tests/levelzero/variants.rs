//! Launch variants newer than loader 1.8.12's tracing layer (`...WithArguments`,
//! `...WithParameters`), which a program reaches through `zeDriverGetExtensionFunctionAddress`:
//! traced like every other launch, under their exact stacks, with the scripted durations.

use crate::harness::{device_lines, run};

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
