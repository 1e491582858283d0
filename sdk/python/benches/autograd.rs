//! The Python cost of a launch made by an autograd engine thread (`pt_autograd_0`): finding
//! the one thread blocked in a backward call and reading its Python stack (16 frames, innermost
//! `_engine_run_backward`), with 0, 8 and 64 other Python threads present (blocked in
//! `threading.Event.wait`, as data-loader and pin-memory threads mostly are), and with 8
//! blocked and one running Python (the GIL's last holder, classified anew at each launch). Two
//! ways side by side: scanning every thread state at each launch (what every launch paid
//! before the callers were kept), and the kept callers (one thread's innermost frame re-read in
//! one `process_vm_readv` while no other thread took the GIL). The reference is the capture of
//! a launching thread's own 16 frames. The interpreter is the machine's real CPython 3.11
//! (`XPUPROF_BENCH_LIBPYTHON` names another), loaded into this process.
//!
//! `cargo bench -p xpuprof-python --bench autograd`

use std::ffi::c_int;
use std::sync::atomic::Ordering;
use std::sync::OnceLock;

use criterion::Criterion;
use xpuprof_python::autograd::Caller;
use xpuprof_python::own::{Interpreter, MAX_FRAMES};

/// Frames of the waiting thread: 14 recursive calls, `_engine_run_backward`, `<module>`.
const PY_FRAMES: usize = 16;

static INTERPRETER: OnceLock<Interpreter> = OnceLock::new();

fn py() -> &'static Interpreter {
    INTERPRETER.get_or_init(|| Interpreter::find().expect("read CPython").expect("CPython is loaded"))
}

/// Called from `_engine_run_backward` (GIL released) with `threads` other Python threads
/// blocked (negative: that many blocked and one running Python): times the launches of an
/// engine thread meanwhile.
extern "C" fn measure(threads: c_int) {
    let others = match threads {
        0.. => format!("{threads} other threads"),
        _ => format!("{} other threads blocked and one running Python", -threads),
    };
    if threads == 0 {
        let mut c = Criterion::default().configure_from_args();
        let mut frames = [(0u64, false); MAX_FRAMES];
        c.bench_function("autograd reference: a launching thread's own capture (16 frames)", |b| {
            b.iter(|| py().capture(&mut frames))
        });
    }
    std::thread::Builder::new()
        .name("pt_autograd_0".into())
        .spawn(move || {
            let mut c = Criterion::default().configure_from_args();
            let mut frames = [(0u64, false); MAX_FRAMES];
            assert_eq!(py().capture_backward_caller(&mut frames), Caller::Found(PY_FRAMES));
            c.bench_function(&format!("autograd caller, {others}: scan per launch"), |b| {
                b.iter(|| py().capture_backward_caller_scanning(&mut frames))
            });
            let direct = py().counts.autograd_direct.load(Ordering::Relaxed);
            c.bench_function(&format!("autograd caller, {others}: kept"), |b| {
                b.iter(|| py().capture_backward_caller(&mut frames))
            });
            assert_eq!(py().capture_backward_caller(&mut frames), Caller::Found(PY_FRAMES));
            let direct = py().counts.autograd_direct.load(Ordering::Relaxed) - direct;
            eprintln!("{others}: {direct} of the kept launches' checks read without a system call");
            c.final_summary();
        })
        .expect("spawn the engine thread")
        .join()
        .expect("the measurements ran");
}

extern "C" fn nothing() {}

fn main() {
    let run = xpuprof_testkit::python::start(nothing);
    let script = format!(
        r#"import ctypes, threading
bench = ctypes.CFUNCTYPE(None, ctypes.c_int)({})
def _engine_run_backward(n):
    bench(n)
def deep(k, n):
    if k == 0:
        _engine_run_backward(n)
    else:
        deep(k - 1, n)
stop = threading.Event()
spinning = True
def spin():
    while spinning:
        pass
others = []
for n in (0, 8, 64):
    while len(others) < n:
        t = threading.Thread(target=stop.wait, daemon=True)
        t.start()
        others.append(t)
    deep(13, n)
    if n == 8:
        # One thread running Python meanwhile: the last GIL holder, looked at again each launch.
        s = threading.Thread(target=spin)
        s.start()
        deep(13, -n)
        spinning = False
        s.join()
stop.set()
"#,
        measure as *const () as usize
    );
    xpuprof_testkit::python::run_or_panic(run, &script);
}
