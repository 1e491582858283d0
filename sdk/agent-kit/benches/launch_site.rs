//! An agent's own work per launch, on the application thread: the launch-site path that runs
//! inside the vendor's API enter and exit callbacks (CUPTI's, for the CUPTI agent): clock reads,
//! stack walk, hash, dedup, entry write, publish under the thread buffer's lock, without the
//! vendor library. The drains (every 1024 launches, as the agent's other threads do) are not
//! timed.
//!
//! The stacks are real: C code (`sdk/unwind/tests/fixtures/deep.c`, built here with `cc -O2`)
//! recursing to a known depth before it calls the bench's "callback", once built with frame
//! pointers (a C program like B1: each return address's CFI rule is the frame-pointer rule, so
//! the walk's fast path steps it) and once with `-fomit-frame-pointer` (every frame through the
//! CFI, like libtorch). The launch-site group runs the frame-pointer stack twice: with the fast
//! path and with framehop alone (`xpuprof_unwind::set_fast_path(false)`, the walk before it).
//! Side by side, on the same stacks: the unwinders the agent could use, alone (the `walk`
//! group): this crate's walk (fast path on and off), the frame-pointer chain walk (`stack::fp`,
//! which the agents used before the CFI walk, started at the innermost C frame because the
//! bench's Rust frames keep no frame pointer; it cannot follow the frameless stack) and libgcc's
//! `_Unwind_Backtrace` (the Level Zero agent's earlier walk). The frames each one finds are
//! printed first, so per-frame costs can be compared.
//!
//! The budget case of issue #13 (`budget/launch_40_cfi_frames_15_python_frames`): a launch
//! whose stack is 40 native frames, every one stepped through the CFI (the frameless C fixture
//! to the depth that makes 40 with the frames under it: the interpreter's, ctypes', the
//! bench's), under 15 live Python frames of a real CPython (`libpython3.11.so.1.0`, or
//! `XPUPROF_BENCH_LIBPYTHON`: the GPU machine runs 3.12) that reach the C code through ctypes,
//! captured and merged as the agents do at a launch (`Registry::python` on). The stack's
//! composition is printed first.
//!
//! Times are the bench thread's CPU time (`CLOCK_THREAD_CPUTIME_ID`), not wall time: on the
//! shared development VM the thread is often descheduled, which wall time would count.
//!
//! `cargo bench -p xpuprof-agent-kit --bench launch_site` (a binary carried elsewhere finds the
//! fixture's source through `XPUPROF_BENCH_DEEP_C`; `scripts/gpu/run-all.sh stacks` sets it).

use std::cell::{Cell, RefCell};
use std::ffi::c_void;
use std::os::raw::c_int;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::time::Duration;

use criterion::Criterion;
use xpuprof_agent_kit::launches::{Registry, Sites};
use xpuprof_agent_kit::modules::Known;
use xpuprof_agent_kit::stack::{self, fp, Registers};
use xpuprof_agent_kit::timestamps::Clock;
use xpuprof_testkit::python;

/// CUPTI's driver-API callback domain, as the CUPTI agent records it.
const DOMAIN_DRIVER: u8 = 1;

type Recurse = unsafe extern "C" fn(extern "C" fn(u64) -> u64, u64) -> u64;

thread_local! {
    /// The work to time at the bottom of the C recursion, and its result.
    static WORK: RefCell<Option<Box<dyn FnMut() -> Duration>>> = RefCell::new(None);
    static TOOK: RefCell<Duration> = const { RefCell::new(Duration::ZERO) };
}

extern "C" fn bottom(x: u64) -> u64 {
    let d = WORK.with(|w| w.borrow_mut().as_mut().map(|f| f()).unwrap_or_default());
    TOOK.with(|t| *t.borrow_mut() = d);
    x
}

/// Runs `work` at the bottom of `depth` C frames (plus this bench's own frames below them).
fn at_depth(recurse: Recurse, depth: u64, work: impl FnMut() -> Duration + 'static) -> Duration {
    WORK.with(|w| *w.borrow_mut() = Some(Box::new(work)));
    // SAFETY: `bottom` has the callback signature the fixture expects.
    unsafe { recurse(bottom, depth) };
    WORK.with(|w| *w.borrow_mut() = None);
    TOOK.with(|t| *t.borrow())
}

