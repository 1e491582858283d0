"""Benchmark B2: PyTorch transformer-encoder inference with random weights (no downloads).

usage: transformer_bench.py MODE SIZE [STEPS]
  MODE: plain | profiler | profiler_stack   (torch.profiler with CPU+CUDA activities)
        | ab   (xpuprof's cupti agent paused and resumed in alternate windows, see `ab`)
        | residual   (CUPTI attached with nothing enabled vs detached, see `residual`)
  SIZE: small (batch 8 x seq 128, launch-bound) | large (batch 64 x seq 512, compute-bound)

6 layers, d_model 512, 8 heads, feed-forward 2048, fp16, eval mode under inference_mode. Warms
up first (inside the profiler for the profiler modes, so its start-up is excluded), then times
STEPS forward passes from the first launch to a final synchronize; the profiler is stopped
after the timing and nothing is exported. Prints `BENCH2 mode=... size=... ms_per_step=...
ms_per_step_median=... loops_per_step_median=... cpu_ms_per_step=... steal_ms=...`: the whole
run's mean, the median of ten equal windows (each ended by a synchronize), which a single hiccup of
the machine does not move, the median of the windows' step time in units of a calibration loop
timed around each window (see `calibration_ms`), which the host's clock phases do not move, the
launching thread's own CPU time per step, and the machine's steal time (all CPUs) during the
timing, which says whether the hypervisor took the CPUs away.

BENCH_CPU=N pins the launching (main) thread, and only it, to CPU N after the warm-up, as the B1
program does: the threads PyTorch, CUDA and a profiler started earlier keep their CPUs, so a
profiler's own threads never share the launching thread's CPU.
"""
import os
import contextlib
import sys
import time

import torch
from torch import nn


def build():
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(d_model=512, nhead=8, dim_feedforward=2048, batch_first=True)
    return nn.TransformerEncoder(layer, num_layers=6, enable_nested_tensor=False).cuda().half().eval()


def run(model, x, steps):
    for _ in range(steps):
        model(x)


def steal_ms():
    """The machine's steal time so far (all CPUs, /proc/stat), in ms: time a virtual machine's
    CPUs were ready but the hypervisor ran something else. None where it is not reported."""
    try:
        with open("/proc/stat") as f:
            fields = f.readline().split()
        return int(fields[8]) * 1000 / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return None


def calibration_ms(n=200_000):
    """Milliseconds for a fixed pure-Python loop on the calling thread: a gauge of how fast the
    CPU runs right now. On the GPU machine (a virtual machine) the same process's steps took
    1.2 ms in one phase and 2.1 ms in another, with no steal time reported: the host's clock
    changes under it. The loop slows in the same proportion, so step time over loop time is a
    cost in "loops" that such phases do not move."""
    t = time.perf_counter()
    for _ in range(n):
        pass
    return (time.perf_counter() - t) * 1e3


