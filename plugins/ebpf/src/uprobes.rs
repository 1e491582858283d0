//! Launch-site uprobes: finding the launch symbols (and the correlation trampoline) in whatever
//! files the target maps, and attaching to each file once.
//!
//! Uprobes attach to a file's inode for every process (pid -1); the BPF side keeps only hits
//! from tracked processes. So one attachment per distinct file covers every process of the
//! tree, including ones that map the file later.

use std::collections::HashSet;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use blazesym::inspect::source::{Elf, Source};
use blazesym::inspect::Inspector;
use blazesym::SymType;
use libbpf_rs::{Link, ProgramMut, UprobeOpts};
use xpuprof_sdk::trampoline;
use xpuprof_sdk::Logger;

use crate::config::Trampoline;
use crate::procmaps::{openable_path, ProcMaps};

/// The two uprobe programs.
#[derive(Debug, Clone, Copy)]
pub struct Programs<'a, 'obj> {
    /// `on_launch`: plain launch probe (cookie = symbol index).
    pub launch: &'a ProgramMut<'obj>,
    /// `on_trampoline`: reads (backend, correlation id) from the arguments.
    pub trampoline: &'a ProgramMut<'obj>,
}

/// The probes of one session.
#[derive(Debug)]
pub struct ProbeSet {
    symbols: Vec<String>,
    trampoline: Trampoline,
    inspector: Inspector,
    scanned: HashSet<(u64, u64)>,
    links: Vec<Link>,
    attached: Vec<u64>,
    trampoline_attached: u64,
    /// Attachments that failed (reported as a loss).
    pub attach_failures: u64,
    /// No capture window is open: nothing is attached, scans attach nothing.
    paused: bool,
}

impl ProbeSet {
    /// Probes for `symbols`, and for the trampoline where `trampoline` says.
    pub fn new(symbols: Vec<String>, trampoline: Trampoline) -> Self {
        let n = symbols.len();
        Self {
            symbols,
            trampoline,
            inspector: Inspector::new(),
            scanned: HashSet::new(),
            links: Vec::new(),
            attached: vec![0; n],
            trampoline_attached: 0,
            attach_failures: 0,
            paused: false,
        }
    }

    /// True when there is nothing to probe.
    pub fn is_empty(&self) -> bool {
        self.symbols.is_empty() && self.trampoline == Trampoline::Off
    }

    /// Attaches in every executable file of `maps` not scanned before.
    pub fn scan_maps(&mut self, progs: Programs<'_, '_>, pid: u32, maps: &ProcMaps, log: &Logger) {
        for m in maps.exec_files() {
            let file = openable_path(pid, &m.path);
            self.scan_file(progs, &file, log);
        }
    }

    /// Detaches every probe (the capture window closed): no uprobe of xpuprof stays in any
    /// file. Scans attach nothing until [`ProbeSet::resume`]; every file is scanned again then.
    pub fn pause(&mut self) {
        self.links.clear();
        self.scanned.clear();
        self.paused = true;
    }

    /// Lets scans attach again (a capture window opened); the caller scans the tree's files.
    pub fn resume(&mut self) {
        self.paused = false;
    }

    /// Attaches in `file` if it defines any of the symbols; each file (inode) is scanned once.
    pub fn scan_file(&mut self, progs: Programs<'_, '_>, file: &Path, log: &Logger) {
        if self.is_empty() || self.paused {
            return;
        }
        let Ok(meta) = std::fs::metadata(file) else { return };
        if !self.scanned.insert((meta.dev(), meta.ino())) {
            return;
        }
        let mut names: Vec<String> = self.symbols.clone();
        let with_trampoline = match self.trampoline {
            Trampoline::Off => false,
            Trampoline::Agents => is_agent_library(file),
            Trampoline::Everywhere => true,
        };
        if with_trampoline {
            names.push(trampoline::SYMBOL.to_owned());
        }
        if names.is_empty() {
            return;
        }
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        let src = Source::Elf(Elf { debug_syms: false, ..Elf::new(file) });
        let Ok(found) = self.inspector.lookup(&src, &names) else { return };
        let offsets: Vec<Option<u64>> = found.iter().map(|syms| function_offset(syms)).collect();
        for (i, offset) in offsets.into_iter().enumerate() {
            let Some(offset) = offset else { continue };
            let is_trampoline = i == self.symbols.len();
            let prog = if is_trampoline { progs.trampoline } else { progs.launch };
            self.attach(prog, file, names[i], offset, i as u64, log);
        }
    }

