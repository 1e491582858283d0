//! The correlation trampoline shared by every in-target agent and the eBPF source.
//!
//! At the entry of each launch-class API an agent calls
//! `xpuprof_agent_launch(backend, correlation_id, ip, sp, bp)`, an exported function that does
//! nothing. When the eBPF source runs with launch-site uprobes, it places a uprobe on this symbol
//! and captures the calling thread's user stack together with the exact correlation id from the
//! arguments. Without the uprobe, the call costs a few nanoseconds.
//!
//! `ip`, `sp` and `bp` are the registers of the first frame of the application's side of the
//! stack (the return address into the caller of the vendor API and that frame's stack and frame
//! pointers, as the agent's own unwind found them): the eBPF source copies and unwinds the stack
//! from there, so its launch stack starts at the same frame as the agent's and shows no frame of
//! the agent or the vendor's callback machinery. An agent that does not know them passes zeros
//! (older two-argument callers leave garbage there, which the eBPF source rejects: `sp` must lie
//! in the thread's stack above the trampoline's own frame); the stack is then unwound from the
//! trampoline's caller.
//!
//! Agents define it with [`define_agent_launch_trampoline!`](crate::define_agent_launch_trampoline)
//! so that every agent uses the same name and signature.

/// Exported symbol name of the trampoline.
pub const SYMBOL: &str = "xpuprof_agent_launch";

/// Its C signature, for documentation and for agents written in other languages.
pub const C_SIGNATURE: &str =
    "void xpuprof_agent_launch(uint32_t backend, uint64_t correlation_id, uint64_t ip, uint64_t sp, uint64_t bp);";

/// Defines `xpuprof_agent_launch(backend: u32, correlation_id: u64, ip: u64, sp: u64, bp: u64)`
/// in the calling crate, exported and never inlined, so a uprobe can find it.
#[macro_export]
macro_rules! define_agent_launch_trampoline {
    () => {
        /// Correlation trampoline: a no-op the eBPF source probes (see `xpuprof_sdk::trampoline`).
        #[no_mangle]
        #[inline(never)]
        pub extern "C" fn xpuprof_agent_launch(backend: u32, correlation_id: u64, ip: u64, sp: u64, bp: u64) {
            ::std::hint::black_box((backend, correlation_id, ip, sp, bp));
        }
    };
}
