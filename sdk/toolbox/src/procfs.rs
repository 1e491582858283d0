//! What the host reads of other processes in `/proc`: a process's parent and its command line.

/// The parent pid of `pid`, from `/proc/PID/stat`; `None` when it is gone or unreadable.
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

/// The arguments of `pid`'s command line (`/proc/PID/cmdline`); empty when it is gone,
/// unreadable, or has none (a kernel thread, a zombie).
pub fn command_line(pid: u32) -> Vec<String> {
    let raw = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    raw.split(|b| *b == 0)
        .filter(|a| !a.is_empty())
        .map(|a| String::from_utf8_lossy(a).into_owned())
        .collect()
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
    fn this_process_has_its_parent_and_command_line() {
        assert_eq!(parent_of(std::process::id()), Some(std::os::unix::process::parent_id()));
        assert!(!command_line(std::process::id()).is_empty());
        assert_eq!(parent_of(u32::MAX), None);
    }
}
