//! The `levelzero` source: prepares the target's environment (the agent preloaded, the
//! loader's tracing layer on, a socket), accepts one connection per Level Zero process of the
//! session (children included: they inherit the environment) and decodes them on one thread.

use xpuprof_sdk::prelude::*;
use xpuprof_toolbox::agent_host::{preload, AgentHost, AgentLocator, StreamDecoder};

use crate::config::Config;
use crate::decode::{Decoder, Stats};

/// Agent library file name.
pub const AGENT_FILE: &str = "libxpuprof_levelzero_agent.so";

/// Where the Level Zero agent is looked for.
pub const AGENT: AgentLocator = AgentLocator {
    file: AGENT_FILE,
    env_var: "XPUPROF_LEVELZERO_AGENT",
    config_key: "[source.levelzero] agent",
    package: "xpuprof-levelzero-agent",
    what: "Level Zero agent",
};

/// The plugin instance.
#[derive(Debug)]
pub struct LevelZero {
    config: Config,
    emitter: Option<Emitter>,
    log: Logger,
    host: AgentHost<Decoder>,
}

impl StreamDecoder for Decoder {
    type Stats = Stats;

    fn feed(&mut self, conn: u64, buf: &[u8], out: &mut Emitter) -> usize {
        Decoder::feed(self, conn, buf, out)
    }

    fn end(&mut self, conn: u64, _out: &mut Emitter) {
        self.finish(conn);
    }

    fn finish(self, _out: &mut Emitter) -> Stats {
        self.stats
    }
}

impl LevelZero {
    /// Creates the instance.
    pub fn new(ctx: CreateContext) -> PluginResult<Self> {
        Ok(Self {
            config: Config::from_plugin(&ctx.config)?,
            emitter: Some(ctx.emitter),
            log: ctx.log,
            host: AgentHost::new("levelzero", "Level Zero", ctx.log),
        })
    }

    /// Preloads the agent, turns the tracing layer on and opens the socket.
    pub fn prepare_env(&mut self, env: &mut TargetEnv) -> PluginResult<()> {
        let agent = AGENT.find(self.config.agent.as_deref())?;
        for (missing, why) in crate::machine::missing() {
            self.log.warn(&format!("{missing}: {why}"));
        }
        let sock = self.host.listen()?;
        preload(env, &agent);
        env.set("ZE_ENABLE_TRACING_LAYER", "1");
        env.set("XPUPROF_LEVELZERO_SOCKET", sock.display().to_string());
        env.set("XPUPROF_LEVELZERO_PYTHON", self.config.python.as_str());
        Ok(())
    }

    /// Starts accepting agents and decoding.
    pub fn start_threads(&mut self) -> PluginResult<()> {
        let emitter = self.emitter.take().ok_or_else(|| PluginError::new("levelzero: started twice"))?;
        Ok(self.host.start(Decoder::new(self.log), emitter)?)
    }

    /// Waits for every agent connection to end, decodes the rest and reports.
    pub fn stop_threads(&mut self) -> PluginResult<()> {
        let stats = self.host.stop()?.unwrap_or_default();
        self.report(&stats);
        Ok(())
    }

    fn report(&self, s: &Stats) {
        if s.processes == 0 {
            self.log.warn(
                "no Level Zero process connected: the program did not load the Level Zero loader (libze_loader.so.1), \
                 or it was started in a way that drops the environment (LD_PRELOAD)",
            );
            return;
        }
        self.log.info(&format!(
            "levelzero: {} process(es), {} device operations ({} kernels), {} launch sites, {} API calls",
            s.processes, s.device_ops, s.kernels, s.launch_sites, s.api_calls
        ));
        if let Some(line) = s.python.report() {
            self.log.info(&format!("levelzero: {line}"));
        }
        if let Some(line) = s.python.warning() {
            self.log.warn(&format!("levelzero: {line}"));
        }
        if s.lost > 0 {
            self.log.warn(&format!(
                "levelzero: {} device operations lost (see the losses in the outputs: lists re-executed before their \
                 timestamps could be read, or work unfinished at exit)",
                s.lost
            ));
        }
        if s.unconvertible > 0 {
            self.log.warn(&format!(
                "levelzero: {} device operations had no device clock to convert their time",
                s.unconvertible
            ));
        }
    }
}
