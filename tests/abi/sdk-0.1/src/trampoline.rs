//! The correlation trampoline shared by every in-target agent and the eBPF source.
//!
//! At the entry of each launch-class API an agent calls
//! `xpuprof_agent_launch(backend, correlation_id)`, an exported function that does nothing. When
//! the eBPF source runs with launch-site uprobes, it places a uprobe on this symbol and captures
//! the kernel's view of the calling thread's user stack together with the exact correlation id
//! from the arguments. Without the uprobe, the call costs a few nanoseconds.
//!
//! Agents define it with [`define_agent_launch_trampoline!`](crate::define_agent_launch_trampoline)
//! so that every agent uses the same name and signature.

/// Exported symbol name of the trampoline.
pub const SYMBOL: &str = "xpuprof_agent_launch";

/// Its C signature, for documentation and for agents written in other languages.
pub const C_SIGNATURE: &str = "void xpuprof_agent_launch(uint32_t backend, uint64_t correlation_id);";

/// Defines `xpuprof_agent_launch(backend: u32, correlation_id: u64)` in the calling crate,
/// exported and never inlined, so a uprobe can find it.
#[macro_export]
macro_rules! define_agent_launch_trampoline {
    () => {
        /// Correlation trampoline: a no-op the eBPF source probes (see `xpuprof_sdk::trampoline`).
        #[no_mangle]
        #[inline(never)]
        pub extern "C" fn xpuprof_agent_launch(backend: u32, correlation_id: u64) {
            ::std::hint::black_box((backend, correlation_id));
        }
    };
}
