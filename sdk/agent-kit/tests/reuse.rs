//! Launch stacks that reuse the thread's previous one are the stacks a full capture finds: a
//! real CPython (`libpython3.11.so.1.0` embedded here, or `XPUPROF_BENCH_LIBPYTHON`) runs a
//! training-shaped script 30-40 frames deep whose launches come back into the launch-site
//! registry as a CUDA callback's would, in `check` mode (every launch captured both ways,
//! differences counted). The script makes the launches that rule out reusing on the innermost
//! frames alone (one function called from two lines of its caller at the same depth, natively
//! and in Python), launches from a generator, at changing depths, and launches of an autograd
//! engine thread (`pt_autograd_0`) whose Python frames are those of the thread blocked in
//! `_engine_run_backward`, called from two lines at the same depth.

use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Mutex, OnceLock};

use xpuprof_agent_kit::launches::{Registry, Sites};
use xpuprof_agent_kit::modules::Known;
use xpuprof_agent_kit::reuse::{self, ReuseMode};
use xpuprof_agent_kit::stack;
use xpuprof_testkit::python;

static REGISTRY: OnceLock<Registry> = OnceLock::new();
static KNOWN: OnceLock<Known> = OnceLock::new();
/// The engine thread's work queue and its answers.
static ENGINE: OnceLock<Mutex<(Sender<usize>, Receiver<()>)>> = OnceLock::new();

fn registry() -> &'static Registry {
    REGISTRY.get_or_init(|| {
        let r = Registry::default();
        r.python.set_enabled(true);
        r
    })
}

/// One launch from here, as an API-entry callback records it.
#[inline(never)]
fn launch(correlation: u32) {
    let known = KNOWN.get_or_init(Known::default);
    let sites = Sites { record_entries: true, stacks: true, max_depth: 255, own_code: &[], known };
    let r = registry();
    r.enter(&sites, 1, 5, correlation, stack::registers());
    r.exit(0);
}

/// The same native function reached from two call sites at the same depth, then deeper.
#[inline(never)]
fn native_twice(depth: u32, correlation: u32) -> u32 {
    if depth == 0 {
        launch(correlation);
        std::hint::black_box(0);
        launch(correlation + 1);
        return 1;
    }
    std::hint::black_box(native_twice(std::hint::black_box(depth - 1), correlation)) + 1
}

extern "C" fn from_python() {
    launch(1);
    native_twice(2, 2);
}

/// `_engine_run_backward`'s wait: the engine thread makes `n` launches meanwhile.
extern "C" fn backward(n: i32) {
    let e = ENGINE.get().expect("engine started").lock().unwrap();
    e.0.send(n as usize).unwrap();
    e.1.recv().unwrap();
}

fn start_engine() {
    let (work, todo) = channel::<usize>();
    let (done, answers) = channel::<()>();
    std::thread::Builder::new()
        .name("pt_autograd_0".into())
        .spawn(move || {
            for n in todo {
                for i in 0..n {
                    native_twice(i as u32 % 3, 100);
                }
                done.send(()).unwrap();
            }
        })
        .unwrap();
    ENGINE.set(Mutex::new((work, answers))).expect("started once");
}

const SCRIPT: &str = r#"
import ctypes
backward = ctypes.CFUNCTYPE(None, ctypes.c_int)(BACKWARD)
def leaf():
    measure()
def conv():
    leaf()
def block():
    conv()
    conv()
def layer(k):
    if k == 0:
        leaf()
        leaf()
    else:
        layer(k - 1)
def batches():
    for i in range(3):
        leaf()
        yield i
def _engine_run_backward(n):
    backward(n)
def step(i):
    block()
    layer(i % 5)
    for _ in batches():
        pass
    _engine_run_backward(4)
    _engine_run_backward(3)
def deep(n, i):
    if n == 0:
        step(i)
    else:
        deep(n - 1, i)
for i in range(40):
    deep(28 + i % 3, i)
"#;

#[test]
fn reused_launch_stacks_equal_full_captures_under_a_real_python() {
    start_engine();
    reuse::set_mode(ReuseMode::Check);
    let run = python::start(from_python);
    let script = SCRIPT.replace("BACKWARD", &(backward as extern "C" fn(i32) as usize).to_string());
    python::run_or_panic(run, &script);
    let c = reuse::counts();
    let py = registry().python.interpreter().expect("the embedded CPython is found");
    let attributed = py.counts.autograd_attributed.load(std::sync::atomic::Ordering::Relaxed);
    assert_eq!(c.differed, 0, "launches whose reused stack differed from the full capture: {c:?}");
    // 40 steps of 2 + 2 + 3 Python launches (3 native each... see the script) and 7 engine
    // launches, each of which made its launches two at a time.
    assert!(c.checked >= 40 * 20, "every launch is checked: {c:?}");
    assert!(c.native > c.checked / 2, "most walks reuse the previous one's outer frames: {c:?}");
    assert!(c.python > c.checked / 4, "Python chains reuse the previous capture: {c:?}");
    assert!(attributed >= 40 * 7 * 2, "the engine thread's launches got the caller's frames: {attributed}");
}