fn build(dir: &Path, name: &str, flag: &str) -> PathBuf {
    let src = std::env::var_os("XPUPROF_BENCH_DEEP_C")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../unwind/tests/fixtures/deep.c"));
    let out = dir.join(name);
    let ok = std::process::Command::new("cc")
        .args(["-O2", flag, "-shared", "-fPIC", "-o"])
        .arg(&out)
        .arg(&src)
        .status()
        .is_ok_and(|s| s.success());
    assert!(ok, "failed to build {} with cc", src.display());
    out
}

fn load(path: &Path) -> Recurse {
    // SAFETY: the fixture has no initialisers; the library stays loaded (leaked) for the bench.
    let lib = Box::leak(Box::new(unsafe { libloading::Library::new(path) }.expect("load fixture")));
    // SAFETY: `deep_recurse` has the declared signature.
    *unsafe { lib.get::<Recurse>(b"deep_recurse") }.expect("deep_recurse")
}

/// The calling thread's CPU time (`CLOCK_THREAD_CPUTIME_ID`): every timing here is the thread's
/// own, so time it spends descheduled on a loaded machine is not counted.
#[derive(Clone, Copy)]
struct ThreadTime(Duration);

impl ThreadTime {
    fn now() -> ThreadTime {
        let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
        // SAFETY: `ts` is a valid out-pointer; the clock id is a constant the kernel knows.
        unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
        ThreadTime(Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32))
    }

    fn elapsed(self) -> Duration {
        ThreadTime::now().0.saturating_sub(self.0)
    }
}

/// `n` launches (enter + exit) with the walk starting in this frame; the drains are not timed.
#[inline(never)]
fn launches(reg: &Registry, sites: &Sites<'_>, clock: &Clock, n: u64, first_id: u32) -> Duration {
    let mut out = Vec::with_capacity(1 << 20);
    let mut total = Duration::ZERO;
    let mut done = 0;
    while done < n {
        let chunk = (n - done).min(1024);
        let t = ThreadTime::now();
        for i in done..done + chunk {
            let regs = stack::registers();
            reg.enter(sites, DOMAIN_DRIVER, 307, first_id.wrapping_add(i as u32), regs);
            reg.exit(0);
        }
        total += t.elapsed();
        done += chunk;
        reg.drain(&mut out, clock);
        out.clear();
    }
    total
}

extern "C" fn unwind_step(ctx: *mut c_void, arg: *mut c_void) -> c_int {
    extern "C" {
        fn _Unwind_GetIP(ctx: *mut c_void) -> usize;
    }
    // SAFETY: `arg` is the counter passed below; `ctx` is the unwinder's context.
    unsafe {
        *(arg as *mut usize) += 1;
        std::hint::black_box(_Unwind_GetIP(ctx));
    }
    0
}

/// libgcc's unwinder over the whole stack; returns the frames seen.
#[inline(never)]
fn unwind_backtrace() -> usize {
    extern "C" {
        fn _Unwind_Backtrace(f: extern "C" fn(*mut c_void, *mut c_void) -> c_int, arg: *mut c_void) -> c_int;
    }
    let mut n = 0usize;
    // SAFETY: `unwind_step` only increments `n`, which outlives the call.
    unsafe { _Unwind_Backtrace(unwind_step, &mut n as *mut usize as *mut c_void) };
    n
}

/// The registers of the innermost frame outside `own` (the bench's code): the C fixture's.
#[inline(never)]
fn c_frame(bounds: stack::Bounds, own: &[(u64, u64)]) -> Registers {
    let mut one = [0u64; 1];
    stack::walk(stack::registers(), bounds, own, &mut one).1.expect("a C frame")
}

