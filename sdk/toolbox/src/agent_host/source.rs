//! The `Source` of every GPU backend with an in-target agent: a backend says what it is, how
//! its agent is injected, which decoder reads its agents' streams and what it reports at the
//! end ([`AgentBackend`]); [`AgentSource`] does the rest (the agent found, the socket opened in
//! `prepare`, the [`AgentHost`]'s threads started and stopped, the report).
//!
//! ```no_run
//! # use std::path::Path;
//! # use xpuprof_sdk::prelude::*;
//! # use xpuprof_toolbox::agent_host::{AgentBackend, AgentDescriptor, AgentLocator, AgentSource, StreamDecoder};
//! # struct MyDecoder;
//! # impl StreamDecoder for MyDecoder {
//! #     type Stats = u64;
//! #     fn feed(&mut self, _: u64, b: &[u8], _: &mut Emitter) -> usize { b.len() }
//! #     fn end(&mut self, _: u64, _: &mut Emitter) {}
//! #     fn finish(self, _: &mut Emitter) -> u64 { 0 }
//! # }
//! struct MyGpu;
//!
//! impl AgentBackend for MyGpu {
//!     type Decoder = MyDecoder;
//!     const DESCRIPTOR: AgentDescriptor = AgentDescriptor {
//!         name: "my-gpu",
//!         version: env!("CARGO_PKG_VERSION"),
//!         description: "MyGPU kernels",
//!         capability: Capability::named("my-gpu-runtime"),
//!         processes: "MyGPU",
//!         agent: AgentLocator {
//!             file: "libmy_agent.so",
//!             env_var: "MY_AGENT",
//!             config_key: "[source.my-gpu] agent",
//!             package: "my-agent",
//!             what: "MyGPU agent",
//!         },
//!     };
//!
//!     fn config_keys() -> Vec<ConfigKey> {
//!         Vec::new()
//!     }
//!     fn create(_ctx: &CreateContext) -> PluginResult<Self> {
//!         Ok(MyGpu)
//!     }
//!     fn inject(&self, agent: &Path, socket: &Path, env: &mut TargetEnv, _log: &Logger) {
//!         env.set("MY_RUNTIME_TOOL", agent.display().to_string());
//!         env.set("MY_AGENT_SOCKET", socket.display().to_string());
//!     }
//!     fn decoder(&self, _log: Logger) -> MyDecoder {
//!         MyDecoder
//!     }
//!     fn report(&self, records: &u64, log: &Logger) {
//!         log.info(&format!("my-gpu: {records} records"));
//!     }
//! }
//!
//! xpuprof_sdk::export_plugin!(source: AgentSource<MyGpu>);
//! ```

use std::path::Path;

use xpuprof_sdk::{
    BackendName, Capability, ConfigKey, CreateContext, Emitter, Logger, MachineCheck, PluginError,
    PluginInfo, PluginResult, Source, TargetEnv,
};

use super::{AgentHost, AgentLocator, StreamDecoder};
use xpuprof_wire::opts::{AgentOptions, CommonOpts, StackMode};

/// What a backend is: the fixed part of its plugin declaration, its agent library, and what the
/// processes its agents run in are called.
#[derive(Debug, Clone, Copy)]
pub struct AgentDescriptor {
    /// The plugin's name (`--source NAME`); it also names the host's threads and socket folder.
    pub name: &'static str,
    /// The plugin's version (`env!("CARGO_PKG_VERSION")`).
    pub version: &'static str,
    /// One line saying what it records.
    pub description: &'static str,
    /// What it needs from the machine.
    pub capability: Capability,
    /// What the processes its agents run in are called in messages ("CUDA", "Level Zero").
    pub processes: &'static str,
    /// Where its agent library is looked for.
    pub agent: AgentLocator,
}

