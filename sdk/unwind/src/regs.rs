//! The registers a walk starts from.

/// Instruction pointer, stack pointer and frame pointer of the frame a walk starts in: all an
/// x86_64 unwinder needs (framehop recovers nothing else).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Registers {
    /// Instruction pointer (the first frame's address).
    pub ip: u64,
    /// Stack pointer.
    pub sp: u64,
    /// Frame pointer (`rbp`); any value when the code there does not keep one.
    pub bp: u64,
}

impl Registers {
    /// The registers at this point of the calling function (inlined into it: `ip` is an address
    /// inside the caller, `sp`/`bp` its current values), the start of an in-process walk.
    #[inline(always)]
    pub fn here() -> Self {
        #[cfg(target_arch = "x86_64")]
        {
            let (ip, sp, bp): (u64, u64, u64);
            // SAFETY: reads rip (by address computation), rsp and rbp into locals; touches no memory.
            unsafe {
                std::arch::asm!(
                    "lea {ip}, [rip]",
                    "mov {sp}, rsp",
                    "mov {bp}, rbp",
                    ip = out(reg) ip,
                    sp = out(reg) sp,
                    bp = out(reg) bp,
                    options(nomem, nostack, preserves_flags),
                );
            }
            Self { ip, sp, bp }
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            Self::default()
        }
    }
}
