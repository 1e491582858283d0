//! `xpuprof attach` for CUDA: the agent is loaded into each running CUDA process of the target
//! (with `--tree`, its descendants too) by `xpuprof-inject` (a ptrace-driven `dlopen` on one
//! stopped thread), which then calls the agent's `xpuprof_cupti_attach(socket, opts)`; the agent
//! connects to this session's socket, subscribes CUPTI late and records from then on. A process
//! that has the agent loaded already (an earlier attach) only gets the call. A process without
//! libcuda mapped is not a CUDA process (yet): refused, by name; with `--tree` the processes
//! that become CUDA processes later are followed ([`crate::follow`]).

use std::path::Path;

use xpuprof_inject::{inject, Arg, Request};
use xpuprof_sdk::{Logger, PluginError, PluginResult};

/// The agent's attach function.
pub const ATTACH_SYMBOL: &str = "xpuprof_cupti_attach";

/// What an attach did: the processes the agent started in, and every process it took or chose
/// to skip (the follower leaves those alone).
#[derive(Debug, Default)]
pub struct Attached {
    /// The agent started in these.
    pub started: Vec<u32>,
    /// These were dealt with (started, failed, or a launcher without a GPU).
    pub handled: Vec<u32>,
}

/// Loads `agent` into the CUDA processes among `pid` (and its descendants with `tree`) and
/// starts it with `socket` and `opts`. Without a CUDA process it is refused, except with
/// `tree`: a launcher whose workers are still starting is followed instead.
pub fn attach(
    pid: u32,
    tree: bool,
    agent: &Path,
    socket: &Path,
    opts: &str,
    log: &Logger,
) -> PluginResult<Attached> {
    let candidates = if tree { with_descendants(pid) } else { vec![pid] };
    if !Path::new(&format!("/proc/{pid}")).exists() {
        return Err(PluginError::new(format!("failed to attach to process {pid}: no such process")));
    }
    let mut cuda: Vec<u32> = candidates
        .iter()
        .copied()
        .filter(|&p| xpuprof_inject::maps_library(p, "libcuda.so").unwrap_or(false))
        .collect();
    let handled = cuda.clone();
    if tree {
        // A launcher (torchrun) may map the driver without using a GPU: only processes with a GPU
        // device open are CUDA processes (the agent itself refuses one that never called cuInit).
        let (gpu, idle): (Vec<u32>, Vec<u32>) = cuda.iter().partition(|&&p| {
            xpuprof_inject::maps_file(p, |path| path.starts_with("/dev/nvidia")).unwrap_or(false)
        });
        if !gpu.is_empty() {
            for p in idle {
                log.info(&format!("cupti: process {p} maps libcuda but has no GPU open: skipped"));
            }
            cuda = gpu;
        }
    }
    if cuda.is_empty() && tree {
        log.warn(&format!(
            "cupti: neither process {pid} nor any of its {} descendants uses CUDA yet: following the processes \
             that start using it",
            candidates.len() - 1
        ));
        return Ok(Attached::default());
    }
    if cuda.is_empty() {
        let which = if tree {
            format!(
                "neither process {pid} nor any of its {} descendants has libcuda loaded",
                candidates.len() - 1
            )
        } else {
            format!("process {pid} has no libcuda loaded")
        };
        return Err(PluginError::new(format!(
            "failed to attach the cupti source: {which}: not a CUDA process, or CUDA is not initialised yet; \
             attach once it uses the GPU, or start it under `xpuprof record`"
        )));
    }
    let req = Request::new(agent)
        .call(ATTACH_SYMBOL, vec![Arg::Text(socket.display().to_string()), Arg::Text(opts.to_owned())]);
    let mut started = Vec::new();
    let mut first_error: Option<String> = None;
    for p in cuda {
        if let Some(tool) = other_injection(p) {
            let e = format!(
                "process {p} was started with CUDA_INJECTION64_PATH={tool}: another tool (a profiler such as Nsight \
                 Systems) owns CUPTI there, and CUPTI takes one client; end that tool's session, or start the process \
                 without it"
            );
            log.warn(&format!("cupti: {e}"));
            first_error.get_or_insert(e);
            continue;
        }
        match inject(p, &req) {
            Ok(done) if done.returned == Some(0) => {
                let how = if done.already_loaded { "reused the agent already loaded in" } else { "loaded the agent into" };
                log.info(&format!("cupti: {how} process {p} (thread {})", done.tid));
                started.push(p);
            }
            Ok(done) => log.warn(&format!(
                "cupti: the agent in process {p} could not start its attach thread (returned {:?}); that process is not recorded",
                done.returned.map(|v| v as i64)
            )),
            Err(e) => {
                log.warn(&format!("cupti: failed to load the agent into process {p}: {e}"));
                first_error.get_or_insert(e.to_string());
            }
        }
    }
    if !started.is_empty() {
        log.info(
            "cupti: NVTX ranges of a process already running are not recorded after an attach (NVTX chose its \
             tracer at the program's first NVTX call); start it under `xpuprof record` to have them",
        );
    }
    match (started.is_empty(), first_error) {
        (true, Some(e)) if !tree => Err(PluginError::new(format!("failed to attach the cupti source: {e}"))),
        _ => Ok(Attached { started, handled }),
    }
}

