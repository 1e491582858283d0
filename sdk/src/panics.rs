//! Panics in plugin code: caught at every entry point, and reported by plugin name when they
//! happen in a thread the plugin started.
//!
//! Each plugin library has its own copy of std and so its own panic hook. The SDK replaces it:
//! inside an entry point the hook only notes where the panic happened (the entry point's
//! `catch_unwind` turns it into an error naming the plugin); anywhere else (a thread the plugin
//! spawned, whose panic nobody catches) it logs an error through the host, naming the plugin and
//! the thread, so the panic is never silent.
//!
//! Catching needs unwinding: a plugin built with `panic = "abort"` would take the host down on
//! its first panic. The host refuses such libraries where it can tell (see the crate docs).

use std::any::Any;
use std::cell::{Cell, RefCell};
use std::panic::{self, AssertUnwindSafe};
use std::sync::{Mutex, Once};

use abi_stable::std_types::RStr;

use crate::abi::FfiHost;

thread_local! {
    static PANIC_LOCATION: RefCell<Option<String>> = const { RefCell::new(None) };
    /// How many entry points this thread is inside (entry points may nest).
    static IN_ENTRY_POINT: Cell<u32> = const { Cell::new(0) };
}

/// The live instances' hosts, to report thread panics through. Keyed by instance address; an
/// instance is removed when it is destroyed, after which the host's context may be gone.
static HOSTS: Mutex<Vec<(usize, &'static str, FfiHost)>> = Mutex::new(Vec::new());

/// The plugin's name, for panics reported after every instance was destroyed.
static NAME: Mutex<Option<&'static str>> = Mutex::new(None);

/// Installs the SDK's panic hook in this library (once).
fn install_hook() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        panic::set_hook(Box::new(|info| {
            let loc = info.location().map(|l| format!("{}:{}", l.file(), l.line()));
            if IN_ENTRY_POINT.with(Cell::get) > 0 {
                PANIC_LOCATION.with(|p| *p.borrow_mut() = loc);
                return;
            }
            let thread = std::thread::current();
            let msg = payload_text(info.payload());
            let at = loc.map(|l| format!(" (at {l})")).unwrap_or_default();
            report(&format!(
                "panicked in a thread it started (`{}`): {msg}{at}; the work of that thread is lost",
                thread.name().unwrap_or("unnamed")
            ));
        }));
    });
}

fn payload_text(payload: &(dyn Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic payload".to_owned())
}

/// Logs `text` as an error through a live instance's host (which prefixes the plugin name), or
/// on stderr when none is left.
fn report(text: &str) {
    let hosts = HOSTS.lock().unwrap_or_else(|e| e.into_inner());
    match hosts.first() {
        Some((_, _, host)) => (host.log)(host.ctx, 1, RStr::from_str(text)),
        None => {
            let name = NAME.lock().unwrap_or_else(|e| e.into_inner()).unwrap_or("unknown");
            eprintln!("xpuprof plugin `{name}` {text}");
        }
    }
}

/// Runs an entry point's body, returning the panic's message (with its location) if it
/// panicked.
pub(crate) fn catch<R>(f: impl FnOnce() -> R) -> Result<R, String> {
    install_hook();
    IN_ENTRY_POINT.with(|c| c.set(c.get() + 1));
    let r = panic::catch_unwind(AssertUnwindSafe(f));
    IN_ENTRY_POINT.with(|c| c.set(c.get() - 1));
    r.map_err(|payload| {
        let msg = payload_text(&*payload);
        match PANIC_LOCATION.with(|p| p.borrow_mut().take()) {
            Some(loc) => format!("{msg} (at {loc})"),
            None => msg,
        }
    })
}

/// Remembers `host` of the instance at `key` for reporting thread panics.
pub(crate) fn register(key: usize, name: &'static str, host: FfiHost) {
    *NAME.lock().unwrap_or_else(|e| e.into_inner()) = Some(name);
    HOSTS.lock().unwrap_or_else(|e| e.into_inner()).push((key, name, host));
}

/// Forgets the instance at `key` (it is being destroyed).
pub(crate) fn unregister(key: usize) {
    HOSTS.lock().unwrap_or_else(|e| e.into_inner()).retain(|(k, _, _)| *k != key);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_in_an_entry_point_is_caught_with_its_location() {
        let e = catch(|| panic!("boom {}", 7)).unwrap_err();
        assert!(e.starts_with("boom 7 (at sdk/src/panics.rs:"), "{e}");
        assert_eq!(catch(|| 5).unwrap(), 5);
    }
}