/// What a GPU backend with an in-target agent is made of; [`AgentSource`] turns it into the
/// plugin's `Source`.
pub trait AgentBackend: Sized + Send + 'static {
    /// Reads the agents' streams on the decoder thread.
    type Decoder: StreamDecoder;

    /// What it is.
    const DESCRIPTOR: AgentDescriptor;

    /// Its configuration keys.
    fn config_keys() -> Vec<ConfigKey>;

    /// What `xpuprof doctor` checks for it: one check of [`AgentDescriptor::capability`] (the
    /// runtime libraries, drivers and device nodes its agent needs). See
    /// [`Source::machine_checks`]; default: none.
    fn machine_checks() -> Vec<MachineCheck> {
        Vec::new()
    }

    /// Whether it runs when the user names no source and its check passes
    /// ([`Source::default_source`]); default: `false`.
    fn default_source() -> bool {
        false
    }

    /// The correlation backends it issues ids for, with their names in reports
    /// ([`Source::backends`]); default: none.
    fn backends() -> Vec<BackendName> {
        Vec::new()
    }

    /// Reads the configuration (and warns about settings this session makes pointless).
    fn create(ctx: &CreateContext) -> PluginResult<Self>;

    /// The agent library the user named (the `agent` setting), if any.
    fn agent_setting(&self) -> Option<&str> {
        None
    }

    /// The `launch_stacks` setting, for a backend whose agent can leave launch stacks to the
    /// eBPF source (its agent calls the correlation trampoline); `None` (the default) for one
    /// whose agent always captures them itself. [`AgentSource`] warns when the setting wants
    /// the eBPF source and the session lacks it.
    fn launch_stacks(&self) -> Option<StackMode> {
        None
    }

    /// Warns about what the machine lacks and sets what makes the target load `agent` and
    /// connect to `socket`; children inherit the environment.
    fn inject(&self, agent: &Path, socket: &Path, env: &mut TargetEnv, log: &Logger);

    /// True when the backend's agent obeys the host's capture commands (opens and closes
    /// windows, [`AgentHost::set_capture`]); without it `set_capture` is refused, so the host
    /// says the source records the whole run.
    fn windows(&self) -> bool {
        false
    }

    /// Loads the agent into the running process `pid` (with `tree`, into its descendants too)
    /// so that it connects to `socket`; returns the processes it was loaded into. The default
    /// refuses: the backend's runtime chooses its tracing at start.
    fn attach(
        &self,
        pid: u32,
        tree: bool,
        agent: &Path,
        socket: &Path,
        log: &Logger,
    ) -> PluginResult<Vec<u32>> {
        let _ = (pid, tree, agent, socket, log);
        Err(PluginError::new(format!(
            "the {} source cannot attach to a running process: its runtime chooses its tracing when the process starts; \
             start the program under `xpuprof record` instead",
            Self::DESCRIPTOR.name
        )))
    }

    /// The attach session is ending: stop loading the agent into more processes (a backend that
    /// follows processes started after the attach); called before the agents are told to
    /// detach. The default does nothing.
    fn detaching(&self) {}

    /// A decoder for one session.
    fn decoder(&self, log: Logger) -> Self::Decoder;

    /// Logs what was recorded once every connection ended.
    fn report(&self, stats: &<Self::Decoder as StreamDecoder>::Stats, log: &Logger);
}

/// The `Source` of backend `B`: export it with `xpuprof_sdk::export_plugin!(source: AgentSource<B>)`.
pub struct AgentSource<B: AgentBackend> {
    backend: B,
    log: Logger,
    /// Taken by `start`.
    emitter: Option<Emitter>,
    host: AgentHost<B::Decoder>,
    /// The agents were loaded into running processes (attach): `stop` detaches them.
    attached: bool,
}

/// How long closing a window waits for the agents' records of it (the agents wait 200 ms for
/// the window's last kernels, then flush).
pub const WINDOW_CLOSE_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

/// How long `attach` waits for the agents it loaded to connect.
pub const ATTACH_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

impl<B: AgentBackend> std::fmt::Debug for AgentSource<B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentSource").field("host", &self.host).finish()
    }
}

impl<B: AgentBackend> AgentSource<B> {
    /// The backend.
    pub fn backend(&self) -> &B {
        &self.backend
    }
}

/// The options string (`XPUPROF_<B>_OPTS`) of an agent that takes the options every agent
/// takes: where launch stacks come from (`stacks`), the most frames per stack (`depth`) and the
/// record buffer's size (`buffer_kib`), as the host's settings give them, then the backend's
/// own (`own`, its `backend_options!` struct).
pub fn agent_opts(stacks: StackMode, depth: usize, buffer_kib: usize, own: &impl AgentOptions) -> String {
    let common = CommonOpts { stacks, depth, buffer_kib, verbose: false };
    format!("{},{}", common.to_opts(), own.to_opts())
}