    fn attach(
        &mut self,
        prog: &ProgramMut<'_>,
        file: &Path,
        name: &str,
        offset: u64,
        idx: u64,
        log: &Logger,
    ) {
        let opts = UprobeOpts { cookie: idx, retprobe: false, ..Default::default() };
        match prog.attach_uprobe_with_opts(-1, file, offset as usize, opts) {
            Ok(link) => {
                self.links.push(link);
                match self.attached.get_mut(idx as usize) {
                    Some(n) => *n += 1,
                    None => self.trampoline_attached += 1,
                }
                log.debug(&format!("uprobe on {name} in {} at file offset {offset:#x}", file.display()));
            }
            Err(e) => {
                self.attach_failures += 1;
                log.warn(&format!(
                    "failed to attach a uprobe to {name} in {}: {e}\nhint: the kernel needs \
                     CONFIG_UPROBES and the file must be on a filesystem that supports them",
                    file.display()
                ));
            }
        }
    }

    /// Attaches the trampoline in xpuprof's agent libraries (`libxpuprof_*_agent.so`) found in
    /// `dirs`, before the target maps them: a uprobe on a file holds for every later mapping,
    /// so the trampoline fires from the first launch even when a program launches right after
    /// its runtime loads the agent (a tool library the ROCm runtime opens, the CUDA injection),
    /// sooner than a maps scan would find it.
    pub fn scan_agent_dirs(&mut self, progs: Programs<'_, '_>, dirs: &[PathBuf], log: &Logger) {
        if self.trampoline == Trampoline::Off {
            return;
        }
        for dir in dirs {
            let Ok(entries) = std::fs::read_dir(dir) else { continue };
            for path in entries.filter_map(|e| e.ok()).map(|e| e.path()) {
                let agent = path.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.contains("_agent"));
                if agent && is_agent_library(&path) {
                    self.scan_file(progs, &path, log);
                }
            }
        }
    }

    /// Warns about every symbol that was found in no file the target mapped.
    pub fn report_missing(&self, log: &Logger) {
        for (sym, n) in self.symbols.iter().zip(&self.attached) {
            if *n == 0 {
                log.warn(&format!(
                    "failed to find launch symbol `{sym}` in any of the {} files the target mapped: \
                     no launch stacks for it\nhint: check the spelling in `launch_probes`; the symbol \
                     must be in the dynamic or static symbol table of a library or the executable",
                    self.scanned.len()
                ));
            }
        }
        // Only when asked for explicitly: by default the trampoline is looked for whenever another
        // source runs, which may well use no agent.
        if self.trampoline == Trampoline::Everywhere && self.trampoline_attached == 0 {
            log.warn(&format!(
                "failed to find `{}` in any file the target mapped: no trampoline launch stacks\n\
                 hint: the trampoline is exported by xpuprof's in-target agents (e.g. --source cupti)",
                trampoline::SYMBOL
            ));
        }
    }
}

/// xpuprof's own in-target agents are named `libxpuprof_<...>.so`.
fn is_agent_library(file: &Path) -> bool {
    file.file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.starts_with("libxpuprof_") && n.contains(".so"))
}

/// The file offset of the defined function among `syms`.
fn function_offset(syms: &[blazesym::inspect::SymInfo<'_>]) -> Option<u64> {
    syms.iter()
        .find(|s| s.sym_type != SymType::Variable && s.addr != 0 && s.file_offset.is_some_and(|o| o != 0))
        .and_then(|s| s.file_offset)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agent_libraries_by_name() {
        assert!(is_agent_library(Path::new("/opt/xpuprof/lib/libxpuprof_cupti_agent.so")));
        assert!(is_agent_library(Path::new("libxpuprof_rocm_agent.so.1")));
        assert!(!is_agent_library(Path::new("/usr/lib/libcuda.so.1")));
        assert!(!is_agent_library(Path::new("/tmp/libxpuprof_cupti_agent.txt")));
        assert!(!is_agent_library(Path::new("/usr/bin/python3")));
    }
}
