//! The autograd attribution against a live CPython 3.11 embedded in this test: the script
//! `fixtures/backward.py` calls `_engine_run_backward` from several lines at the same depth and
//! from a second thread, and a native thread named `pt_autograd_0` makes "launches"
//! ([`Interpreter::capture_backward_caller`]) while the calling thread waits in it. What the
//! engine thread found is kept from launch to launch: each launch must still get the stack of
//! the backward call running then. Debian's 3.11 runs in this process; every other installed
//! CPython 3.9-3.13 library (pyenv's) in a child process running the same test.

use std::collections::HashMap;
use std::ffi::c_int;
use std::sync::atomic::Ordering;
use std::sync::mpsc::{channel, Sender};
use std::sync::{Condvar, Mutex, OnceLock};

use xpuprof_python::autograd::Caller;
use xpuprof_python::cpython_offsets::Version;
use xpuprof_python::own::{Interpreter, MAX_FRAMES};

use crate::interpreters::{self, fixture};

/// What one launch got.
#[derive(Debug, Clone, PartialEq)]
enum Seen {
    Stack(Vec<String>),
    Ambiguous,
    None,
}

/// A batch of launches: how many, and where the results go.
type Request = (usize, Sender<Vec<Seen>>);

static PY: OnceLock<Interpreter> = OnceLock::new();
static ENGINE: OnceLock<Mutex<Sender<Request>>> = OnceLock::new();
/// Results by tag, in order.
static SEEN: Mutex<Vec<(c_int, Vec<Seen>)>> = Mutex::new(Vec::new());
/// First lines the definitions came with: (frame name, `co_firstlineno`).
static FIRST_LINES: Mutex<Vec<(String, u32)>> = Mutex::new(Vec::new());
/// Scans of the thread list before each tag's launches.
static SCANS: Mutex<Vec<(c_int, u64)>> = Mutex::new(Vec::new());
/// The second caller's progress: 1 go, 2 inside its backward call, 3 released, 4 out of it.
static STAGE: (Mutex<u32>, Condvar) = (Mutex::new(0), Condvar::new());

fn py() -> &'static Interpreter {
    PY.get_or_init(|| Interpreter::find().expect("read CPython").expect("CPython is loaded"))
}

fn set_stage(n: u32) {
    *STAGE.0.lock().unwrap() = n;
    STAGE.1.notify_all();
}

fn wait_stage(n: u32) {
    let mut s = STAGE.0.lock().unwrap();
    while *s < n {
        s = STAGE.1.wait(s).unwrap();
    }
}

/// The engine thread: serves batches of launches, naming each frame id.
fn start_engine() -> Sender<Request> {
    let (tx, rx) = channel::<Request>();
    std::thread::Builder::new()
        .name("pt_autograd_0".into())
        .spawn(move || {
            let mut names: HashMap<u64, String> = HashMap::new();
            for (n, reply) in rx {
                let mut seen = Vec::new();
                for _ in 0..n {
                    let mut frames = [(0u64, false); MAX_FRAMES];
                    let caller = py().capture_backward_caller(&mut frames);
                    names.extend(py().take_definitions());
                    for (id, line) in py().take_first_lines() {
                        FIRST_LINES.lock().unwrap().push((names[&id].clone(), line));
                    }
                    seen.push(match caller {
                        Caller::Found(k) => {
                            Seen::Stack(frames[..k].iter().map(|f| names[&f.0].clone()).collect())
                        }
                        Caller::Ambiguous => Seen::Ambiguous,
                        Caller::None => Seen::None,
                    });
                }
                reply.send(seen).unwrap();
            }
        })
        .unwrap();
    tx
}

/// `n` launches on the engine thread, now.
fn launches(n: usize) -> Vec<Seen> {
    let (tx, rx) = channel();
    ENGINE.get_or_init(|| Mutex::new(start_engine())).lock().unwrap().send((n, tx)).unwrap();
    rx.recv().unwrap()
}

/// `engine(tag)`: called from `_engine_run_backward` with the GIL released.
extern "C" fn engine(tag: c_int) {
    SCANS.lock().unwrap().push((tag, py().counts.autograd_scans.load(Ordering::Relaxed)));
    let seen = match tag {
        // The second caller: stays in its backward call until the first lets it go.
        100 => {
            set_stage(2);
            wait_stage(3);
            return;
        }
        10 => {
            let mut seen = launches(2);
            set_stage(1);
            wait_stage(2);
            seen.extend(launches(2));
            set_stage(3);
            wait_stage(4);
            seen.extend(launches(2));
            seen
        }
        _ => launches(3),
    };
    SEEN.lock().unwrap().push((tag, seen));
}

extern "C" fn wait_go() {
    wait_stage(1);
}

extern "C" fn out() {
    set_stage(4);
}

extern "C" fn nothing() {}

/// The line of the frame of `function` in `stack`.
fn line_of(stack: &[String], function: &str) -> u32 {
    let f = stack.iter().find(|f| f.starts_with(&format!("{function} ("))).expect("the frame is there");
    f.rsplit(':').next().unwrap().trim_end_matches(')').parse().unwrap()
}

