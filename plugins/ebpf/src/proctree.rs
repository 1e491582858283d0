//! The running processes `xpuprof attach` starts from: a process and its descendants, read
//! from `/proc` (the kernel's fork tracepoint follows the tree from then on).

use std::collections::HashMap;

/// The parent of every process now running, from `/proc/PID/stat`.
fn parents() -> HashMap<u32, u32> {
    let Ok(dir) = std::fs::read_dir("/proc") else { return HashMap::new() };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(|pid| Some((pid, parent_of(pid)?)))
        .collect()
}

/// The parent pid of `pid`, or `None` when it is gone.
pub fn parent_of(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    parse_ppid(&stat)
}

/// The ppid field of a `/proc/PID/stat` line (the command in parentheses may hold spaces and
/// parentheses itself, so the fields are counted from the last `)`).
fn parse_ppid(stat: &str) -> Option<u32> {
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(1)?.parse().ok()
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
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    let args: Vec<String> = cmdline
        .split(|b| *b == 0)
        .filter(|a| !a.is_empty())
        .map(|a| String::from_utf8_lossy(a).into_owned())
        .collect();
    if !args.is_empty() {
        return args.join(" ");
    }
    std::fs::read_to_string(format!("/proc/{pid}/comm")).map(|c| c.trim_end().to_owned()).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ppid_is_read_after_a_command_with_parentheses_and_spaces() {
        assert_eq!(parse_ppid("42 (a (b) c) S 7 42 42 0 -1"), Some(7));
        assert_eq!(parse_ppid("garbage"), None);
    }

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