/// The CUDA injection another tool gave process `pid` when it started: `CUDA_INJECTION64_PATH` in
/// its environment (as the driver read it at `cuInit`) naming a library that is not an xpuprof
/// agent. That tool owns CUPTI in the process.
fn other_injection(pid: u32) -> Option<String> {
    let env = std::fs::read(format!("/proc/{pid}/environ")).ok()?;
    let value =
        env.split(|&b| b == 0).find_map(|kv| kv.strip_prefix(b"CUDA_INJECTION64_PATH=".as_slice()))?;
    let path = String::from_utf8_lossy(value).into_owned();
    let name = path.rsplit('/').next().unwrap_or(&path);
    (!path.is_empty() && !name.starts_with("libxpuprof_cupti_agent")).then_some(path)
}

/// `pid` and every process descended from it (one scan of `/proc`).
pub(crate) fn with_descendants(pid: u32) -> Vec<u32> {
    let parents: Vec<(u32, u32)> = std::fs::read_dir("/proc")
        .map(|d| {
            d.flatten()
                .filter_map(|e| {
                    let p: u32 = e.file_name().to_str()?.parse().ok()?;
                    let stat = std::fs::read_to_string(format!("/proc/{p}/stat")).ok()?;
                    // `pid (comm) state ppid ...`: the command may hold spaces and parentheses.
                    let ppid = stat.rsplit_once(')')?.1.split_whitespace().nth(1)?.parse().ok()?;
                    Some((p, ppid))
                })
                .collect()
        })
        .unwrap_or_default();
    let mut out = vec![pid];
    let mut i = 0;
    while i < out.len() {
        let parent = out[i];
        out.extend(parents.iter().filter(|&&(_, pp)| pp == parent).map(|&(p, _)| p));
        i += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_descendants_and_refuses_a_process_without_cuda() {
        let mut child = std::process::Command::new("sleep").arg("5").spawn().unwrap();
        let me = std::process::id();
        let all = with_descendants(me);
        assert_eq!(all[0], me);
        assert!(all.contains(&child.id()), "{all:?}");
        let e = attach(
            child.id(),
            false,
            Path::new("/nonexistent.so"),
            Path::new("/tmp/s"),
            "",
            &Logger::stderr(),
        )
        .unwrap_err();
        assert!(e.0.contains(&format!("process {} has no libcuda loaded", child.id())), "{e}");
        assert!(e.0.contains("not a CUDA process"), "{e}");
        child.kill().unwrap();
        child.wait().unwrap();
    }
}
