//! Tests whose prerequisite is missing (root, a built plugin, a tool) are never silently passed.
//!
//! In CI (`CI` set) a missing prerequisite is a failure: [`missing`] panics with the reason.
//! Elsewhere the test is skipped visibly: [`missing`] prints `SKIPPED: <test>: <reason>`, and
//! when the test binary exits it prints how many tests were skipped and which.

use std::sync::{Mutex, Once};

static SKIPPED: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// Whether the tests run in CI, where every prerequisite must be present.
pub fn in_ci() -> bool {
    std::env::var_os("CI").is_some_and(|v| !v.is_empty())
}

/// Reports that the calling test cannot run because `reason`. Panics in CI; elsewhere records
/// the skip (printed again in the list at exit) and returns, so the test can `return`.
pub fn missing(reason: &str) {
    let thread = std::thread::current();
    let test = thread.name().unwrap_or("a test").to_owned();
    match verdict(in_ci(), &test, reason) {
        Verdict::Fail(message) => panic!("{message}"),
        Verdict::Skip(entry) => {
            eprintln!("SKIPPED: {entry}");
            record(&SKIPPED, entry);
            static AT_EXIT: Once = Once::new();
            // SAFETY: registers a plain function; atexit has no other precondition.
            AT_EXIT.call_once(|| unsafe {
                libc::atexit(print_skipped);
            });
        }
    }
}

/// What a missing prerequisite means for a test.
#[derive(Debug, PartialEq, Eq)]
enum Verdict {
    /// In CI: the test fails with this message.
    Fail(String),
    /// Elsewhere: the test is skipped; this entry goes into the list printed at exit.
    Skip(String),
}

fn verdict(ci: bool, test: &str, reason: &str) -> Verdict {
    if ci {
        Verdict::Fail(format!("{test}: {reason} (CI is set: a missing prerequisite fails the test)"))
    } else {
        Verdict::Skip(format!("{test}: {reason}"))
    }
}

fn record(list: &Mutex<Vec<String>>, entry: String) {
    list.lock().unwrap_or_else(|e| e.into_inner()).push(entry);
}

/// True when running as root; otherwise reports the missing prerequisite (see [`missing`]).
pub fn require_root(why: &str) -> bool {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        return true;
    }
    missing(&format!("needs root ({why}); run the tests as root, as CI does"));
    false
}

/// Prints the skipped tests when the test binary exits (after libtest's summary, which
/// counts them as passed).
extern "C" fn print_skipped() {
    let list = SKIPPED.lock().unwrap_or_else(|e| e.into_inner());
    if list.is_empty() {
        return;
    }
    let mut msg = format!("\n{} test(s) SKIPPED (reported as passed above; in CI they fail):\n", list.len());
    for s in list.iter() {
        msg.push_str(&format!("  {s}\n"));
    }
    use std::io::Write;
    let _ = std::io::stderr().write_all(msg.as_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_prerequisite_fails_in_ci_and_is_a_counted_skip_elsewhere() {
        // The decision and the list are tested without touching the process: no CI variable
        // changed under the other tests, and no SKIPPED line printed by a passing test run.
        match verdict(true, "t", "needs a unicorn") {
            Verdict::Fail(m) => assert!(m.contains("needs a unicorn") && m.contains("CI is set"), "{m}"),
            v => panic!("in CI a missing prerequisite fails the test: {v:?}"),
        }
        let list = Mutex::new(Vec::new());
        match verdict(false, "t", "needs a unicorn") {
            Verdict::Skip(entry) => record(&list, entry),
            v => panic!("elsewhere it is a skip: {v:?}"),
        }
        let list = list.into_inner().unwrap();
        assert_eq!(list.len(), 1, "elsewhere it is counted once: {list:?}");
        assert!(list[0].ends_with("needs a unicorn"), "{list:?}");
    }
}
