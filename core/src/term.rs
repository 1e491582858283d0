//! What xpuprof writes to its stderr: best effort, so that a closed terminal or pipe
//! (`xpuprof … 2>&1 | head -1`) never aborts a session, and colour only on a terminal.
//!
//! `eprintln!` panics when stderr is closed; a panic while printing the panic message aborts the
//! process. Every message of the host goes through [`say!`](crate::say) instead (the crate
//! denies `clippy::print_stderr`).

use std::io::{IsTerminal, Write};

/// Writes `args` and a newline to stderr, ignoring errors (a closed stderr is not a reason to
/// lose the outputs).
pub fn say(args: std::fmt::Arguments<'_>) {
    let mut e = std::io::stderr().lock();
    let _ = e.write_fmt(args);
    let _ = e.write_all(b"\n");
}

/// Writes `args` to stderr without a newline and flushes, ignoring errors.
pub fn say_inline(args: std::fmt::Arguments<'_>) {
    let mut e = std::io::stderr().lock();
    let _ = e.write_fmt(args);
    let _ = e.flush();
}

/// Writes a report to stdout, ignoring errors (`xpuprof plugins | head -1` closes it early).
pub fn out(text: &str) {
    let mut o = std::io::stdout().lock();
    let _ = o.write_all(text.as_bytes());
    let _ = o.flush();
}

/// Whether stderr is a terminal: only then are colour codes and the status line written.
pub fn stderr_is_terminal() -> bool {
    std::io::stderr().is_terminal()
}

/// `eprintln!` that never panics: prints one line to stderr, ignoring write errors.
#[macro_export]
macro_rules! say {
    ($($arg:tt)*) => {
        $crate::term::say(format_args!($($arg)*))
    };
}
