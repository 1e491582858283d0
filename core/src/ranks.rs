//! Ranks as labels: a process's rank, local rank and world size, read by the host from the
//! process's environment when the process is defined, and the host's name. A process with a
//! rank is named `rank N (host, pid)` in every output (its definition's `name`).
//!
//! Launchers set these variables in each rank's environment: torchrun (`RANK`, `LOCAL_RANK`,
//! `WORLD_SIZE`), Open MPI (`OMPI_COMM_WORLD_RANK`, `_LOCAL_RANK`, `_SIZE`), PMI launchers
//! (`PMI_RANK`, `PMI_SIZE`) and SLURM (`SLURM_PROCID`, `SLURM_LOCALID`, `SLURM_NTASKS`); the
//! first one set, in that order, wins. `/proc/PID/environ` is readable by root and by the
//! process's own user; a process xpuprof may not read, or one already gone, has no rank.

use std::io::Read;

use xpuprof_archive::host_name;
use xpuprof_sdk::hash::IdMap;
use xpuprof_sdk::model::{ProcessDef, Record};

use crate::pipeline::intern::Globals;

/// Most bytes of a process's environment read (the variables are usually near the start).
const MAX_ENVIRON: u64 = 256 * 1024;
/// Times one process's environment is read at most (its definition again after an `exec`).
const MAX_READS: u8 = 3;

/// Variables naming the rank, the local rank and the world size, by launcher, first wins.
const RANK: &[&str] = &["RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID"];
const LOCAL_RANK: &[&str] = &["LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID"];
const WORLD_SIZE: &[&str] = &["WORLD_SIZE", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_NTASKS"];

/// A process's place in its job.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RankFacts {
    /// Rank in the job.
    pub rank: Option<u32>,
    /// Rank on its host.
    pub local_rank: Option<u32>,
    /// Ranks in the job.
    pub world_size: Option<u32>,
}

impl RankFacts {
    /// The facts a `NUL`-separated `KEY=VALUE` environment block states.
    pub fn from_environ(env: &[u8]) -> Self {
        let get = |names: &[&str]| names.iter().find_map(|n| value(env, n));
        Self { rank: get(RANK), local_rank: get(LOCAL_RANK), world_size: get(WORLD_SIZE) }
    }
}

/// The value of `name` in `env` when it is a plain decimal number.
fn value(env: &[u8], name: &str) -> Option<u32> {
    env.split(|b| *b == 0).find_map(|kv| {
        let v = kv.strip_prefix(name.as_bytes())?.strip_prefix(b"=")?;
        if v.is_empty() || v.len() > 9 || !v.iter().all(u8::is_ascii_digit) {
            return None;
        }
        std::str::from_utf8(v).ok()?.parse().ok()
    })
}

/// The environment of process `pid`, at most [`MAX_ENVIRON`] bytes; `None` when it cannot be
/// read (gone, or another user's and xpuprof is not root).
pub fn read_environ(pid: u32) -> Option<Vec<u8>> {
    let f = std::fs::File::open(format!("/proc/{pid}/environ")).ok()?;
    let mut env = Vec::new();
    f.take(MAX_ENVIRON).read_to_end(&mut env).ok()?;
    Some(env)
}

/// Ticks (about every 100 ms) a process whose environment read empty is read again: a process in
/// the middle of `exec` shows none until the kernel has laid out the new one, and the host
/// defines a process when its records arrive, which under load can fall inside that window.
const EXEC_TICKS: u16 = 100;

/// The name outputs show for a process of rank `rank`.
pub fn display_name(rank: u32, host: &str, pid: u32) -> String {
    format!("rank {rank} ({host}, {pid})")
}

/// What the host knows of each process's rank: the facts found, or how often its environment
/// was read without finding a rank.
#[derive(Debug, Default)]
pub struct Ranks {
    known: IdMap<u32, Known>,
    /// Definitions made while their process's environment read empty (in the middle of
    /// `exec`), with the ticks they have waited: read again at each tick ([`recheck`]).
    pending: Vec<(ProcessDef, u16)>,
    /// Processes named by a rank.
    pub ranked: u64,
}

#[derive(Debug, Clone, Copy)]
enum Known {
    /// Read this many times, no rank found.
    Unranked(u8),
    Ranked(RankFacts),
}

/// What looking a process up found.
enum Lookup {
    Facts(RankFacts),
    /// Nothing to read (no such process, not readable, or read [`MAX_READS`] times).
    Nothing,
    /// An empty environment: the process is in the middle of `exec`, or has none.
    Empty,
}

