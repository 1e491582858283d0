//! Agreement check between the two ways of capturing a launch stack: the CUPTI agent's own
//! frame-pointer walk and the eBPF source's uprobe on the correlation trampoline.
//!
//! Record with both (`[source.cupti] launch_stacks = "both"`, `[source.ebpf]
//! launch_stacks_from_trampoline = true`) into an archive, then:
//!
//! ```text
//! cargo run --release -p xpuprof-plugin-cupti --example agreement -- <out-dir or archive>
//! ```
//!
//! For every correlation key (backend, pid, id) with two launch sites, the stacks are compared
//! frame by frame after leaving out the frames inside the agent and libcupti at the leaf end
//! (the trampoline and the callback are there only in the eBPF stack). Addresses are compared
//! as module + file offset, allowing a difference of one byte (a return address versus the call
//! instruction). Prints the counts and the first disagreements; exits 1 if any key disagrees
//! or none was found.

// A command-line tool: its report is its standard output.
#![allow(clippy::print_stdout)]

use std::collections::HashMap;
use std::path::PathBuf;

use xpuprof_sdk::codec;
use xpuprof_sdk::model::*;

#[derive(Default)]
struct Defs {
    strs: HashMap<StrId, String>,
    modules: HashMap<ModuleId, String>,
    frames: HashMap<FrameId, FrameDef>,
    stacks: HashMap<StackId, Vec<FrameId>>,
}

impl Defs {
    fn add(&mut self, r: &Record) {
        match r {
            Record::Str(s) => {
                self.strs.insert(s.id, s.text.clone());
            }
            Record::Module(m) => {
                let p = self.strs.get(&m.path).cloned().unwrap_or_default();
                self.modules.insert(m.id, p);
            }
            Record::Frame(f) => {
                self.frames.insert(f.id, f.clone());
            }
            Record::Stack(s) => {
                self.stacks.insert(s.id, s.frames.clone());
            }
            _ => {}
        }
    }

    /// The stack as (module path, address, name), leaf first, without the profiler's frames.
    fn program_frames(&self, stack: StackId) -> Vec<(String, u64, String)> {
        let frames = self.stacks.get(&stack).cloned().unwrap_or_default();
        let mut v: Vec<(String, u64, String)> = frames
            .iter()
            .filter_map(|f| self.frames.get(f))
            .map(|f| {
                let m = self.modules.get(&f.module).cloned().unwrap_or_default();
                let n = self.strs.get(&f.name).cloned().unwrap_or_default();
                (m, f.address, n)
            })
            .collect();
        let own = |m: &str| m.contains("libxpuprof_cupti_agent") || m.contains("libcupti");
        let skip = v.iter().take_while(|(m, _, _)| own(m)).count();
        v.drain(..skip);
        v
    }
}

fn same(a: &[(String, u64, String)], b: &[(String, u64, String)]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.0 == y.0 && x.1.abs_diff(y.1) <= 1)
}

fn main() {
    let Some(path) = std::env::args().nth(1).map(PathBuf::from) else {
        eprintln!("usage: agreement <xpuprof output dir or archive>");
        std::process::exit(2);
    };
    let mut reader = match xpuprof_archive::open(&path) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("failed to open archive {}: {e}", path.display());
            std::process::exit(2);
        }
    };
    let mut defs = Defs::default();
    let mut sites: HashMap<CorrelationKey, Vec<StackId>> = HashMap::new();
    let mut bad_batches = 0u64;
    let res = reader.replay(&mut |batch| match codec::decode_all(batch) {
        Ok(records) => {
            for r in &records {
                defs.add(r);
                if let Record::LaunchSite(s) = r {
                    sites.entry(CorrelationKey::new(s.pid, s.correlation)).or_default().push(s.stack);
                }
            }
        }
        Err(_) => bad_batches += 1,
    });
    if let Err(e) = res {
        eprintln!("failed to replay {}: {e}", path.display());
        std::process::exit(2);
    }
    let (mut pairs, mut agree, mut single) = (0u64, 0u64, 0u64);
    let mut shown = 0;
    for (key, stacks) in &sites {
        if stacks.len() < 2 {
            single += 1;
            continue;
        }
        pairs += 1;
        let a = defs.program_frames(stacks[0]);
        let b = defs.program_frames(stacks[1]);
        if same(&a, &b) {
            agree += 1;
        } else if shown < 3 {
            shown += 1;
            println!("disagree at {key:?}:");
            let fmt = |v: &[(String, u64, String)]| {
                v.iter()
                    .map(|(m, a, n)| format!("{}+{a:#x} {n}", m.rsplit('/').next().unwrap_or("")))
                    .collect::<Vec<_>>()
                    .join(" | ")
            };
            println!("  first:  {}", fmt(&a));
            println!("  second: {}", fmt(&b));
        }
    }
    println!(
        "launch keys with both stacks: {pairs}; agree: {agree}; disagree: {}; keys with one stack only: {single}{}",
        pairs - agree,
        if bad_batches > 0 { format!("; {bad_batches} undecodable batches") } else { String::new() }
    );
    if pairs == 0 || agree != pairs {
        std::process::exit(1);
    }
}