fn bench(c: &mut Criterion, with_fp: Recurse, without_fp: Recurse) {
    let known: &'static Known = Box::leak(Box::default());
    let reg: &'static Registry = Box::leak(Box::default());
    let clock: &'static Clock = Box::leak(Box::new(Clock::new(true)));
    let mut g = c.benchmark_group("launch_site");
    let mut id = 1u32;
    for (name, lib, depth, stacks, fast) in [
        ("enter_exit_api_only", with_fp, 16, false, true),
        ("enter_exit_with_stack_16_frames_fp", with_fp, 16, true, true),
        ("enter_exit_with_stack_40_frames_fp", with_fp, 40, true, true),
        ("enter_exit_with_stack_40_frames_fp_framehop_only", with_fp, 40, true, false),
        ("enter_exit_with_stack_40_frames_cfi", without_fp, 40, true, true),
    ] {
        g.bench_function(name, |b| {
            b.iter_custom(|n| {
                let first = id;
                id = id.wrapping_add(n as u32);
                xpuprof_unwind::set_fast_path(fast);
                let t = at_depth(lib, depth, move || {
                    let sites = Sites { record_entries: true, stacks, max_depth: 128, own_code: &[], known };
                    launches(reg, &sites, clock, n, first)
                });
                xpuprof_unwind::set_fast_path(true);
                t
            })
        });
    }
    g.finish();
    // The bench executable's code: the walk's first frames, left out to find the innermost C
    // frame's registers (where the frame-pointer chain starts).
    let here = bottom as extern "C" fn(u64) -> u64 as usize as u64;
    let own: &'static [(u64, u64)] = Box::leak(
        xpuprof_unwind::local::known_ranges().into_iter().filter(|&(s, e)| here >= s && here < e).collect(),
    );
    let mut g = c.benchmark_group("walk");
    for (name, lib) in [("fp_built_40", with_fp), ("cfi_only_40", without_fp)] {
        // The frames each unwinder sees on this stack (printed so the timings can be compared).
        at_depth(lib, 40, move || {
            let bounds = stack::thread_bounds();
            let mut out = [0u64; 128];
            let (w, _) = stack::walk(stack::registers(), bounds, &[], &mut out);
            let c = c_frame(bounds, own);
            let f = fp::walk(c.bp as usize, c.sp as usize, bounds.hi, &mut out);
            eprintln!(
                "{name}: xpuprof-unwind {} frames ({:?}), frame-pointer chain from the innermost C frame {f}, _Unwind_Backtrace {}",
                w.len,
                w.end,
                unwind_backtrace()
            );
            Duration::ZERO
        });
        for (variant, fast) in [("fast_path", true), ("framehop_only", false)] {
            g.bench_function(format!("{variant}_{name}"), |b| {
                b.iter_custom(|n| {
                    xpuprof_unwind::set_fast_path(fast);
                    let t = at_depth(lib, 40, move || {
                        let bounds = stack::thread_bounds();
                        let mut out = [0u64; 128];
                        let t = ThreadTime::now();
                        for _ in 0..n {
                            std::hint::black_box(stack::walk(stack::registers(), bounds, &[], &mut out));
                        }
                        t.elapsed()
                    });
                    xpuprof_unwind::set_fast_path(true);
                    t
                })
            });
        }
        g.bench_function(format!("frame_pointers_{name}"), |b| {
            b.iter_custom(|n| {
                at_depth(lib, 40, move || {
                    let bounds = stack::thread_bounds();
                    let c = c_frame(bounds, own);
                    let mut out = [0u64; 128];
                    let t = ThreadTime::now();
                    for _ in 0..n {
                        std::hint::black_box(fp::walk(c.bp as usize, c.sp as usize, bounds.hi, &mut out));
                    }
                    t.elapsed()
                })
            })
        });
        g.bench_function(format!("unwind_backtrace_{name}"), |b| {
            b.iter_custom(|n| {
                at_depth(lib, 40, move || {
                    let t = ThreadTime::now();
                    for _ in 0..n {
                        std::hint::black_box(unwind_backtrace());
                    }
                    t.elapsed()
                })
            })
        });
    }
    g.finish();
}

/// Native frames of the budget case's stack, and its Python frames.
const BUDGET_NATIVE: usize = 40;
const BUDGET_PYTHON: usize = 15;

thread_local! {
    /// The work to run under the Python frames (called back from the script).
    static UNDER_PYTHON: RefCell<Option<Box<dyn FnMut()>>> = RefCell::new(None);
}

extern "C" fn from_python() {
    let f = UNDER_PYTHON.with(|w| w.borrow_mut().take());
    if let Some(mut f) = f {
        f();
        UNDER_PYTHON.with(|w| *w.borrow_mut() = Some(f));
    }
}

