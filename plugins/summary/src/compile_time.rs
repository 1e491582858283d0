//! Compile-time against steady-state kernel time. A kernel whose launch stack (or, for work run
//! from a recording, the recording's stack) holds the compile marker frame ([`COMPILE_MARKER`]:
//! put there by the source, from the program's own annotations or from the functions on the
//! stack) is compile-time work: a compiler's autotuning and the other kernels it runs while it
//! compiles. They are counted apart here so the steady state reads without them.

use std::collections::HashMap;

use serde::Serialize;
use xpuprof_sdk::model::StackId;
use xpuprof_toolbox::agent_host::COMPILE_MARKER;

use crate::assemble::pct;
use crate::defs::Defs;
use crate::gpu_time::GpuTime;

/// Kernel time split into compile-time work and the steady state.
#[derive(Debug, Clone, Serialize)]
pub struct CompileTimeRow {
    /// Kernel time of compile-time work, ns.
    pub compile_ns: u64,
    /// Compile-time kernels.
    pub compile_kernels: u64,
    /// Kernel time of everything else, ns.
    pub steady_ns: u64,
    /// The other kernels.
    pub steady_kernels: u64,
    /// `compile_ns` as a share of all kernel time, 0-100.
    pub compile_pct: f64,
}

/// The split, when any kernel was compile-time work (`None` otherwise: the report leaves it out).
pub fn row(gpu: &GpuTime, defs: &Defs) -> Option<CompileTimeRow> {
    let mut marked: HashMap<StackId, bool> = HashMap::new();
    let mut r = CompileTimeRow {
        compile_ns: 0,
        compile_kernels: 0,
        steady_ns: 0,
        steady_kernels: 0,
        compile_pct: 0.0,
    };
    for (k, t) in &gpu.by_launch {
        let compile = *marked.entry(k.stack).or_insert_with(|| {
            defs.stack_frames(k.stack)
                .iter()
                .any(|f| defs.frame_names(*f).iter().any(|n| n == COMPILE_MARKER))
        });
        if compile {
            r.compile_ns += t.ns;
            r.compile_kernels += t.launches;
        } else {
            r.steady_ns += t.ns;
            r.steady_kernels += t.launches;
        }
    }
    if r.compile_kernels == 0 {
        return None;
    }
    r.compile_pct = pct(r.compile_ns, r.compile_ns + r.steady_ns);
    Some(r)
}

/// The text report's line.
pub fn render(r: &Option<CompileTimeRow>, out: &mut String) {
    use crate::fmt::ns;
    let Some(r) = r else { return };
    out.push_str(&format!(
        "\nCompile-time GPU work ({COMPILE_MARKER} in the launch stack): {} of kernel time ({:.1}%), {} kernels; \
         steady state: {}, {} kernels\n",
        ns(r.compile_ns),
        r.compile_pct,
        r.compile_kernels,
        ns(r.steady_ns),
        r.steady_kernels
    ));
}
