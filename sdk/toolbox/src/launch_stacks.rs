//! The `launch_stacks` switch every GPU source with an in-target agent offers: who captures the
//! stack of each launch. The agent reads the same words from its options (the agent kit's
//! `opts::StackMode`).
//!
//! The two stay two declarations: this one is a host config value (the SDK's `ConfigValue`), the
//! agent's is a wire option (`xpuprof_wire::opts::OptValue`) in a crate that must not depend on
//! the SDK, and the toolbox may implement neither trait for the other's type. They are held
//! together instead: [`StackMode::from`] matches every value (a value added on one side only does
//! not build) and the tests check the words are the same.

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

use xpuprof_wire::opts::StackMode;

impl LaunchStacks {
    /// True when the eBPF source must capture stacks at the agent's trampoline.
    pub fn needs_ebpf(self) -> bool {
        matches!(self, Self::Ebpf | Self::Both)
    }
}

impl From<LaunchStacks> for StackMode {
    fn from(l: LaunchStacks) -> Self {
        match l {
            LaunchStacks::Agent => Self::Agent,
            LaunchStacks::Ebpf => Self::Ebpf,
            LaunchStacks::Both => Self::Both,
            LaunchStacks::Off => Self::Off,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use xpuprof_sdk::config::{ConfigValue, Value};

    #[test]
    fn the_host_and_the_agent_use_the_same_words() {
        let words =
            |v: Vec<Value>| v.iter().filter_map(|w| w.as_str().map(str::to_owned)).collect::<Vec<_>>();
        let agent: Vec<_> = StackMode::ALL.iter().map(|m| m.as_str().to_owned()).collect();
        assert_eq!(words(LaunchStacks::allowed()), agent);
        for w in &agent {
            let host = LaunchStacks::from_toml(&Value::String(w.clone())).unwrap();
            assert_eq!(StackMode::from(host).as_str(), w);
        }
    }
}
