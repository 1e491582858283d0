//! The agent's Python cost per launch: reading the launching thread's frame chain (15 Python
//! frames, the depth of a PyTorch model's forward call from a script), resolving each frame
//! through the per-thread cache, and merging them into a 40-frame native stack at the frame that
//! holds their eval call's marker on the C stack. The interpreter
//! is the machine's real CPython 3.11 (`libpython3.11.so.1.0`, loaded into this process): the
//! script recurses 15 deep and calls back into this benchmark through ctypes, so the timed
//! captures read live interpreter frames exactly as the agent does at API entry.
//!
//! Also the placing of a 3.12 PyTorch stack's runs (12 eval-loop calls, 80 native frames) by
//! a search per run and in one pass ([`merge::frames_holding`]).
//!
//! `cargo bench -p xpuprof-python --bench capture`

use std::sync::OnceLock;

use criterion::Criterion;
use xpuprof_python::merge;
use xpuprof_python::own::{Interpreter, MAX_FRAMES};

const PY_FRAMES: usize = 15;
const NATIVE_FRAMES: usize = 40;

static INTERPRETER: OnceLock<Interpreter> = OnceLock::new();

/// Called from Python at depth 15: runs the measurements on live frames.
extern "C" fn measure() {
    let py =
        INTERPRETER.get_or_init(|| Interpreter::find().expect("read CPython").expect("CPython is loaded"));
    let mut frames = [(0u64, false); MAX_FRAMES];
    assert_eq!(py.capture(&mut frames), PY_FRAMES + 1, "15 recursive frames + <module>");
    let marker =
        py.with_capture_raw(|_, raw| raw.iter().filter(|f| f.entry).map(|f| f.marker).collect::<Vec<_>>());
    assert_eq!(marker.len(), 1, "one eval-loop call runs them");
    // A native stack whose eval-loop frames sit where an interpreter's would: every third frame;
    // 64 stack bytes per frame, the eval call's marker inside the frame at index 2 (where the
    // agent's walk would find it).
    let eval = py_eval_return_address(py);
    let native: Vec<u64> = (0..NATIVE_FRAMES as u64)
        .map(|i| if i % 3 == 2 { eval } else { 0x5555_0000_1000 + 64 * i })
        .collect();
    let sp: Vec<u64> = (0..NATIVE_FRAMES as u64).map(|i| marker[0] - 2 * 64 - 32 + 64 * i).collect();
    let mut out = [0u64; 256];
    let mut c = Criterion::default().configure_from_args();
    c.bench_function("python capture (15 frames, cached)", |b| b.iter(|| py.capture(&mut frames)));
    // What the agent does per launch (sdk/agent-kit's PythonFrames::merge): the frames, their
    // eval call's marker, its native frame by stack address, the merge.
    c.bench_function("python capture + merge into 40 native frames", |b| {
        b.iter(|| {
            py.with_capture_raw(|frames, raw| {
                let mut places = [None; 64];
                for (p, f) in places.iter_mut().zip(raw.iter().filter(|f| f.entry)) {
                    *p = merge::frame_holding(&sp, f.marker);
                }
                let runs = merge::runs(frames);
                let m =
                    merge::merge_placed(&native, |ra| py.is_eval(ra), frames, &mut places[..runs], &mut out);
                debug_assert_eq!(m.by_symbol, 0);
                m.len
            })
        })
    });
    // Placing the runs of a 3.12 PyTorch stack: about one eval-loop call per nn.Module level
    // (12 markers) in an 80-frame native stack, by a search per marker and in one pass.
    let sps: Vec<u64> = (0..80u64).map(|i| 0x7ff0_0000 + 96 * i).collect();
    let markers: Vec<u64> = (0..12u64).map(|k| 0x7ff0_0000 + 96 * (8 + 6 * k) + 40).collect();
    let mut places = [None; 32];
    c.bench_function("place 12 eval calls in 80 native frames: a search each", |b| {
        b.iter(|| {
            for (p, &m) in places.iter_mut().zip(std::hint::black_box(&markers)) {
                *p = merge::frame_holding(&sps, m);
            }
            places[11]
        })
    });
    c.bench_function("place 12 eval calls in 80 native frames: one pass", |b| {
        b.iter(|| {
            merge::frames_holding(&sps, std::hint::black_box(&markers).iter().copied(), &mut places);
            places[11]
        })
    });
    c.final_summary();
}

/// A return address inside the interpreter's eval loop.
fn py_eval_return_address(py: &Interpreter) -> u64 {
    py.eval_range().0 + 16
}

fn main() {
    let run = xpuprof_testkit::python::start(measure);
    xpuprof_testkit::python::run_or_panic(run, &format!("down({})", PY_FRAMES - 1));
}
