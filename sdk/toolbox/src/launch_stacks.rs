//! The `launch_stacks` switch every GPU source with an in-target agent offers: who captures the
//! stack of each launch. The agent reads the same words from its options (the agent kit's
//! `opts::StackMode`).

xpuprof_sdk::config_enum! {
    /// Who captures launch stacks.
    pub enum LaunchStacks {
        /// The agent, in the target (no root needed).
        Agent = "agent",
        /// The eBPF source, from a uprobe on the agent's trampoline.
        Ebpf = "ebpf",
        /// Both (the host checks they agree).
        Both = "both",
        /// Nobody.
        Off = "off",
    }
}

impl LaunchStacks {
    /// True when the eBPF source must capture stacks at the agent's trampoline.
    pub fn needs_ebpf(self) -> bool {
        matches!(self, Self::Ebpf | Self::Both)
    }
}
