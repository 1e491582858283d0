//! The `cupti` backend of the toolbox's agent-backed source: the agent injected through
//! `CUDA_INJECTION64_PATH` (and NVTX's), the socket and options it reads, the decoder of its
//! streams and the end-of-session report.

use std::path::Path;

use xpuprof_sdk::prelude::*;
use xpuprof_toolbox::agent_host::{loadable, AgentBackend, AgentCounts, AgentDescriptor, AgentLocator};
use xpuprof_wire::opts::StackMode;

use std::sync::Mutex;

use crate::config::Config;
use crate::decode::{Decoder, Stats};
use crate::follow::{Follower, Target};
use crate::windows::Windows;

/// The backend: its configuration.
#[derive(Debug)]
pub struct Cupti {
    config: Config,
    /// The session's capture windows ([`crate::windows`]).
    windows: Windows,
    /// `attach --tree`: the processes that start using CUDA after the attach ([`crate::follow`]).
    follower: Mutex<Option<Follower>>,
}

/// Warns about what will keep CUDA processes from being traced.
fn check_machine(log: &Logger) {
    let driver = ["libcuda.so.1", "libcuda.so"].iter().any(|n| loadable(n));
    if !driver {
        log.warn("no NVIDIA driver found (libcuda.so.1 cannot be loaded): CUDA programs cannot run here, so the cupti source will record nothing");
    } else if !Path::new("/dev/nvidiactl").exists() && !Path::new("/dev/nvidia0").exists() {
        log.warn("no NVIDIA GPU device node (/dev/nvidia0): CUDA programs will fail to initialise, so the cupti source will record nothing");
    }
    if let Ok(v) = std::env::var("CUDA_INJECTION64_PATH") {
        log.warn(&format!(
            "CUDA_INJECTION64_PATH was already set to {v}; the target gets the xpuprof agent instead"
        ));
    }
}

impl Cupti {
    /// The agent's options: the `[source.cupti]` settings and the session's windows.
    fn agent_opts(&self) -> String {
        crate::config::agent_opts(&self.config, &self.windows)
    }
}

impl AgentBackend for Cupti {
    type Decoder = Decoder;
    const DESCRIPTOR: AgentDescriptor = AgentDescriptor {
        name: "cupti",
        version: env!("CARGO_PKG_VERSION"),
        description:
            "NVIDIA GPUs via CUPTI: kernels, copies, memory, NVTX, API calls and exact launch stacks",
        capability: Capability::CudaRuntime,
        processes: "CUDA",
        agent: AgentLocator {
            file: "libxpuprof_cupti_agent.so",
            env_var: "XPUPROF_CUPTI_AGENT",
            config_key: "[source.cupti] agent",
            package: "xpuprof-cupti-agent",
            what: "CUPTI agent",
        },
    };

    fn config_keys() -> Vec<ConfigKey> {
        crate::config::keys()
    }

    fn machine_checks() -> Vec<MachineCheck> {
        crate::machine::checks()
    }

    /// GPU time is wanted whenever CUDA can run here.
    fn default_source() -> bool {
        true
    }

    fn backends() -> Vec<BackendName> {
        vec![BackendName::new(backend::CUDA, "cuda")]
    }

    fn create(ctx: &CreateContext) -> PluginResult<Self> {
        Ok(Self {
            config: crate::config::read(&ctx.config)?,
            windows: Windows::of(&ctx.session)?,
            follower: Mutex::new(None),
        })
    }

    fn agent_setting(&self) -> Option<&str> {
        self.config.agent.as_deref()
    }

    fn launch_stacks(&self) -> Option<StackMode> {
        Some(self.config.launch_stacks)
    }

    fn inject(&self, agent: &Path, socket: &Path, env: &mut TargetEnv, log: &Logger) {
        check_machine(log);
        let agent = agent.display().to_string();
        env.set("CUDA_INJECTION64_PATH", agent.clone());
        if self.config.nvtx || self.windows.nvtx_range() {
            env.set("NVTX_INJECTION64_PATH", agent);
        }
        env.set("XPUPROF_CUPTI_SOCKET", socket.display().to_string());
        env.set("XPUPROF_CUPTI_OPTS", self.agent_opts());
    }

    fn windows(&self) -> bool {
        true
    }

    fn attach(
        &self,
        pid: u32,
        tree: bool,
        agent: &Path,
        socket: &Path,
        log: &Logger,
    ) -> PluginResult<Vec<u32>> {
        let opts = self.agent_opts();
        let done = crate::attach::attach(pid, tree, agent, socket, &opts, log)?;
        if tree {
            let target = Target { root: pid, agent: agent.to_path_buf(), socket: socket.to_path_buf(), opts };
            match Follower::start(target, done.handled, *log) {
                Ok(f) => *self.follower.lock().unwrap_or_else(|e| e.into_inner()) = Some(f),
                Err(e) => log.warn(&format!(
                    "cupti: failed to start following new processes of the tree ({e}): only those running now are recorded"
                )),
            }
        }
        Ok(done.started)
    }

    fn detaching(&self) {
        if let Some(mut f) = self.follower.lock().unwrap_or_else(|e| e.into_inner()).take() {
            f.stop();
        }
    }

    fn decoder(&self, log: Logger) -> Decoder {
        let mut d = Decoder::new(log);
        // Read once already, when the config was (an error stopped the session there).
        d.kit.stacks.compile = crate::config::compile_frames(&self.config).unwrap_or_default();
        if self.config.pc_sampling && self.config.pc_sampling_sass {
            d.disassemble_with(crate::pc_sampling::nvdisasm(self.config.nvdisasm.as_deref()));
        }
        d
    }

    fn report(&self, (s, own): &(AgentCounts, Stats), log: &Logger) {
        if s.processes == 0 {
            log.warn(
                "no CUDA process was seen: nothing was recorded from the GPU. The program did not initialise CUDA \
                 (no CUDA calls, no GPU, or no NVIDIA driver), or it was started in a way that drops the environment \
                 (CUDA_INJECTION64_PATH)",
            );
            return;
        }
        log.info(&format!("{}, {} API calls", s.summary("cupti"), own.api_calls));
        if let Some(line) = s.python.report() {
            log.info(&format!("cupti: {line}"));
        }
        if let Some(line) = s.python.warning() {
            log.warn(&format!("cupti: {line}"));
        }
        if s.dropped > 0 {
            log.warn(&format!(
                "CUPTI dropped {} records (buffers full); raise [source.cupti] buffer_kib",
                s.dropped
            ));
        }
        if own.unknown_versions > 0 {
            log.warn(&format!("{} CUPTI records of an unknown version were skipped", own.unknown_versions));
        }
    }
}
