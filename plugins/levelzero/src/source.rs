//! The `levelzero` backend of the toolbox's agent-backed source: the agent preloaded with the
//! loader's tracing layer on, the socket it connects to, the decoder of its streams and the
//! end-of-session report.

use std::path::Path;

use xpuprof_sdk::prelude::*;
use xpuprof_toolbox::agent_host::{preload, AgentBackend, AgentCounts, AgentDescriptor, AgentLocator};

use crate::config::Config;
use crate::decode::{Decoder, Stats};

/// The backend: its configuration.
#[derive(Debug)]
pub struct LevelZero {
    config: Config,
}

impl AgentBackend for LevelZero {
    type Decoder = Decoder;
    const DESCRIPTOR: AgentDescriptor = AgentDescriptor {
        name: "levelzero",
        version: env!("CARGO_PKG_VERSION"),
        description: "Intel GPUs via the Level Zero tracing layer: kernels, copies, fills, API calls and exact launch stacks",
        capability: Capability::LevelZeroRuntime,
        processes: "Level Zero",
        agent: AgentLocator {
            file: "libxpuprof_levelzero_agent.so",
            env_var: "XPUPROF_LEVELZERO_AGENT",
            config_key: "[source.levelzero] agent",
            package: "xpuprof-levelzero-agent",
            what: "Level Zero agent",
        },
    };

    fn config_keys() -> Vec<ConfigKey> {
        crate::config::keys()
    }

    fn machine_checks() -> Vec<MachineCheck> {
        crate::machine::checks()
    }

    fn backends() -> Vec<BackendName> {
        vec![BackendName::new(backend::LEVEL_ZERO, "level-zero")]
    }

    fn create(ctx: &CreateContext) -> PluginResult<Self> {
        Ok(Self { config: ctx.config.typed()? })
    }

    fn agent_setting(&self) -> Option<&str> {
        self.config.agent.as_deref()
    }

    // No `launch_stacks` setting, so the trait's `launch_stacks` stays `None` and nothing warns
    // about a missing eBPF source: this agent always captures its own stacks and never calls the
    // eBPF correlation trampoline, because it runs inside the loader's tracing layer and a stack
    // taken from there would stop in that layer (README, "stacks").

    fn inject(&self, agent: &Path, socket: &Path, env: &mut TargetEnv, log: &Logger) {
        for (missing, why) in crate::machine::missing() {
            log.warn(&format!("{missing}: {why}"));
        }
        preload(env, agent);
        env.set("ZE_ENABLE_TRACING_LAYER", "1");
        env.set("XPUPROF_LEVELZERO_SOCKET", socket.display().to_string());
        env.set("XPUPROF_LEVELZERO_OPTS", self.config.to_opts());
    }

    fn decoder(&self, log: Logger) -> Decoder {
        Decoder::new(log)
    }

    fn report(&self, (s, own): &(AgentCounts, Stats), log: &Logger) {
        if s.processes == 0 {
            log.warn(
                "no Level Zero process connected: the program did not load the Level Zero loader (libze_loader.so.1), \
                 or it was started in a way that drops the environment (LD_PRELOAD)",
            );
            return;
        }
        log.info(&format!("{}, {} API calls", s.summary("levelzero"), own.api_calls));
        if let Some(line) = s.python.report() {
            log.info(&format!("levelzero: {line}"));
        }
        if let Some(line) = s.python.warning() {
            log.warn(&format!("levelzero: {line}"));
        }
        if own.lost > 0 {
            log.warn(&format!(
                "levelzero: {} device operations lost (see the losses in the outputs: lists re-executed before their \
                 timestamps could be read, or work unfinished at exit)",
                own.lost
            ));
        }
        if s.lost_chunks > 0 {
            log.warn(&format!(
                "levelzero: the agents dropped {} messages because the host was gone or too slow (see the losses in \
                 the outputs)",
                s.lost_chunks
            ));
        }
        if own.unconvertible > 0 {
            log.warn(&format!(
                "levelzero: {} device operations had no device clock to convert their time",
                own.unconvertible
            ));
        }
    }
}