def timed(model, x, steps, windows=10):
    """Times `steps` steps in `windows` equal windows (each ended by a synchronize) with a
    calibration loop before the first and after each. Returns the mean ms per step (windows
    only), the median of the windows' ms per step, the median of the windows' ms per step over
    the mean of the loops around them, the launching thread's CPU ms per step, and the machine's
    steal ms during the timing."""
    per = max(1, steps // windows)
    times, rel = [], []
    steal0 = steal_ms()
    spent = cpu = 0.0
    done = 0
    before = calibration_ms()
    while done < steps:
        n = min(per, steps - done)
        t, c = time.perf_counter(), time.thread_time()
        run(model, x, n)
        torch.cuda.synchronize()
        took = time.perf_counter() - t
        cpu += time.thread_time() - c
        after = calibration_ms()
        spent += took
        times.append(took * 1e3 / n)
        rel.append(times[-1] / ((before + after) / 2))
        before = after
        done += n
    total = spent * 1e3 / steps
    cpu = cpu * 1e3 / steps
    steal1 = steal_ms()
    steal = None if steal0 is None or steal1 is None else steal1 - steal0
    times.sort()
    rel.sort()
    return total, times[len(times) // 2], rel[len(rel) // 2], cpu, steal


def agent_capture():
    """The cupti agent's pause/resume switch (`xpuprof_cupti_capture`, found through the path the
    host put in CUDA_INJECTION64_PATH), or None when the process runs without the agent."""
    import ctypes
    path = os.environ.get("CUDA_INJECTION64_PATH")
    if not path:
        return None
    try:
        f = ctypes.CDLL(path).xpuprof_cupti_capture
    except (OSError, AttributeError):
        return None
    f.argtypes, f.restype = [ctypes.c_int], ctypes.c_int
    return f


def ms_per_step(model, x, n):
    """Milliseconds per step of `n` steps, from a synchronized start to a final synchronize."""
    torch.cuda.synchronize()
    t = time.perf_counter()
    run(model, x, n)
    torch.cuda.synchronize()
    return (time.perf_counter() - t) * 1e3 / n


def alternate(pairs, window):
    """Runs `pairs` pairs of windows, `window(False)` and `window(True)`, the order alternating
    (off-on, on-off) so that a drift of the machine within a pair favours neither; a calibration
    loop before each pair. Yields (on ms, off ms, loop ms) per pair."""
    for i in range(pairs):
        loop = calibration_ms()
        if i % 2 == 0:
            off = window(False)
            on = window(True)
        else:
            on = window(True)
            off = window(False)
        yield on, off, loop


def ab(model, x, steps, pairs):
    """Times the same process with the profiler paused (off) and collecting (on) in `pairs`
    pairs of adjacent windows of steps // (2 * pairs) steps, each ended by a synchronize, the
    order inside a pair alternating (off-on, on-off). The machine's clock phases last seconds,
    a pair a fraction of one, so the ratio on/off of one pair compares like with like; between
    processes the same configuration varied by up to 2x on the GPU machine. Pausing and resuming
    happen between windows, outside the timing. Without the agent both windows run unprofiled:
    the ratios then show the method's own spread. A calibration loop before each pair gives the
    off windows' step time in loops, to compare the paused state with unprofiled processes.
    Returns the per-pair ratios, the median ms per step of the off and on windows, and the
    median of the off windows in loops."""
    capture = agent_capture()
    per = max(1, steps // (2 * pairs))
    ratios, on_ms, off_ms, off_loops = [], [], [], []

    def window(on):
        if capture is not None and capture(1 if on else 0) < 0:
            sys.exit("xpuprof_cupti_capture failed")
        return ms_per_step(model, x, per)

    for on, off, loop in alternate(pairs, window):
        ratios.append(on / off)
        on_ms.append(on)
        off_ms.append(off)
        off_loops.append(off / loop)
    if capture is not None:
        capture(1)
    mid = pairs // 2
    return ratios, sorted(off_ms)[mid], sorted(on_ms)[mid], sorted(off_loops)[mid], capture is not None


def find_cupti():
    """The libcupti beside the libcudart this process maps (where the agent looks first), else
    the toolkit's; BENCH_CUPTI overrides."""
    import glob
    if os.environ.get("BENCH_CUPTI"):
        return os.environ["BENCH_CUPTI"]
    dirs = []
    with open("/proc/self/maps") as f:
        for ln in f:
            path = ln.split()[-1]
            if "/libcudart.so" in path:
                dirs.append(os.path.dirname(path))
    dirs += ["/usr/local/cuda/targets/x86_64-linux/lib", "/usr/local/cuda/lib64", "/usr/local/cuda/extras/CUPTI/lib64"]
    for d in dirs:
        found = sorted(glob.glob(os.path.join(d, "libcupti.so*")))
        if found:
            return found[0]
    sys.exit("residual: no libcupti found; set BENCH_CUPTI")


def residual(model, x, steps, pairs):
    """What the agent's paused state leaves on a launch: the same process's steps with CUPTI
    attached and subscribed but nothing enabled (as while `xpuprof_cupti_capture(0)` holds),
    against CUPTI detached (`cuptiUnsubscribe` + `cuptiFinalize`, CUPTI's documented detach), in
    adjacent windows as in `ab`. Run without the agent. Returns the per-pair ratios
    attached/detached."""
    import ctypes
    lib = ctypes.CDLL(find_cupti())
    cb_type = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int, ctypes.c_uint, ctypes.c_void_p)
    callback = cb_type(lambda *a: None)  # never called: no callback is enabled
    sub = ctypes.c_void_p()
    per = max(1, steps // (2 * pairs))

    def check(what, rc):
        if rc != 0:
            sys.exit(f"residual: {what} failed with CUPTI error {rc}")

    def window(attached):
        if attached:
            check("cuptiSubscribe", lib.cuptiSubscribe(ctypes.byref(sub), callback, None))
        took = ms_per_step(model, x, per)
        if attached:
            check("cuptiUnsubscribe", lib.cuptiUnsubscribe(sub))
            check("cuptiFinalize", lib.cuptiFinalize())
        return took

    return [on / off for on, off, _ in alternate(pairs, window)]


def main():
    mode, size = sys.argv[1], sys.argv[2]
    batch, seq = {"small": (8, 128), "large": (64, 512)}[size]
    steps = int(sys.argv[3]) if len(sys.argv) > 3 else (300 if size == "small" else 40)
    model = build()
    x = torch.randn(batch, seq, 512, device="cuda", dtype=torch.half)
    with torch.inference_mode():
        if mode in ("plain", "ab", "residual"):
            profiler = contextlib.nullcontext()
        else:
            acts = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
            profiler = torch.profiler.profile(activities=acts, with_stack=(mode == "profiler_stack"))
        with profiler:
            run(model, x, 20)
            torch.cuda.synchronize()
            cpu = os.environ.get("BENCH_CPU")
            if cpu:
                os.sched_setaffinity(0, {int(cpu)})
            if mode == "ab":
                pairs = int(os.environ.get("AB_PAIRS", "20"))
                ratios, off, on, off_loops, agent = ab(model, x, steps, pairs)
                r = sorted(ratios)
                print(f"BENCH2AB size={size} steps={steps} pairs={pairs} agent={int(agent)} off_ms_median={off:.4f}"
                      f" on_ms_median={on:.4f} off_loops_median={off_loops:.4f} ratio_median={r[len(r) // 2]:.4f}"
                      f" ratio_mean={sum(r) / len(r):.4f} ratios={','.join(f'{v:.3f}' for v in ratios)}", flush=True)
                return
            if mode == "residual":
                pairs = int(os.environ.get("AB_PAIRS", "20"))
                r = sorted(residual(model, x, steps, pairs))
                print(f"BENCH2RES size={size} steps={steps} pairs={pairs} ratio_median={r[len(r) // 2]:.4f}"
                      f" ratio_mean={sum(r) / len(r):.4f} ratios={','.join(f'{v:.3f}' for v in r)}", flush=True)
                return
            mean, median, rel, cpu, steal = timed(model, x, steps)
    print(f"BENCH2 mode={mode} size={size} steps={steps} ms_per_step={mean:.4f} ms_per_step_median={median:.4f}"
          f" loops_per_step_median={rel:.4f} cpu_ms_per_step={cpu:.4f}"
          f" steal_ms={steal if steal is None else round(steal)}", flush=True)


if __name__ == "__main__":
    main()
