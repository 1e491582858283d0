//! The `rocm` backend of the toolbox's agent-backed source: the agent loaded as a
//! rocprofiler-sdk tool (`ROCP_TOOL_LIBRARIES`) or by ROCr on older ROCm (`HSA_TOOLS_LIB`), the
//! socket and options it reads, the decoder of its streams and the end-of-session report.

use std::path::Path;

use xpuprof_sdk::prelude::*;
use xpuprof_toolbox::agent_host::{AgentBackend, AgentCounts, AgentDescriptor, AgentLocator};
use xpuprof_wire::opts::StackMode;

use crate::config::Config;
use crate::decode::{Decoder, Stats};

/// The backend: its configuration.
#[derive(Debug)]
pub struct Rocm {
    config: Config,
}

impl AgentBackend for Rocm {
    type Decoder = Decoder;
    const DESCRIPTOR: AgentDescriptor = AgentDescriptor {
        name: "rocm",
        version: env!("CARGO_PKG_VERSION"),
        description: "AMD GPUs via rocprofiler-sdk (roctracer on ROCm before 6.2): kernels, copies, allocations, scratch, roctx and exact launch stacks",
        capability: Capability::RocmRuntime,
        processes: "ROCm",
        agent: AgentLocator {
            file: "libxpuprof_rocm_agent.so",
            env_var: "XPUPROF_ROCM_AGENT",
            config_key: "[source.rocm] agent",
            package: "xpuprof-rocm-agent",
            what: "ROCm agent",
        },
    };

    fn config_keys() -> Vec<ConfigKey> {
        crate::config::keys()
    }

    fn machine_checks() -> Vec<MachineCheck> {
        crate::machine::checks()
    }

    fn backends() -> Vec<BackendName> {
        vec![BackendName::new(backend::ROCM, "rocm")]
    }

    fn create(ctx: &CreateContext) -> PluginResult<Self> {
        Ok(Self { config: ctx.config.typed()? })
    }

    fn agent_setting(&self) -> Option<&str> {
        self.config.agent.as_deref()
    }

    fn launch_stacks(&self) -> Option<StackMode> {
        Some(self.config.launch_stacks)
    }

    fn inject(&self, agent: &Path, socket: &Path, env: &mut TargetEnv, log: &Logger) {
        if !Path::new("/dev/kfd").exists() {
            log.warn(
                "no /dev/kfd (the amdgpu kernel driver): HIP programs find no GPU here and the ROCm runtime loads no \
                 tool, so the rocm source may record nothing (see `xpuprof doctor`)",
            );
        }
        for var in ["ROCP_TOOL_LIBRARIES", "HSA_TOOLS_LIB"] {
            if let Ok(v) = std::env::var(var) {
                log.warn(&format!("{var} was already set to {v}; the target gets the xpuprof agent instead"));
            }
        }
        let agent = agent.display().to_string();
        env.set("ROCP_TOOL_LIBRARIES", agent.clone());
        env.set("HSA_TOOLS_LIB", agent);
        env.set("XPUPROF_ROCM_SOCKET", socket.display().to_string());
        env.set("XPUPROF_ROCM_OPTS", crate::config::agent_opts(&self.config));
    }

    fn decoder(&self, log: Logger) -> Decoder {
        Decoder::new(log)
    }

    fn report(&self, (s, own): &(AgentCounts, Stats), log: &Logger) {
        if s.processes == 0 {
            log.warn(
                "no ROCm process was traced: nothing was recorded from the GPU. The program did not initialise HIP, \
                 the runtime did not load the agent (no librocprofiler-register or /dev/kfd: see `xpuprof doctor`), \
                 or the program was started in a way that drops the environment (ROCP_TOOL_LIBRARIES)",
            );
            return;
        }
        log.info(&format!("{}, {} correlation ids retired", s.summary("rocm"), own.retired));
        if s.dropped > 0 {
            log.warn(&format!(
                "the ROCm tracing library dropped {} records (its buffer was full); raise [source.rocm] buffer_kib",
                s.dropped
            ));
        }
    }
}
