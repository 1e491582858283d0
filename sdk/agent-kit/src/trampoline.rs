//! The correlation trampoline: `xpuprof_agent_launch(backend, correlation_id, ip, sp, bp)`, an
//! exported function that does nothing (defined here with the SDK's
//! [`define_agent_launch_trampoline!`](xpuprof_sdk::define_agent_launch_trampoline), so every
//! agent built on the kit exports it under the same name and signature). When the eBPF source
//! runs with launch-site uprobes, it probes this symbol and captures the calling thread's stack
//! together with the exact correlation id; without the uprobe a call costs a few nanoseconds.

use crate::stack::Registers;

xpuprof_sdk::define_agent_launch_trampoline!();

/// Calls the trampoline with `start`, the registers where the application's side of the launch
/// stack starts ([`crate::launches::Registry::enter`] returns them): the eBPF source copies and
/// unwinds the stack from there, so its stack starts at the same frame as the agent's. The
/// frame pointer register is also set to `start.bp` during the call, for eBPF sources that walk
/// the kernel's frame-pointer chain from the uprobe's registers.
#[inline(always)]
pub fn call(start: &Registers, backend: u32, id: u64) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: rbp is saved and restored around the call; the stack stays 16-byte aligned at the
    // call (push + sub 8); the callee is an `extern "C" fn(u32, u64, u64, u64, u64)` that touches
    // no memory of ours, and every register the C ABI lets it clobber is declared clobbered.
    unsafe {
        std::arch::asm!(
            "push rbp",
            "mov rbp, {bp}",
            "sub rsp, 8",
            "call {f}",
            "add rsp, 8",
            "pop rbp",
            bp = in(reg) start.bp,
            f = sym xpuprof_agent_launch,
            in("edi") backend,
            in("rsi") id,
            in("rdx") start.ip,
            in("rcx") start.sp,
            in("r8") start.bp,
            clobber_abi("C"),
        );
    }
    #[cfg(not(target_arch = "x86_64"))]
    xpuprof_agent_launch(backend, id, start.ip, start.sp, start.bp);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trampoline_call_restores_registers() {
        let bp = Registers::here().bp;
        let before = std::hint::black_box(0x1234_5678_u64);
        call(&Registers { ip: 1, sp: 2, bp: 3 }, 1, 42);
        call(&Registers::default(), 0, 0);
        assert_eq!(std::hint::black_box(before), 0x1234_5678);
        assert_eq!(Registers::here().bp, bp, "rbp is restored");
    }
}