/// Warns when `launch_stacks` of source `name` wants launch stacks from the eBPF source and the
/// session does not run it.
fn warn_without_ebpf(name: &str, stacks: StackMode, ctx: &CreateContext) {
    if !stacks.trampoline() || ctx.session.sources.iter().any(|s| s == "ebpf") {
        return;
    }
    let effect = match stacks {
        StackMode::Both => "only the agent's stacks are recorded",
        _ => "kernels get no launch stacks",
    };
    ctx.log.warn(&format!(
        "launch_stacks = \"{}\" takes launch stacks from the eBPF source, which is not in this session: {effect}\n\
         hint: run with --source ebpf,{name} (root), or set launch_stacks = \"agent\"",
        stacks.as_str()
    ));
}

impl<B: AgentBackend> Source for AgentSource<B> {
    fn info() -> PluginInfo {
        let d = B::DESCRIPTOR;
        PluginInfo {
            name: d.name,
            version: d.version,
            description: d.description,
            config_keys: B::config_keys(),
            capabilities: vec![d.capability],
        }
    }

    fn machine_checks() -> Vec<MachineCheck> {
        B::machine_checks()
    }

    fn default_source() -> bool {
        B::default_source()
    }

    fn backends() -> Vec<BackendName> {
        B::backends()
    }

    fn create(ctx: CreateContext) -> PluginResult<Self> {
        let backend = B::create(&ctx)?;
        if let Some(stacks) = backend.launch_stacks() {
            warn_without_ebpf(B::DESCRIPTOR.name, stacks, &ctx);
        }
        let host = AgentHost::new(B::DESCRIPTOR.name, B::DESCRIPTOR.processes, ctx.log);
        Ok(Self { backend, log: ctx.log, emitter: Some(ctx.emitter), host, attached: false })
    }

    fn prepare(&mut self, env: &mut TargetEnv) -> PluginResult<()> {
        let agent = B::DESCRIPTOR.agent.find(self.backend.agent_setting())?;
        let socket = self.host.listen()?;
        self.backend.inject(&agent, &socket, env, &self.log);
        Ok(())
    }

    fn start(&mut self, _pid: u32) -> PluginResult<()> {
        let emitter = self
            .emitter
            .take()
            .ok_or_else(|| PluginError::new(format!("{}: started twice", B::DESCRIPTOR.name)))?;
        Ok(self.host.start(self.backend.decoder(self.log), emitter)?)
    }

    fn set_capture(&mut self, on: bool) -> PluginResult<()> {
        if !self.backend.windows() {
            return Err(PluginError::new(format!(
                "the {} agent cannot pause: it records the whole run",
                B::DESCRIPTOR.name
            )));
        }
        let before = super::control::closed_windows();
        let reached = self.host.set_capture(on) as u64;
        if !on && reached > 0 {
            // Each agent closes its window (its kernels' grace, a flush) and sends its records
            // and then the closing edge; an agent whose window was closed already sends none.
            let deadline = std::time::Instant::now() + WINDOW_CLOSE_WAIT;
            while super::control::closed_windows() < before + reached && std::time::Instant::now() < deadline
            {
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
        }
        Ok(())
    }

    fn attach(&mut self, pid: u32, tree: bool) -> PluginResult<()> {
        let agent = B::DESCRIPTOR.agent.find(self.backend.agent_setting())?;
        let socket = self.host.listen()?;
        self.start(pid)?;
        let before = self.host.accepted();
        let pids = self.backend.attach(pid, tree, &agent, &socket, &self.log)?;
        self.attached = true;
        let want = before + pids.len() as u64;
        if !self.host.wait_for_connections(want, ATTACH_WAIT) {
            self.log.warn(&format!(
                "{} of {} {} processes the agent was loaded into connected within {} s; the others are not recorded",
                self.host.accepted() - before,
                pids.len(),
                B::DESCRIPTOR.processes,
                ATTACH_WAIT.as_secs()
            ));
        }
        Ok(())
    }

    fn stop(&mut self) -> PluginResult<()> {
        if self.attached {
            self.backend.detaching();
            self.host.detach_agents();
        }
        if let Some(stats) = self.host.stop()? {
            self.backend.report(&stats, &self.log);
        }
        Ok(())
    }
}
