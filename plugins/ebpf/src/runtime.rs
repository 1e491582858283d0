//! What the source's BPF programs cost, as the kernel counts it: with its BPF run-time
//! statistics on for the session (`kernel.bpf_stats_enabled`, through a descriptor that turns
//! them off again when it closes), every loaded program's runs and the time they took. The
//! sampling program runs in the interrupted thread's context and the tracepoints in the
//! scheduler's, so their time is time taken from whatever ran on that CPU, the profiled
//! program's threads included: an upper bound of the source's share of the target's CPU time
//! (the samples of other processes are counted too, but the program returns at once for them).
//! Said at the end of the session, one line: the part of the eBPF source's cost that no
//! in-process benchmark window can switch off (issue #29).

use std::os::fd::{AsFd, OwnedFd};

use libbpf_rs::ProgramMut;
use xpuprof_sdk::Logger;

use crate::sys;

/// The statistics switch, held for the session (`None` where the kernel refused it: no
/// privilege, or a kernel before 5.8).
pub struct RunTime {
    _on: Option<OwnedFd>,
}

impl RunTime {
    /// Turns the kernel's BPF run-time statistics on for as long as this lives.
    pub fn start(log: &Logger) -> Self {
        let on = sys::enable_run_time_stats()
            .map_err(|e| log.debug(&format!("BPF run-time statistics not available: {e}")))
            .ok();
        RunTime { _on: on }
    }

    /// Whether the kernel counts.
    pub fn counting(&self) -> bool {
        self._on.is_some()
    }
}

/// The line that says what each loaded program that ran cost: `name` runs, milliseconds, microseconds
/// a run; `None` when nothing was counted.
pub fn report(progs: &[(&str, &ProgramMut<'_>)]) -> Option<String> {
    let parts: Vec<String> = progs
        .iter()
        .filter(|(_, p)| p.autoload())
        .filter_map(|(name, p)| {
            let (runs, ns) = sys::program_run_time(p.as_fd()).ok()?;
            (runs > 0).then(|| describe(name, runs, ns))
        })
        .collect();
    (!parts.is_empty())
        .then(|| format!("BPF programs' time on all CPUs (kernel run-time statistics): {}", parts.join("; ")))
}

fn describe(name: &str, runs: u64, ns: u64) -> String {
    format!("{name} {runs} runs, {:.2} ms ({:.2} µs a run)", ns as f64 / 1e6, ns as f64 / 1e3 / runs as f64)
}

#[cfg(test)]
mod tests {
    use super::describe;

    #[test]
    fn a_program_line_says_runs_time_and_time_a_run() {
        assert_eq!(describe("sampling", 4, 10_000), "sampling 4 runs, 0.01 ms (2.50 µs a run)");
    }
}
