"""Launch-stack reuse measured in one process (issue #29): adjacent windows of the same steps with
the cupti agent paused, collecting with every launch captured in full (`xpuprof_launch_reuse(0)`,
the default), collecting with the native walk reused (`xpuprof_launch_reuse(3)`), and with the
native walk and the Python frames reused (`xpuprof_launch_reuse(1)`), the order of the four
rotating from round to round; then a `check` window (every launch captured both ways, the
launches whose two stacks differ counted: 0 if reuse is exact).

Run with the cupti agent in CUDA_INJECTION64_PATH (directly or under `xpuprof record`).

usage: reuse_windows.py double LIBCUDA ENGINE_LIB [ROUNDS] [STEPS_PER_WINDOW]
  the CUDA test double (plugins/cupti/tests/doubles/libcuda_double.c built as libcuda.so.1, also
  the agent's XPUPROF_CUPTI_LIB) driven by a Python training-shaped loop 40 frames deep: a forward
  pass of modules calling the same layer functions from several lines, then a backward-like
  pass whose launches come from a native thread named pt_autograd_0
  (workloads/engine_thread.c, ENGINE_LIB) while the Python thread waits in
  `_engine_run_backward`, called from two lines. REUSE_SWEEP_KIB=N has each launch touch N KiB
  first (the framework's work between launches: without it every frame stays in L1), written
  (a new buffer each time) or, with REUSE_SWEEP_READ=1, read (a scan of one buffer).
  `tests/workloads/torch/reuse_resnet.py` runs
  the same windows on ResNet-18 training on a GPU.

Prints `REUSE workload=... rounds=... off_vs_paused=... native_vs_paused=... on_vs_paused=...
native_vs_off=... on_vs_off=...` (medians of the per-round ratios) and `REUSE_CHECK ... checked=N
differed=M`.
"""
import ctypes
import os
import sys
import time


def agent():
    """The cupti agent loaded in this process (its path is CUDA_INJECTION64_PATH)."""
    path = os.environ.get("CUDA_INJECTION64_PATH")
    if not path:
        sys.exit("reuse_windows: run with the cupti agent in CUDA_INJECTION64_PATH")
    lib = ctypes.CDLL(path)
    for name, args in (("xpuprof_cupti_capture", [ctypes.c_int]), ("xpuprof_launch_reuse", [ctypes.c_int]),
                       ("xpuprof_launch_reuse_counts", [ctypes.POINTER(ctypes.c_uint64), ctypes.c_int])):
        f = getattr(lib, name)
        f.argtypes, f.restype = args, ctypes.c_int
    return lib


def counts(lib):
    """(native, python, checked, differed): the agent's reuse counts so far."""
    out = (ctypes.c_uint64 * 4)()
    lib.xpuprof_launch_reuse_counts(out, 4)
    return tuple(out)


def timed(step, sync, n):
    sync()
    t = time.perf_counter()
    for _ in range(n):
        step()
    sync()
    return (time.perf_counter() - t) * 1e3 / n


STATES = ("paused", "off", "native", "on")
MODES = {"off": 0, "on": 1, "native": 3}
RATIOS = (("off", "paused"), ("native", "paused"), ("on", "paused"), ("native", "off"), ("on", "off"))


def windows(lib, step, sync, rounds, per):
    """Per round, one window of `per` steps in each state, the order rotating; returns the
    per-round ratios (RATIOS) and the paused ms per step of each round."""
    ratios, base = [], []
    for r in range(rounds):
        ms = {}
        for k in range(len(STATES)):
            state = STATES[(r + k) % len(STATES)]
            if lib.xpuprof_cupti_capture(0 if state == "paused" else 1) < 0:
                sys.exit("reuse_windows: xpuprof_cupti_capture failed")
            if state != "paused":
                lib.xpuprof_launch_reuse(MODES[state])
            ms[state] = timed(step, sync, per)
        ratios.append(tuple(ms[a] / ms[b] for a, b in RATIOS))
        base.append(ms["paused"])
    lib.xpuprof_cupti_capture(1)
    lib.xpuprof_launch_reuse(0)
    return ratios, base


