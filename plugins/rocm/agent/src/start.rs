//! Starting the agent once a tracing library called it: connect to the host, say hello (with the
//! API in use, the module map and a clock pair), run the sender thread, hook the exit flush.
//! Every failure is one message, sent to the host when it is reachable (which shows it) and
//! otherwise printed once on stderr; the program runs untraced.

use xpuprof_agent_kit::channel::{Channel, Chunk, Outputs};
use xpuprof_agent_kit::{modules, wire, AgentCore};
use xpuprof_rocm_wire::{self as rocm_wire, Api};

use crate::config::Config;
use crate::{agent, Agent, Tracer, AGENT, NAME};

/// The agent's settings, or why it cannot run.
pub(crate) fn config() -> Result<Config, String> {
    let c = crate::config::from_env()?;
    if c.common.socket.is_none() && c.common.dump_dir.is_none() {
        return Err(
            "XPUPROF_ROCM_SOCKET is not set (run the program under `xpuprof --source rocm`); tracing is off"
                .into(),
        );
    }
    Ok(c)
}

fn hello(version: u32, flags: u32) -> Vec<u8> {
    let mut b = Vec::new();
    wire::Hello::new(version, flags).encode(&mut b);
    b
}

/// Tells the host (when reachable) why this process is not traced; the caller says it on
/// stderr.
pub(crate) fn refuse(config: &Config, msg: &str) {
    if let Ok(outputs) =
        Outputs::connect(config.common.socket.as_deref(), config.common.dump_dir.as_deref(), "rocm")
    {
        let ch = Channel::new(NAME, 64 * 1024);
        let mut m = hello(0, 0);
        wire::put_message(&mut m, wire::MSG_ERROR, &[msg.as_bytes()]);
        ch.push(Chunk::Bytes(m));
        ch.close();
        ch.run(outputs, || {});
    }
}

/// Starts the agent on `tracer` (loaded from `lib_path`); the tracing library's callbacks are
/// turned on by the caller afterwards.
pub(crate) fn start(
    config: Config,
    tracer: Tracer,
    api: Api,
    version: (u32, u32, u32),
    lib_path: &str,
) -> Result<&'static Agent, String> {
    let outputs =
        Outputs::connect(config.common.socket.as_deref(), config.common.dump_dir.as_deref(), "rocm")?;
    let mut flags = if config.common.stacks.agent_walks() { wire::FLAG_AGENT_STACKS } else { 0 };
    if config.common.stacks.trampoline() {
        flags |= wire::FLAG_TRAMPOLINE_STACKS;
    }
    let me = modules::own_path().unwrap_or_default();
    let core = AgentCore::new(NAME, 64 * 1024, modules::ranges_of(&[lib_path, &me]));
    let mut api_message = Vec::new();
    rocm_wire::put_api(&mut api_message, api, version);
    let runtime = version.0 * 10_000 + version.1 * 100 + version.2;
    core.hello(&wire::Hello::new(runtime, flags), &api_message);
    if AGENT.set(Some(Agent { config, tracer, core })).is_err() {
        return Err("the agent was started twice".into());
    }
    let a = agent().ok_or("the agent did not start")?;
    a.send_clock_pair();
    a.core.start_sender("xpuprof-rocm-send", outputs, || {
        if let Some(a) = agent() {
            a.core.drain_launches();
        }
    })?;
    xpuprof_agent_kit::exit::install(|| {
        if let Some(a) = agent() {
            crate::finish::finish(a);
        }
    });
    Ok(a)
}

/// Reports a failure to enable tracing after the stream started: the host shows the message.
pub(crate) fn fail_after_start(a: &Agent, msg: &str) {
    let mut m = Vec::new();
    wire::put_message(&mut m, wire::MSG_ERROR, &[msg.as_bytes()]);
    a.core.channel.push(Chunk::Bytes(m));
    crate::finish::finish(a);
}
