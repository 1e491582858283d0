//! `acme-agent`: the host half of a whole backend for the fictitious Acme runtime, whose
//! in-target half is the C agent `examples/c-agent-acme` (on xpuprof's C agent kit). The source
//! preloads the agent into the target, listens on the Unix socket the agent connects to, and
//! turns each process's stream into records: the process, its threads, every launch with its
//! exact stack (module + file offset, symbolised by the host), its API call, and the kernels
//! the device ran, joined to their launch by correlation id; the agent's losses become `Loss`
//! records.
//!
//! - [`host`]: the socket, one reader thread per connection, one decoder thread;
//! - [`decode`]: the stream (`xpuprof_sdk::wire::stream::StreamReader`) to records.
//!
//! Run: `xpuprof --plugin-dir . --source acme-agent --set source.acme-agent.agent=$PWD/libacme_agent.so
//! --sink folded -- ./app` (see `PREFIX/share/xpuprof/plugin-tutorial.md`, section 9).

pub mod decode;
pub mod host;

use xpuprof_sdk::prelude::*;

xpuprof_sdk::plugin_config! {
    /// The `[source.acme-agent]` table.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct AcmeConfig {
        /// path of the Acme agent library (libacme_agent.so), preloaded into the target
        pub agent: String = "";
    }
}

/// The correlation backend of the Acme runtime's ids: the agent's `ACME_BACKEND`.
pub const BACKEND: u32 = 0x142;
/// The variable that carries the socket's path to the agent (its `socket_env`).
pub const SOCKET_ENV: &str = "ACME_XPUPROF_SOCKET";

/// The source: its config, its emitter and logger, the socket between `prepare` and `start`,
/// and the agent host while it runs.
#[derive(Debug)]
pub struct AcmeSource {
    config: AcmeConfig,
    emitter: Emitter,
    log: Logger,
    listening: Option<host::Listening>,
    host: Option<host::Host>,
}

impl Source for AcmeSource {
    fn info() -> PluginInfo {
        PluginInfo {
            name: "acme-agent",
            version: env!("CARGO_PKG_VERSION"),
            description: "the Acme runtime, through its in-target agent: launches with exact stacks, kernels",
            config_keys: AcmeConfig::schema().into_keys(),
            capabilities: vec![],
        }
    }

    fn backends() -> Vec<BackendName> {
        vec![BackendName::new(BACKEND, "acme")]
    }

    fn create(ctx: CreateContext) -> PluginResult<Self> {
        Ok(Self {
            config: ctx.config.typed()?,
            emitter: ctx.emitter,
            log: ctx.log,
            listening: None,
            host: None,
        })
    }

    /// Listens on a socket of its own and has the target preload the agent, which connects to it.
    fn prepare(&mut self, env: &mut TargetEnv) -> PluginResult<()> {
        let agent = std::path::Path::new(&self.config.agent);
        if !agent.is_file() {
            return Err(PluginError::new(format!(
                "failed to find the Acme agent at '{}': set source.acme-agent.agent to the path of \
                 libacme_agent.so (built by examples/c-agent-acme's Makefile)",
                agent.display()
            )));
        }
        let listening =
            host::Listening::new().map_err(|e| format!("failed to listen for the Acme agent: {e}"))?;
        env.set(SOCKET_ENV, listening.socket().display().to_string());
        let preload = match std::env::var("LD_PRELOAD") {
            Ok(user) if !user.is_empty() => format!("{} {user}", agent.display()),
            _ => agent.display().to_string(),
        };
        env.set("LD_PRELOAD", preload);
        self.listening = Some(listening);
        Ok(())
    }

    fn start(&mut self, _pid: u32) -> PluginResult<()> {
        let Some(listening) = self.listening.take() else { return Ok(()) };
        let decoder = decode::Decoder::new(self.emitter.clone(), self.log);
        let host = host::Host::start(listening, decoder, self.log)
            .map_err(|e| format!("failed to start the Acme host: {e}"))?;
        self.host = Some(host);
        Ok(())
    }

    /// Every agent flushed and closed its connection when its process exited: decodes the rest.
    fn stop(&mut self) -> PluginResult<()> {
        if let Some(host) = self.host.take() {
            let decoder = host.stop().map_err(|e| format!("failed to stop the Acme host: {e}"))?;
            let c = decoder.finish();
            self.log.info(&format!(
                "acme-agent: {} process(es), {} launches, {} kernels, {} stream(s) refused",
                c.processes, c.launches, c.kernels, c.refused
            ));
        }
        self.emitter.flush();
        Ok(())
    }
}

xpuprof_sdk::export_plugin!(source: AcmeSource);