impl Ranks {
    /// The facts of process `pid`: those found before, else read from its environment unless
    /// that was done [`MAX_READS`] times already (an empty read does not count).
    fn lookup(&mut self, pid: u32) -> Lookup {
        if pid == 0 {
            return Lookup::Nothing;
        }
        let known = self.known.entry(pid).or_insert(Known::Unranked(0));
        match *known {
            Known::Ranked(f) => Lookup::Facts(f),
            Known::Unranked(n) if n >= MAX_READS => Lookup::Nothing,
            Known::Unranked(n) => match read_environ(pid) {
                None => {
                    *known = Known::Unranked(n + 1);
                    Lookup::Nothing
                }
                Some(env) if env.is_empty() => Lookup::Empty,
                Some(env) => {
                    let facts = RankFacts::from_environ(&env);
                    *known = match facts.rank {
                        Some(_) => {
                            self.ranked += 1;
                            Known::Ranked(facts)
                        }
                        None => Known::Unranked(n + 1),
                    };
                    Lookup::Facts(facts)
                }
            },
        }
    }

    /// Keeps `d` to be read again at the next ticks, in place of an earlier one of its process.
    fn wait_for_exec(&mut self, d: ProcessDef) {
        match self.pending.iter_mut().find(|(p, _)| p.pid == d.pid) {
            Some(p) => p.0 = d,
            None => self.pending.push((d, 0)),
        }
    }
}

/// Reads again the environments that read empty when their processes were defined, and
/// returns the definitions to emit again for those that now state a rank (see [`define`]).
/// Called at each tick of the session.
pub fn recheck(g: &mut Globals, out: &mut Vec<Record>) -> Vec<ProcessDef> {
    let mut again = Vec::new();
    if g.ranks.pending.is_empty() {
        return again;
    }
    for (d, ticks) in std::mem::take(&mut g.ranks.pending) {
        if matches!(g.ranks.known.get(&d.pid), Some(Known::Ranked(_))) {
            // Found by a later definition of the process, which went out with it.
            continue;
        }
        match g.ranks.lookup(d.pid) {
            Lookup::Facts(f) if f.rank.is_some() => again.extend(define(g, d, false, out)),
            Lookup::Empty if ticks < EXEC_TICKS => g.ranks.pending.push((d, ticks + 1)),
            _ => {}
        }
    }
    again
}

