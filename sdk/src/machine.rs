//! What a plugin checks on the machine for `xpuprof doctor`: the runtime libraries it found,
//! the permissions and kernel features it needs, each with the fix when one is missing.
//!
//! A plugin returns its checks from [`crate::Source::machine_checks`] (or
//! [`crate::Sink::machine_checks`]); the host prints them and decides from them which sources
//! can run here. Each check decides one [`Capability`]: a source that needs a capability no
//! loaded plugin checks is shown as "not checked", never as missing.

use crate::plugin::Capability;

/// How a machine check came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CheckStatus {
    /// The machine has the capability.
    Ok,
    /// The capability is usable, with a caveat the user should know (a library found without
    /// the device nodes it drives, ...).
    Warn,
    /// The machine lacks the capability: the sources that need it cannot record here.
    Fail,
}

impl CheckStatus {
    /// The value that crosses the plugin ABI.
    pub fn as_u8(self) -> u8 {
        match self {
            Self::Ok => 0,
            Self::Warn => 1,
            Self::Fail => 2,
        }
    }

    /// The status of an ABI value; an unknown value (from a newer SDK) reads as [`Self::Warn`].
    pub fn from_u8(v: u8) -> Self {
        match v {
            0 => Self::Ok,
            2 => Self::Fail,
            _ => Self::Warn,
        }
    }

    /// Whether the capability can be used ([`Self::Ok`] or [`Self::Warn`]).
    pub fn usable(self) -> bool {
        self != Self::Fail
    }
}

/// One machine check: the capability it decides, how it came out, what was found and the fix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MachineCheck {
    /// The capability this check decides (as sources declare it in [`crate::PluginInfo`]).
    pub capability: Capability,
    /// How it came out.
    pub status: CheckStatus,
    /// What was found, or what is missing ("libfoo.so.1 and /dev/foo0 found").
    pub detail: String,
    /// What to do about a warning or failure ("install the foo driver"); empty when nothing is
    /// to be done.
    pub hint: String,
}

impl MachineCheck {
    /// The machine has `capability`: `detail` says what was found.
    pub fn ok(capability: Capability, detail: impl Into<String>) -> Self {
        Self { capability, status: CheckStatus::Ok, detail: detail.into(), hint: String::new() }
    }

    /// `capability` is usable with a caveat (`detail`), fixed by `hint`.
    pub fn warn(capability: Capability, detail: impl Into<String>, hint: impl Into<String>) -> Self {
        Self { capability, status: CheckStatus::Warn, detail: detail.into(), hint: hint.into() }
    }

    /// The machine lacks `capability`: `detail` says what is missing, `hint` how to fix it.
    pub fn fail(capability: Capability, detail: impl Into<String>, hint: impl Into<String>) -> Self {
        Self { capability, status: CheckStatus::Fail, detail: detail.into(), hint: hint.into() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_survive_the_abi_and_unknown_ones_warn() {
        for s in [CheckStatus::Ok, CheckStatus::Warn, CheckStatus::Fail] {
            assert_eq!(CheckStatus::from_u8(s.as_u8()), s);
        }
        assert_eq!(CheckStatus::from_u8(9), CheckStatus::Warn);
        assert!(CheckStatus::Warn.usable() && !CheckStatus::Fail.usable());
    }
}
