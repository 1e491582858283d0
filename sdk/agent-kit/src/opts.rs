//! The agents' option strings (`XPUPROF_<BACKEND>_OPTS`): comma-separated `key=value` items,
//! written by the host plugin from its typed config and read in the target, where nothing but
//! the environment reaches the agent. The items, their parsing and the options every agent
//! takes ([`CommonOpts`]) are `xpuprof-wire`'s (both ends use it); [`Common`] is what the
//! agent makes of them, with the outputs its host set.

pub use crate::wire::opts::{parse, AgentOptions, CommonOpts, Opt, PythonMode, StackMode};

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
    /// Most frames per stack (1 to [`wire::MAX_STACK_FRAMES`](crate::wire::MAX_STACK_FRAMES)).
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
            max_depth: max_depth.clamp(1, crate::wire::MAX_STACK_FRAMES),
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

    /// Applies `o` when it is one of the common options ([`CommonOpts`]); false for any other
    /// key. The depth is kept to 1 to [`MAX_STACK_FRAMES`](crate::wire::MAX_STACK_FRAMES) frames
    /// (1024), the buffer to 64 KiB to 1 GiB.
    pub fn apply(&mut self, o: &Opt<'_>) -> Result<bool, String> {
        let mut c = CommonOpts {
            stacks: self.stacks,
            depth: self.max_depth,
            buffer_kib: self.buffer_bytes / 1024,
            verbose: self.verbose,
        };
        if !c.apply(o)? {
            return Ok(false);
        }
        self.stacks = c.stacks;
        self.max_depth = c.depth.clamp(1, crate::wire::MAX_STACK_FRAMES);
        self.buffer_bytes = c.buffer_kib.clamp(64, 1 << 20) * 1024;
        self.verbose = c.verbose;
        Ok(true)
    }

    /// Applies the items of `opts`: the common ones here, the others through `own` (the
    /// backend's options' `apply`, from `xpuprof_wire::agent_options!`); a key neither takes is
    /// an error naming it.
    pub fn parse_with(
        &mut self,
        opts: &str,
        mut own: impl FnMut(&Opt<'_>) -> Result<bool, String>,
    ) -> Result<(), String> {
        for o in parse(opts)? {
            if !self.apply(&o)? && !own(&o)? {
                return Err(o.unknown());
            }
        }
        Ok(())
    }
}

/// An agent's settings: what every agent takes ([`Common`]) and its backend's options (`O`,
/// declared once with `xpuprof_wire::agent_options!` for the host and the agent).
#[derive(Debug, Clone)]
pub struct AgentConfig<O> {
    /// Outputs, launch stacks, their depth, the buffer size, verbosity.
    pub common: Common,
    /// The backend's options.
    pub opts: O,
}

impl<O: AgentOptions> AgentConfig<O> {
    /// The defaults of an agent whose stacks keep at most `max_depth` frames.
    pub fn new(max_depth: usize) -> Self {
        Self { common: Common::new(max_depth), opts: O::default() }
    }

    /// Reads `XPUPROF_<name>_SOCKET` and `XPUPROF_<name>_DUMP`; returns the `XPUPROF_<name>_OPTS`
    /// text for [`AgentConfig::parse_opts`] (read apart, so an agent that cannot parse its
    /// options can still tell its host).
    pub fn read_env(&mut self, name: &str) -> String {
        self.common.read_env(name)
    }

    /// Applies `key=value,...`: the common options, then the backend's.
    pub fn parse_opts(&mut self, opts: &str) -> Result<(), String> {
        let own = &mut self.opts;
        self.common.parse_with(opts, |o| own.apply(o))
    }

    /// The settings of backend `name` (`XPUPROF_<name>_*`) with stacks of at most `max_depth`
    /// frames by default; a bad option is an error naming the variable.
    pub fn from_env(name: &str, max_depth: usize) -> Result<Self, String> {
        let mut c = Self::new(max_depth);
        let opts = c.read_env(name);
        c.parse_opts(&opts).map_err(|e| format!("bad XPUPROF_{name}_OPTS: {e}"))?;
        Ok(c)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn common_options_are_read_and_kept_in_range() {
        let mut c = Common::new(64);
        for o in parse("depth=5000,buffer_kib=1,verbose=1,stacks=ebpf,kernels=0").unwrap() {
            let common = c.apply(&o).unwrap();
            assert_eq!(common, o.key != "kernels", "{}", o.key);
        }
        assert_eq!(
            (c.max_depth, c.buffer_bytes, c.verbose, c.stacks),
            (crate::wire::MAX_STACK_FRAMES, 64 * 1024, true, StackMode::Ebpf)
        );
        assert_eq!(c.apply(&parse("depth=300").unwrap()[0]), Ok(true));
        assert_eq!(c.max_depth, 300, "stacks deeper than 255 frames are kept (wire protocol 2)");
        assert!(c.apply(&parse("depth=x").unwrap()[0]).unwrap_err().contains("bad number"));
    }

    #[test]
    fn a_key_neither_the_kit_nor_the_backend_takes_is_named() {
        let mut c = Common::new(64);
        let mut seen = Vec::new();
        let own = |o: &Opt<'_>| {
            seen.push(o.key.to_string());
            Ok(o.key == "mine")
        };
        assert_eq!(c.parse_with("depth=3,mine=1,theirs=2", own), Err("unknown option `theirs`".into()));
        assert_eq!((c.max_depth, seen), (3, vec!["mine".to_string(), "theirs".into()]));
    }
}