/// Completes the (session-numbered) definition `d` with its rank, host and name. Returns the
/// definition to emit: `d` when `fresh` (the first definition of the process, or the first
/// with a command), or when it was already emitted without a rank and one is found now (the
/// process `exec`ed into a rank); `None` when nothing changed.
pub fn define(g: &mut Globals, mut d: ProcessDef, fresh: bool, out: &mut Vec<Record>) -> Option<ProcessDef> {
    if d.rank.is_none() {
        match g.ranks.lookup(d.pid) {
            Lookup::Facts(f) => (d.rank, d.local_rank, d.world_size) = (f.rank, f.local_rank, f.world_size),
            Lookup::Empty => g.ranks.wait_for_exec(d.clone()),
            Lookup::Nothing => {}
        }
    }
    let Some(rank) = d.rank else { return fresh.then_some(d) };
    if d.host.is_none() {
        d.host = g.intern(host_name(), out);
    }
    if d.name.is_none() {
        let host = g.text(d.host).to_owned();
        d.name = g.intern(&display_name(rank, &host, d.pid), out);
    }
    Some(d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_launchers_variables_are_read_and_the_first_wins() {
        let torchrun = b"PATH=/bin\0RANK=3\0LOCAL_RANK=1\0WORLD_SIZE=8\0";
        assert_eq!(
            RankFacts::from_environ(torchrun),
            RankFacts { rank: Some(3), local_rank: Some(1), world_size: Some(8) }
        );
        let mpi = b"OMPI_COMM_WORLD_RANK=5\0OMPI_COMM_WORLD_LOCAL_RANK=0\0OMPI_COMM_WORLD_SIZE=6\0";
        assert_eq!(RankFacts::from_environ(mpi).rank, Some(5));
        let slurm = b"SLURM_PROCID=2\0SLURM_LOCALID=0\0SLURM_NTASKS=4\0PMI_RANK=7\0";
        assert_eq!(RankFacts::from_environ(slurm).rank, Some(7), "PMI_RANK comes before SLURM_PROCID");
        assert_eq!(RankFacts::from_environ(slurm).world_size, Some(4));
    }

    #[test]
    fn values_that_are_not_plain_numbers_and_lookalike_names_are_ignored() {
        let env = b"XRANK=1\0RANKS=2\0RANK=-1\0RANK= 4\0RANK=99999999999\0LOCAL_RANK=\0";
        assert_eq!(RankFacts::from_environ(env), RankFacts::default());
    }

    #[test]
    fn this_process_is_read_from_its_own_environment() {
        let env = read_environ(std::process::id()).expect("failed to read this process's environ");
        assert!(env.split(|b| *b == 0).any(|kv| kv.starts_with(b"PATH=")));
        assert_eq!(display_name(1, "node-2", 42), "rank 1 (node-2, 42)");
    }
}

#[cfg(test)]
mod define_tests {
    use xpuprof_sdk::model::StrId;

    use super::*;

    #[test]
    fn a_rank_stated_or_read_names_the_process_and_later_definitions_keep_it() {
        let mut g = Globals::default();
        let mut out = Vec::new();
        let d = ProcessDef::default().pid(u32::MAX - 7).rank(Some(2)).world_size(Some(4));
        let first = define(&mut g, d.clone(), true, &mut out).expect("a first definition is emitted");
        let name = g.text(first.name).to_owned();
        assert_eq!(name, display_name(2, host_name(), u32::MAX - 7));
        assert_eq!(g.text(first.host), host_name());
        // Defined again with its command (a fresh definition): the rank and name stay.
        let again = define(&mut g, d.command(StrId(1)), true, &mut out).unwrap();
        assert_eq!((again.rank, g.text(again.name)), (Some(2), name.as_str()));
        // A rank read from a process's environment is kept for its later definitions.
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .env("RANK", "3")
            .env("WORLD_SIZE", "4")
            .spawn()
            .expect("failed to start sleep");
        let pid = child.id();
        // Until the child has run `exec`, its environment is still the test's; the kernel renames
        // it before it lays out the new environment, which reads empty meanwhile.
        let execed = || {
            std::fs::read_to_string(format!("/proc/{pid}/comm")).is_ok_and(|c| c.trim() == "sleep")
                && read_environ(pid).is_some_and(|e| !e.is_empty())
        };
        while !execed() {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        let first = define(&mut g, ProcessDef::default().pid(pid), true, &mut out);
        let again = define(&mut g, ProcessDef::default().pid(pid).command(StrId(1)), true, &mut out);
        let _ = child.kill();
        let _ = child.wait();
        for d in [first.unwrap(), again.unwrap()] {
            assert_eq!((d.rank, d.world_size), (Some(3), Some(4)));
            assert_eq!(g.text(d.name), display_name(3, host_name(), pid));
        }
        // A process without a rank whose environment cannot be read is defined as it came.
        let plain = ProcessDef::default().pid(u32::MAX - 8);
        assert_eq!(define(&mut g, plain.clone(), true, &mut out), Some(plain.clone()));
        assert_eq!(define(&mut g, plain, false, &mut out), None);
    }

    #[test]
    fn a_process_defined_in_the_middle_of_its_exec_is_named_at_a_later_tick() {
        let mut g = Globals::default();
        let mut out = Vec::new();
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .env("RANK", "5")
            .env("WORLD_SIZE", "8")
            .spawn()
            .expect("failed to start sleep");
        let pid = child.id();
        // Before its `exec` the child's environment is still the test's, without a rank.
        while !std::fs::read_to_string(format!("/proc/{pid}/comm")).is_ok_and(|c| c.trim() == "sleep") {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        // As `define` keeps it when the environment reads empty (which no test can time).
        g.ranks.wait_for_exec(ProcessDef::default().pid(pid).command(StrId(1)));
        g.ranks.wait_for_exec(ProcessDef::default().pid(u32::MAX - 9));
        let mut again = Vec::new();
        while again.is_empty() && !g.ranks.pending.is_empty() {
            again = recheck(&mut g, &mut out);
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        let _ = child.kill();
        let _ = child.wait();
        assert_eq!(again.len(), 1, "{again:?}");
        assert_eq!((again[0].rank, again[0].command), (Some(5), StrId(1)));
        assert_eq!(g.text(again[0].name), display_name(5, host_name(), pid));
        // The process that is gone is not waited for; the named one is not defined again.
        assert!(g.ranks.pending.is_empty(), "{:?}", g.ranks.pending);
        assert!(recheck(&mut g, &mut out).is_empty());
    }
}
