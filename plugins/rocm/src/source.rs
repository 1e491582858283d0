//! The `rocm` source: prepares the target's environment (agent injection, socket) and runs the
//! toolbox's agent host (one connection per ROCm process, one decoder thread).

use xpuprof_sdk::prelude::*;
use xpuprof_toolbox::agent_host::{AgentHost, AgentLocator, StreamDecoder};

use crate::config::Config;
use crate::decode::{Decoder, Stats};

/// Agent library file name.
pub const AGENT_FILE: &str = "libxpuprof_rocm_agent.so";

/// Where the agent is.
pub const AGENT: AgentLocator = AgentLocator {
    file: AGENT_FILE,
    env_var: "XPUPROF_ROCM_AGENT",
    config_key: "[source.rocm] agent",
    package: "xpuprof-rocm-agent",
    what: "ROCm agent",
};

impl StreamDecoder for Decoder {
    type Stats = Stats;

    fn feed(&mut self, conn: u64, buf: &[u8], out: &mut Emitter) -> usize {
        Decoder::feed(self, conn, buf, out)
    }

    fn end(&mut self, conn: u64, out: &mut Emitter) {
        Decoder::finish(self, conn, out);
    }

    fn finish(mut self, out: &mut Emitter) -> Stats {
        self.finish_all(out);
        self.stats
    }
}

/// The plugin instance.
#[derive(Debug)]
pub struct Rocm {
    config: Config,
    emitter: Option<Emitter>,
    log: Logger,
    host: AgentHost<Decoder>,
}

impl Rocm {
    /// Creates the instance.
    pub fn new(ctx: CreateContext) -> PluginResult<Self> {
        let config = Config::from_plugin(&ctx.config)?;
        if config.launch_stacks.needs_ebpf() && !ctx.session.sources.iter().any(|s| s == "ebpf") {
            ctx.log.warn(&format!(
                "launch_stacks = \"{}\" takes launch stacks from the eBPF source, which is not in this session\n\
                 hint: run with --source ebpf,rocm (root), or set launch_stacks = \"agent\"",
                config.launch_stacks.as_str()
            ));
        }
        Ok(Self {
            config,
            emitter: Some(ctx.emitter),
            log: ctx.log,
            host: AgentHost::new("rocm", "ROCm", ctx.log),
        })
    }

    /// Sets the agent injection and the socket in the target's environment.
    pub fn prepare_env(&mut self, env: &mut TargetEnv) -> PluginResult<()> {
        let agent = AGENT.find(self.config.agent.as_deref())?;
        if !std::path::Path::new("/dev/kfd").exists() {
            self.log.warn(
                "no /dev/kfd (the amdgpu kernel driver): HIP programs find no GPU here and the ROCm runtime loads no \
                 tool, so the rocm source may record nothing (see `xpuprof doctor`)",
            );
        }
        for var in ["ROCP_TOOL_LIBRARIES", "HSA_TOOLS_LIB"] {
            if let Ok(v) = std::env::var(var) {
                self.log.warn(&format!(
                    "{var} was already set to {v}; the target gets the xpuprof agent instead"
                ));
            }
        }
        let socket = self.host.listen()?;
        let agent = agent.display().to_string();
        env.set("ROCP_TOOL_LIBRARIES", agent.clone());
        env.set("HSA_TOOLS_LIB", agent);
        env.set("XPUPROF_ROCM_SOCKET", socket.display().to_string());
        env.set("XPUPROF_ROCM_OPTS", self.config.agent_opts());
        Ok(())
    }

    /// Starts accepting agents and decoding.
    pub fn start_threads(&mut self) -> PluginResult<()> {
        let emitter = self.emitter.take().ok_or_else(|| PluginError::new("rocm: started twice"))?;
        self.host.start(Decoder::new(self.log), emitter)?;
        Ok(())
    }

    /// Waits for every agent connection to end, decodes the rest and reports.
    pub fn stop_threads(&mut self) -> PluginResult<()> {
        if let Some(s) = self.host.stop()? {
            self.report(&s);
        }
        Ok(())
    }

    fn report(&self, s: &Stats) {
        if s.processes == 0 {
            self.log.warn(
                "no ROCm process was traced: nothing was recorded from the GPU. The program did not initialise HIP, \
                 the runtime did not load the agent (no librocprofiler-register or /dev/kfd: see `xpuprof doctor`), \
                 or the program was started in a way that drops the environment (ROCP_TOOL_LIBRARIES)",
            );
            return;
        }
        self.log.info(&format!(
            "rocm: {} process(es), {} device operations ({} kernels), {} launch sites, {} correlation ids retired",
            s.processes, s.device_ops, s.kernels, s.launch_sites, s.retired
        ));
        if s.dropped > 0 {
            self.log.warn(&format!(
                "the ROCm tracing library dropped {} records (its buffer was full); raise [source.rocm] buffer_kib",
                s.dropped
            ));
        }
    }
}
