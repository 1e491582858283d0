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

/// What every agent reads from the environment its host plugin prepared: where to send
/// (`XPUPROF_<NAME>_SOCKET`, and `XPUPROF_<NAME>_DUMP` for a copy on disk) and the options all
/// agents take from `XPUPROF_<NAME>_OPTS` (`stacks`, `depth`, `buffer_kib`, `verbose`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Common {
    /// Host socket.
    pub socket: Option<String>,
    /// Dump directory.
    pub dump_dir: Option<String>,
    /// Where launch stacks come from.
    pub stacks: StackMode,
    /// Most frames per stack (1 to 255).
    pub max_depth: usize,
    /// Size of one record buffer of the vendor library (`buffer_kib`, 64 KiB to 1 GiB).
    pub buffer_bytes: usize,
    /// Print a summary line to stderr at exit.
    pub verbose: bool,
}

impl Common {
    /// The defaults of an agent whose stacks keep at most `max_depth` frames: stacks walked by
    /// the agent, 8 MiB buffers, quiet, no output yet.
    pub fn new(max_depth: usize) -> Self {
        Self {
            socket: None,
            dump_dir: None,
            stacks: StackMode::Agent,
            max_depth,
            buffer_bytes: 8 << 20,
            verbose: false,
        }
    }

    /// Reads `XPUPROF_<name>_SOCKET` and `XPUPROF_<name>_DUMP` (empty means unset); returns the
    /// `XPUPROF_<name>_OPTS` text (empty when unset) for the agent to parse.
    pub fn read_env(&mut self, name: &str) -> String {
        let var = |what: &str| std::env::var(format!("XPUPROF_{name}_{what}")).ok().filter(|s| !s.is_empty());
        self.socket = var("SOCKET");
        self.dump_dir = var("DUMP");
        var("OPTS").unwrap_or_default()
    }

    /// Applies `o` when it is one of the common options; false for any other key.
    pub fn apply(&mut self, o: &Opt<'_>) -> Result<bool, String> {
        match o.key {
            "stacks" => self.stacks = o.stack_mode()?,
            "depth" => self.max_depth = o.number::<usize>()?.clamp(1, 255),
            "buffer_kib" => self.buffer_bytes = o.number::<usize>()?.clamp(64, 1 << 20) * 1024,
            "verbose" => self.verbose = o.flag()?,
            _ => return Ok(false),
        }
        Ok(true)
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
        let mut c = Common::new(64);
        for o in parse("depth=300,buffer_kib=1,verbose=1,stacks=ebpf,kernels=0").unwrap() {
            let common = c.apply(&o).unwrap();
            assert_eq!(common, o.key != "kernels", "{}", o.key);
        }
        assert_eq!(
            (c.max_depth, c.buffer_bytes, c.verbose, c.stacks),
            (255, 64 * 1024, true, StackMode::Ebpf)
        );
        assert!(c.apply(&parse("depth=x").unwrap()[0]).unwrap_err().contains("bad number"));
    }
}