def check(lib, step, sync, steps):
    """`steps` steps in check mode; returns (checked, differed) for them."""
    before = counts(lib)
    lib.xpuprof_launch_reuse(2)
    timed(step, sync, steps)
    lib.xpuprof_launch_reuse(0)
    after = counts(lib)
    return after[2] - before[2], after[3] - before[3]


def median(v):
    v = sorted(v)
    return v[len(v) // 2]


def report(workload, lib, step, sync, rounds, per, check_steps):
    ratios, base = windows(lib, step, sync, rounds, per)
    cols = list(zip(*ratios))
    fields = " ".join(f"{a}_vs_{b}={median(c):.4f}" for (a, b), c in zip(RATIOS, cols))
    print(f"REUSE workload={workload} rounds={rounds} steps_per_window={per} paused_ms={median(base):.4f} "
          f"{fields}", flush=True)
    checked, differed = check(lib, step, sync, check_steps)
    native, python, _, _ = counts(lib)
    print(f"REUSE_CHECK workload={workload} checked={checked} differed={differed} "
          f"launches_reusing_native={native} launches_reusing_python={python}", flush=True)


# ---- the CUDA test double workload -------------------------------------------------------------

def double_step(cuda, engine, sweep_kib):
    raw = cuda.xpuprof_double_launch
    raw.argtypes, raw.restype = [ctypes.c_char_p], ctypes.c_int
    if sweep_kib > 0 and os.environ.get("REUSE_SWEEP_READ") == "1":
        # The same, read only: a scan of one buffer (no dirty lines to write back first).
        buf = bytes(sweep_kib << 10)

        def launch(name):
            buf.find(b"\x01")
            raw(name)
    elif sweep_kib > 0:
        # The framework's own work between launches (a dispatcher, allocators, tensors): memory
        # touched between two launches, so the stack and frames are no longer all in L1/L2.
        def launch(name):
            bytearray(sweep_kib << 10)
            raw(name)
    else:
        launch = raw

    def conv():
        launch(b"conv_kernel")

    def norm():
        launch(b"norm_kernel")
        launch(b"norm_stats_kernel")

    def act():
        launch(b"relu_kernel")

    def block():
        conv()
        norm()
        act()
        conv()
        norm()

    def stage(k):
        for _ in range(2):
            block()

    def forward(depth):
        if depth > 0:
            return forward(depth - 1)
        for k in range(4):
            stage(k)

    def _engine_run_backward(n):
        engine.engine_run(n)

    def backward():
        _engine_run_backward(20)
        _engine_run_backward(4)

    def optimizer():
        for _ in range(3):
            launch(b"sgd_kernel")

    def step(depth=24):
        if depth > 0:
            return step(depth - 1)
        forward(8)
        backward()
        optimizer()

    def nest(n):
        return nest(n - 1) if n else step()

    return lambda: nest(6)


def main():
    if len(sys.argv) < 4 or sys.argv[1] != "double":
        sys.exit(__doc__)
    cuda = ctypes.CDLL(sys.argv[2])
    engine = ctypes.CDLL(sys.argv[3])
    engine.engine_start.argtypes, engine.engine_start.restype = [ctypes.c_char_p], ctypes.c_int
    engine.engine_run.argtypes, engine.engine_run.restype = [ctypes.c_int], None
    if cuda.xpuprof_double_init() < 0:  # InitializeInjection's result (1) or 0 when done before
        sys.exit("reuse_windows: the agent did not start on the CUDA test double")
    if engine.engine_start(sys.argv[2].encode()) != 0:
        sys.exit("reuse_windows: the engine thread did not start")
    rounds = int(sys.argv[4]) if len(sys.argv) > 4 else 30
    per = int(sys.argv[5]) if len(sys.argv) > 5 else 40
    lib = agent()
    step = double_step(cuda, engine, int(os.environ.get("REUSE_SWEEP_KIB", "0")))
    for _ in range(20):
        step()
    report(f"double_sweep{os.environ.get('REUSE_SWEEP_KIB', '0')}k", lib, step, lambda: None, rounds, per, per)


if __name__ == "__main__":
    main()