#[test]
fn engine_launches_get_the_stack_of_the_backward_call_running_then_in_every_interpreter() {
    let mut checked = Vec::new();
    for python in interpreters::all().into_iter().skip(1) {
        let Some(prefix) = python.parent().and_then(|bin| bin.parent()) else { continue };
        let minor = python.file_name().unwrap().to_string_lossy().trim_start_matches("python").to_owned();
        let lib = prefix.join(format!("lib/libpython{minor}.so.1.0"));
        if !lib.exists() {
            continue;
        }
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args(["autograd::engine_launches_get_the_stack_of_the_backward_call_running_then", "--exact"])
            .env("PYTHONHOME", prefix)
            .env("XPUPROF_BENCH_LIBPYTHON", &lib)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success() && text.contains("1 passed"), "{}: {text}", lib.display());
        checked.push(minor);
    }
    eprintln!("autograd attribution checked in this process (3.11) and with the libraries of: {checked:?}");
}

/// The test proper, in this process: Debian's 3.11, or the library `XPUPROF_BENCH_LIBPYTHON`
/// names (with its `PYTHONHOME`).
#[test]
fn engine_launches_get_the_stack_of_the_backward_call_running_then() {
    let run = xpuprof_testkit::python::start(nothing);
    let script = fixture("backward.py");
    let setup = format!(
        "import ctypes\nengine = ctypes.CFUNCTYPE(None, ctypes.c_int)({})\nwait_go = ctypes.CFUNCTYPE(None)({})\nout = ctypes.CFUNCTYPE(None)({})\n_p = {:?}\nexec(compile(open(_p).read(), _p, 'exec'))\n",
        engine as *const () as usize,
        wait_go as *const () as usize,
        out as *const () as usize,
        script.display().to_string()
    );
    xpuprof_testkit::python::run_or_panic(run, &setup);
    let seen = SEEN.lock().unwrap().clone();
    let tags: Vec<c_int> = seen.iter().map(|s| s.0).collect();
    assert_eq!(tags, [1, 2, 3, 4, 5, 10, 11]);
    // Each launch under its own call's line: 23 and 24 call from the same depth (the same frame
    // addresses, the same innermost instruction), 26 twice from the same line.
    for (tag, line) in [(1, 23), (2, 24), (3, 26), (4, 26), (11, 32)] {
        let launches = &seen.iter().find(|s| s.0 == tag).unwrap().1;
        for s in launches {
            let Seen::Stack(stack) = s else { panic!("tag {tag}: {s:?}") };
            assert_eq!(line_of(stack, "_engine_run_backward"), 9, "{stack:?}");
            assert_eq!(line_of(stack, "step"), 13, "{stack:?}");
            assert_eq!(line_of(stack, "train"), line, "tag {tag}: {stack:?}");
        }
    }
    // Each defined frame came with its function's first line (the `def` line).
    let first = FIRST_LINES.lock().unwrap().clone();
    let of = |f: &str| first.iter().find(|(n, _)| n.starts_with(&format!("{f} ("))).map(|x| x.1);
    assert_eq!(
        [of("_engine_run_backward"), of("step"), of("train")],
        [Some(8), Some(12), Some(22)],
        "{first:?}"
    );
    // Between the calls, with no thread in one: the caller's innermost frame reads otherwise.
    assert_eq!(seen.iter().find(|s| s.0 == 5).unwrap().1, [Seen::None, Seen::None, Seen::None]);
    // While a second thread is in a backward call too, nothing is attributed; once it left,
    // the first caller's stack again.
    let ten = &seen.iter().find(|s| s.0 == 10).unwrap().1;
    let line = |s: &Seen| match s {
        Seen::Stack(stack) => Some(line_of(stack, "train")),
        _ => None,
    };
    assert_eq!(
        ten.iter().map(line).collect::<Vec<_>>(),
        [Some(30), Some(30), None, None, Some(30), Some(30)]
    );
    assert_eq!(ten[2..4], [Seen::Ambiguous, Seen::Ambiguous], "{ten:?}");
    // The calls from lines 24 and 26 and the launches between calls were told apart without
    // scanning the threads again: no thread but the caller took the GIL since the first scan
    // (made at tag 1's first launch).
    let scans = SCANS.lock().unwrap().clone();
    let at = |tag| scans.iter().find(|s| s.0 == tag).unwrap().1;
    assert_eq!(at(2), at(1) + 1, "{scans:?}");
    assert_eq!(at(10), at(2), "{scans:?}");
    let c = &py().counts;
    assert_eq!(c.autograd_attributed.load(Ordering::Relaxed), 3 * 5 + 4);
    assert_eq!(c.autograd_ambiguous.load(Ordering::Relaxed), 2);
    assert_eq!(c.autograd_unattributed.load(Ordering::Relaxed), 3);
    // From 3.13 the thread state points at the innermost frame itself: the caller's thread
    // state (the main interpreter's first one, in `_PyRuntime`) and its frames (in the root
    // chunk of its frame stack) are read again without a system call. 3.11 and 3.12 go through
    // a `_PyCFrame` on the C stack of this test's thread, not the main stack: through the kernel.
    let direct = c.autograd_direct.load(Ordering::Relaxed);
    if py().version() >= Version::new(3, 13) {
        assert!(direct > 0, "{direct}");
    }
}
