//! The agents' option strings (`XPUPROF_<BACKEND>_OPTS`): comma-separated `key=value` items,
//! written by the host plugin from its typed config and read in the target, where nothing but
//! the environment reaches the agent. Parsing is here so every agent says the same thing about a
//! bad item.

/// One `key=value` item.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Opt<'a> {
    /// The key.
    pub key: &'a str,
    /// The value, as written.
    pub value: &'a str,
}

impl Opt<'_> {
    /// A boolean written `1`/`true` or `0`/`false`.
    pub fn flag(&self) -> Result<bool, String> {
        match self.value {
            "1" | "true" => Ok(true),
            "0" | "false" => Ok(false),
            v => Err(format!("option `{}` must be 0 or 1, got `{v}`", self.key)),
        }
    }

    /// A number.
    pub fn number<T: std::str::FromStr>(&self) -> Result<T, String> {
        self.value.parse().map_err(|_| format!("option {}: bad number `{}`", self.key, self.value))
    }

    /// One of `allowed` (returned as the matching index).
    pub fn one_of(&self, allowed: &[&str]) -> Result<usize, String> {
        allowed.iter().position(|a| *a == self.value).ok_or_else(|| {
            format!("option {} must be {}, got `{}`", self.key, allowed.join(", "), self.value)
        })
    }

    /// The error for a key the agent does not know.
    pub fn unknown(&self) -> String {
        format!("unknown option `{}`", self.key)
    }
}

/// Where launch stacks come from (`stacks=agent|ebpf|both|off`, the host's `launch_stacks`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum StackMode {
    /// The agent walks the stack itself.
    #[default]
    Agent,
    /// Only the trampoline is called; the eBPF source captures the stack.
    Ebpf,
    /// Both.
    Both,
    /// No launch sites.
    Off,
}

impl StackMode {
    /// True when the agent itself walks launch stacks.
    pub fn agent_walks(self) -> bool {
        matches!(self, Self::Agent | Self::Both)
    }

    /// True when the trampoline is called at launches.
    pub fn trampoline(self) -> bool {
        matches!(self, Self::Ebpf | Self::Both)
    }
}

impl Opt<'_> {
    /// A [`StackMode`] written `agent`, `ebpf`, `both` or `off`.
    pub fn stack_mode(&self) -> Result<StackMode, String> {
        const MODES: [StackMode; 4] = [StackMode::Agent, StackMode::Ebpf, StackMode::Both, StackMode::Off];
        Ok(MODES[self.one_of(&["agent", "ebpf", "both", "off"])?])
    }
}

/// The items of `opts`, in order; an item without `=` is an error naming it.
pub fn parse(opts: &str) -> Result<Vec<Opt<'_>>, String> {
    opts.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|item| {
            let (key, value) =
                item.split_once('=').ok_or_else(|| format!("option `{item}` is not key=value"))?;
            Ok(Opt { key, value })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_items_and_names_bad_ones() {
        let o = parse("a=1, b=false,,n=42,m=x").unwrap();
        assert_eq!(o.len(), 4);
        assert_eq!((o[0].flag(), o[1].flag()), (Ok(true), Ok(false)));
        assert_eq!(o[2].number::<u32>(), Ok(42));
        assert_eq!(o[3].one_of(&["x", "y"]), Ok(0));
        assert!(o[3].one_of(&["y"]).unwrap_err().contains("must be y"));
        assert!(o[3].flag().unwrap_err().contains("`m` must be 0 or 1"));
        assert!(parse("oops").unwrap_err().contains("`oops` is not key=value"));
        let s = parse("stacks=both,stacks=off,stacks=x").unwrap();
        assert_eq!(s[0].stack_mode(), Ok(StackMode::Both));
        assert!(s[0].stack_mode().unwrap().agent_walks() && s[0].stack_mode().unwrap().trampoline());
        assert!(!s[1].stack_mode().unwrap().agent_walks());
        assert!(s[2].stack_mode().unwrap_err().contains("must be agent, ebpf, both, off"));
    }
}
