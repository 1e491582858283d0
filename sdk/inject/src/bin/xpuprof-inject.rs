//! `xpuprof-inject PID LIBRARY [FUNCTION [ARG...]]`: loads LIBRARY into the running process PID
//! and calls FUNCTION(ARG...) in it (a decimal ARG is passed as an integer, any other as text).
//! Prints `loaded|already loaded, thread TID, returned VALUE`. Exit status: 0 done, 2 refused
//! (the target was not touched), 3 failed inside the target (its thread was restored), 64 usage.
//! For tests and scripts; `xpuprof attach` uses the library directly.

use std::io::Write;
use std::path::Path;

use xpuprof_inject::{inject, Arg, Request};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(pid), Some(lib)) = (args.first().and_then(|p| p.parse::<u32>().ok()), args.get(1)) else {
        eprintln!("usage: xpuprof-inject PID LIBRARY [FUNCTION [ARG...]]");
        std::process::exit(64);
    };
    let mut req = Request::new(Path::new(lib));
    if let Some(f) = args.get(2) {
        let values = args[3..]
            .iter()
            .map(|a| a.parse::<u64>().map(Arg::Int).unwrap_or_else(|_| Arg::Text(a.clone())))
            .collect();
        req = req.call(f, values);
    }
    match inject(pid, &req) {
        Ok(done) => {
            let how = if done.already_loaded { "already loaded" } else { "loaded" };
            let ret = done.returned.map(|v| format!(", returned {}", v as i64)).unwrap_or_default();
            let _ = writeln!(std::io::stdout(), "{how}, thread {}{ret}", done.tid);
        }
        Err(e) => {
            eprintln!("xpuprof-inject: {e}");
            std::process::exit(if e.is_refusal() { 2 } else { 3 });
        }
    }
}
