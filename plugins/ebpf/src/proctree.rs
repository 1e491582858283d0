//! The running processes `xpuprof attach` starts from: a process and its descendants, read
//! from `/proc` (the kernel's fork tracepoint follows the tree from then on).

use std::collections::HashMap;

pub use xpuprof_toolbox::procfs::parent_of;

/// The parent of every process now running, from `/proc/PID/stat`.
fn parents() -> HashMap<u32, u32> {
    let Ok(dir) = std::fs::read_dir("/proc") else { return HashMap::new() };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(|pid| Some((pid, parent_of(pid)?)))
        .collect()
}

/// `root` followed by its descendants now running, parents before their children.
pub fn tree(root: u32) -> Vec<u32> {
    let parents = parents();
    let mut out = vec![root];
    let mut i = 0;
    while i < out.len() {
        let p = out[i];
        let mut kids: Vec<u32> = parents
            .iter()
            .filter(|(c, pp)| **pp == p && **c != p && !out.contains(c))
            .map(|(c, _)| *c)
            .collect();
        kids.sort_unstable();
        out.extend(kids);
        i += 1;
    }
    out
}

/// The command line of `pid`, its arguments joined by spaces (its `comm` when the command line
/// is empty, as for a kernel thread or a zombie).
pub fn command_of(pid: u32) -> String {
    let args = xpuprof_toolbox::procfs::command_line(pid);
    if !args.is_empty() {
        return args.join(" ");
    }
    std::fs::read_to_string(format!("/proc/{pid}/comm")).map(|c| c.trim_end().to_owned()).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tree_of_this_process_holds_a_child_it_started() {
        let mut child = std::process::Command::new("sleep").arg("5").spawn().unwrap();
        let t = tree(std::process::id());
        let _ = child.kill();
        let _ = child.wait();
        assert_eq!(t[0], std::process::id());
        assert!(t.contains(&child.id()), "{t:?} lacks the child {}", child.id());
    }
}