/// Runs `f` under `BUDGET_PYTHON` Python frames (`<module>` and `down` 14 deep).
fn under_python(run: python::Run, f: impl FnMut() + 'static) {
    UNDER_PYTHON.with(|w| *w.borrow_mut() = Some(Box::new(f)));
    python::run_or_panic(run, &format!("down({})", BUDGET_PYTHON - 2));
    UNDER_PYTHON.with(|w| *w.borrow_mut() = None);
}

/// The native frames a launch would walk here (the walk starts in this frame, as in `launches`).
#[inline(never)]
fn native_frames() -> usize {
    let mut out = [0u64; 256];
    stack::walk(stack::registers(), stack::thread_bounds(), &[], &mut out).0.len
}

/// The budget case: a launch with 40 native frames through the CFI and 15 Python frames.
fn budget(c: &mut Criterion, without_fp: Recurse) {
    let run = python::start(from_python);
    let known: &'static Known = Box::leak(Box::default());
    let reg: &'static Registry = Box::leak(Box::default());
    reg.python.set_enabled(true);
    let clock: &'static Clock = Box::leak(Box::new(Clock::new(true)));
    // The C fixture's depth that makes the stack 40 native frames (each level is one frame).
    let base = Rc::new(Cell::new(0));
    let (b, py) = (base.clone(), Rc::new(Cell::new(0)));
    let p = py.clone();
    under_python(run, move || {
        b.set(at_depth(without_fp, 0, || Duration::from_nanos(native_frames() as u64)).as_nanos() as usize);
        let interp = reg.python.interpreter().expect("the agent finds the interpreter");
        p.set(interp.capture(&mut [(0, false); 256]));
    });
    let depth =
        BUDGET_NATIVE.checked_sub(base.get()).expect("the stack under the C fixture is under 40 frames");
    let walked = Rc::new(Cell::new(0));
    let w = walked.clone();
    under_python(run, move || {
        w.set(at_depth(without_fp, depth as u64, || Duration::from_nanos(native_frames() as u64)).as_nanos()
            as usize)
    });
    // How many steps of one more walk of this stack took a cached rule (the rest: framehop).
    let before = xpuprof_unwind::stats().snapshot();
    under_python(run, move || {
        at_depth(without_fp, depth as u64, || Duration::from_nanos(native_frames() as u64));
    });
    let fast = xpuprof_unwind::stats().snapshot().fast_steps - before.fast_steps;
    eprintln!(
        "budget stack: {} native frames ({depth} frameless C frames + {} of the interpreter, ctypes, the bench and the runtime; {fast} steps by a cached rule, the others by framehop), {} Python frames",
        walked.get(),
        base.get(),
        py.get()
    );
    assert_eq!((walked.get(), py.get()), (BUDGET_NATIVE, BUDGET_PYTHON), "the budget case's stack");
    let mut g = c.benchmark_group("budget");
    let mut id = 1u32;
    g.bench_function("launch_40_cfi_frames_15_python_frames", |b| {
        b.iter_custom(|n| {
            let first = id;
            id = id.wrapping_add(n as u32);
            let took = Rc::new(Cell::new(Duration::ZERO));
            let t = took.clone();
            under_python(run, move || {
                t.set(at_depth(without_fp, depth as u64, move || {
                    let sites =
                        Sites { record_entries: true, stacks: true, max_depth: 128, own_code: &[], known };
                    launches(reg, &sites, clock, n, first)
                }))
            });
            took.get()
        })
    });
    g.finish();
}

fn main() {
    let dir = std::env::temp_dir().join(format!("xpuprof-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let with_fp = load(&build(&dir, "libdeep-fp.so", "-fno-omit-frame-pointer"));
    let without_fp = load(&build(&dir, "libdeep-nofp.so", "-fomit-frame-pointer"));
    let mut c = Criterion::default().configure_from_args();
    bench(&mut c, with_fp, without_fp);
    budget(&mut c, without_fp);
    c.final_summary();
    // The fixtures stay mapped; their files and folder go.
    let _ = std::fs::remove_dir_all(&dir);
}
