//! The correlation trampoline: `xpuprof_agent_launch(backend, correlation_id)`, an exported
//! function that does nothing (defined here with the SDK's
//! [`define_agent_launch_trampoline!`](xpuprof_sdk::define_agent_launch_trampoline), so every
//! agent built on the kit exports it under the same name and signature). When the eBPF source
//! runs with launch-site uprobes, it probes this symbol and captures the kernel's view of the
//! calling thread's stack together with the exact correlation id; without the uprobe a call costs
//! a few nanoseconds.

xpuprof_sdk::define_agent_launch_trampoline!();

/// Calls the trampoline with the frame pointer register set to `fp`, the frame the agent's own
/// walk starts from. The eBPF source's uprobe unwinds from the registers at the trampoline's
/// entry; with `rbp = fp` its walk starts where the agent's does, whatever the agent's Rust code
/// (built without frame pointers) kept in `rbp`.
#[inline(always)]
pub fn call(fp: usize, backend: u32, id: u64) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: rbp is saved and restored around the call; the stack stays 16-byte aligned at the
    // call (push + sub 8); the callee is an `extern "C" fn(u32, u64)` that touches no memory of
    // ours, and every register the C ABI lets it clobber is declared clobbered.
    unsafe {
        std::arch::asm!(
            "push rbp",
            "mov rbp, {fp}",
            "sub rsp, 8",
            "call {f}",
            "add rsp, 8",
            "pop rbp",
            fp = in(reg) fp,
            f = sym xpuprof_agent_launch,
            in("edi") backend,
            in("rsi") id,
            clobber_abi("C"),
        );
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = fp;
        xpuprof_agent_launch(backend, id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stack::registers;

    #[test]
    fn trampoline_call_restores_registers() {
        let fp = registers().fp;
        let before = std::hint::black_box(0x1234_5678_u64);
        call(fp, 1, 42);
        call(0, 0, 0);
        assert_eq!(std::hint::black_box(before), 0x1234_5678);
        assert_eq!(registers().fp, fp, "rbp is restored");
    }
}
