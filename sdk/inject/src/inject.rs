//! The injection itself: checks, the choice of a thread, `dlopen`, the library's function, and
//! the release of the thread.

use std::path::Path;

use crate::call::{self, Scratch};
use crate::elf::Loaded;
use crate::error::InjectError;
use crate::maps::{self, Mapping};
use crate::target::{self, DlFunctions};
use crate::thread::Stopped;
use crate::{Arg, Injected, Request};

/// Most bytes of a `dlerror` message read from the target.
const MAX_MESSAGE: usize = 4096;

pub(crate) fn run(pid: u32, req: &Request) -> Result<Injected, InjectError> {
    let library = std::fs::canonicalize(&req.library)
        .map_err(|e| InjectError::Library { path: req.library.clone(), why: e.to_string() })?;
    if let Some((_, args)) = &req.call {
        if args.len() > 6 {
            return Err(InjectError::Library {
                path: library,
                why: "more than six arguments to the call".into(),
            });
        }
    }
    target::preflight(pid)?;
    let maps = maps::read(pid).map_err(|e| crate::error::proc_error(pid, e))?;
    let already_loaded = maps::loaded(&maps, &library).is_some();
    if !already_loaded {
        let root = Path::new("/proc").join(pid.to_string()).join("root");
        crate::reach::check(pid, &root, &library, crate::reach::User::of(pid).as_ref())?;
    }
    let dl = if already_loaded { None } else { Some(target::dl_functions(pid, &maps)?) };
    let mut t = choose_thread(pid, &maps)?;
    let tid = t.tid;
    let mut scratch = Scratch::new(&t);
    if let Some(dl) = dl {
        load(&mut t, &mut scratch, &dl, &library, req)?;
    }
    let returned = match &req.call {
        Some((symbol, args)) => Some(call_export(&mut t, &mut scratch, &library, symbol, args, req)?),
        None => None,
    };
    t.release()?;
    Ok(Injected { tid, already_loaded, returned })
}

/// `dlopen(library, RTLD_NOW)` on `t`; `dlerror()`'s text when it fails.
fn load(
    t: &mut Stopped,
    s: &mut Scratch,
    dl: &DlFunctions,
    library: &Path,
    req: &Request,
) -> Result<(), InjectError> {
    let path = s.text(t, &library.to_string_lossy())?;
    let handle = call::call(t, s, dl.dlopen, &[path, dl.mode], "dlopen", req.timeout)?;
    if handle != 0 {
        return Ok(());
    }
    let message = match dl.dlerror {
        Some(f) => match call::call(t, s, f, &[], "dlerror", req.timeout)? {
            0 => "no reason given".to_owned(),
            text => t.read_text(text, MAX_MESSAGE),
        },
        None => "no reason available (no dlerror in the target's loader)".to_owned(),
    };
    Err(InjectError::Dlopen { pid: t.pid, path: library.to_path_buf(), message })
}

/// Calls `symbol(args...)` of the (now loaded) `library` on `t`.
fn call_export(
    t: &mut Stopped,
    s: &mut Scratch,
    library: &Path,
    symbol: &str,
    args: &[Arg],
    req: &Request,
) -> Result<u64, InjectError> {
    let pid = t.pid;
    let no_symbol = || InjectError::NoSymbol { pid, path: library.to_path_buf(), symbol: symbol.to_owned() };
    let maps = maps::read(pid).map_err(|e| crate::error::proc_error(pid, e))?;
    let first = maps::loaded(&maps, library).ok_or_else(no_symbol)?;
    let lib = Loaded::read(&maps::mapped_file(pid, first), first)
        .map_err(|why| InjectError::Library { path: library.to_path_buf(), why })?;
    let func = lib.function(&[symbol]).ok_or_else(no_symbol)?;
    let mut values = Vec::with_capacity(args.len());
    for a in args {
        values.push(match a {
            Arg::Int(v) => *v,
            Arg::Text(text) => s.text(t, text)?,
        });
    }
    call::call(t, s, func, &values, symbol, req.timeout)
}

/// The first thread that may run the calls: sleeping in a system call and not blocking SIGSEGV;
/// else, a second round, any thread not blocking SIGSEGV and not inside the dynamic loader.
fn choose_thread(pid: u32, maps: &[Mapping]) -> Result<Stopped, InjectError> {
    let loader: Vec<(u64, u64)> = maps
        .iter()
        .filter(|m| m.exec && maps::file_name(&m.path).starts_with("ld-"))
        .map(|m| (m.start, m.end))
        .collect();
    let mut why: Vec<String> = Vec::new();
    for want_sleeping in [true, false] {
        for tid in target::threads(pid) {
            if let Some(reason) = target::unsuitable(pid, tid, want_sleeping) {
                why.push(reason);
                continue;
            }
            let t = match Stopped::stop(pid, tid) {
                Ok(t) => t,
                Err(InjectError::Exited { .. }) if tid != pid => continue,
                Err(e) => return Err(e),
            };
            let rip = t.regs.rip;
            if want_sleeping && !t.in_syscall() {
                why.push(format!("thread {tid} woke up"));
            } else if loader.iter().any(|&(a, b)| (a..b).contains(&rip)) {
                why.push(format!("thread {tid} is inside the dynamic loader"));
            } else {
                return Ok(t);
            }
            t.release()?;
        }
    }
    why.dedup();
    Err(InjectError::NoThread { pid, why: why.join("; ") })
}
