"""The cupti agent's launch path measured in one process (issue #29): adjacent windows of the same
steps with the agent paused, collecting launch entries without stacks (the path of
`launch_stacks = "off"`: `xpuprof_launch_detail(0)`), native frames only (`python = "off"`:
detail 1), and in full (native + Python frames, the default: detail 2), plus one window per
LEVEL_EXTRA item `name=EXPORT:VALUE` (the agent's `int EXPORT(int)` called with VALUE before the
window and given its answer back after: the full capture with that switch), the order rotating
from round to round. Medians of the per-round ratios: each state against paused, `stacks_add`
= (full - entries) / paused (what launch stacks add, the #29 budget's term), `python_add` =
(full - native) / paused, each extra state against full.

Run with the cupti agent in CUDA_INJECTION64_PATH (directly or under `xpuprof record`).
`tests/workloads/torch/real_bench.py levels` runs these windows on ResNet-18 training and
Qwen-shaped decoding on a GPU; here:

usage: level_windows.py double LIBCUDA ENGINE_LIB [ROUNDS] [STEPS_PER_WINDOW]
  the CUDA test double driven by reuse_windows.py's training-shaped Python loop (about 50 frames,
  a native pt_autograd_0 engine thread); REUSE_SWEEP_KIB=N touches N KiB before each launch.
       level_windows.py deep LIBCUDA DEEP_LIB [ROUNDS] [STEPS_PER_WINDOW]
  a step is one launch from each of DEEP_SITES (200) chains of a library written by deep_lib.py
  (deep native stacks through many distinct functions); REUSE_SWEEP_KIB=N reads N KiB first.

Prints `LEVELS workload=... rounds=... paused_ms=... entries_vs_paused=... native_vs_paused=...
full_vs_paused=... stacks_add=... python_add=... [NAME_vs_full=...] frames_per_walk=...
fast_per_walk=... lookups_per_walk=... refreshes=... walks=... full_ratios=...` (the walk
counts of the full windows, from xpuprof_launch_counts).
"""
import ctypes
import os
import sys
import time

from reuse_windows import timed  # milliseconds a step of n steps between two syncs


def agent_lib():
    """The cupti agent loaded in this process (CUDA_INJECTION64_PATH), its switches typed."""
    path = os.environ.get("CUDA_INJECTION64_PATH")
    if not path:
        sys.exit("level_windows: run under xpuprof --source cupti (or with the agent in CUDA_INJECTION64_PATH)")
    lib = ctypes.CDLL(path)
    for name in ("xpuprof_cupti_capture", "xpuprof_launch_detail"):
        f = getattr(lib, name)
        f.argtypes, f.restype = [ctypes.c_int], ctypes.c_int
    return lib


def level_states(lib):
    """(name, capture, detail, extra switch or None) per window kind."""
    states = [("paused", 0, 2, None), ("entries", 1, 0, None), ("native", 1, 1, None), ("full", 1, 2, None)]
    for item in os.environ.get("LEVEL_EXTRA", "").split():
        name, _, rest = item.partition("=")
        export, _, value = rest.partition(":")
        f = getattr(lib, export, None)
        if not name or f is None or not value.lstrip("-").isdigit():
            sys.exit(f"level_windows: LEVEL_EXTRA item {item!r}: expected name=EXPORT:VALUE with an export of the agent")
        f.argtypes, f.restype = [ctypes.c_int], ctypes.c_int
        states.append((name, 1, 2, (f, int(value))))
    return states


def levels(step, sync, per, rounds):
    """Per round one window of `per` steps per state, the order rotating; returns the states'
    names, per-round ms per step of each, and the agent's switches put back."""
    lib = agent_lib()
    states = level_states(lib)
    # Each outermost launch's entry timed in every collecting window (one clock read more).
    timing = 4 if os.environ.get("LEVEL_TIMED", "1") == "1" else 0
    ms = {name: [] for name, *_ in states}
    walked = {name: [0] * (len(WALK_COUNTS) + 1) for name, *_ in states}
    for r in range(rounds):
        for k in range(len(states)):
            name, capture, detail, extra = states[(r + k) % len(states)]
            if lib.xpuprof_cupti_capture(capture) < 0 or lib.xpuprof_launch_detail(detail | timing) < 0:
                sys.exit("level_windows: the agent refused a switch")
            before = extra[0](extra[1]) if extra else None
            c0, t0 = walk_counts(lib), time.perf_counter_ns()
            ms[name].append(timed(step, sync, per))
            c1, t1 = walk_counts(lib), time.perf_counter_ns()
            # The clock's ticks (last count) stand against the window's nanoseconds.
            c0.append(t0)
            c1.append(t1)
            walked[name] = [w + b - a for w, a, b in zip(walked[name], c0, c1)]
            if extra:
                extra[0](before)
    lib.xpuprof_cupti_capture(1)
    lib.xpuprof_launch_detail(2)
    ms["walks"] = walked
    return [name for name, *_ in states], ms


WALK_COUNTS = ("walks", "frames", "fast", "lookups", "refreshes", "timed", "ticks", "walk_ticks", "python_ticks",
               "clock", "stack_frames", "engine", "engine_ticks", "engine_python_ticks")


def walk_counts(lib):
    """The agent's native-walk counts so far (xpuprof_launch_counts; zeros where the agent
    has no such export)."""
    out = (ctypes.c_uint64 * len(WALK_COUNTS))()
    f = getattr(lib, "xpuprof_launch_counts", None)
    if f is not None:
        f.argtypes, f.restype = [ctypes.POINTER(ctypes.c_uint64), ctypes.c_int], ctypes.c_int
        f(out, len(WALK_COUNTS))
    return list(out)


def fmt(values):
    return ",".join(f"{v:.3f}" for v in values)


def median(v):
    v = sorted(v)
    return v[len(v) // 2]


def line(head, names, ms):
    base = ms["paused"]
    fields = [f"paused_ms={median(base):.4f}"]
    for name in names[1:]:
        fields.append(f"{name}_vs_paused={median([a / b for a, b in zip(ms[name], base)]):.4f}")
    add = [(f - e) / p for f, e, p in zip(ms["full"], ms["entries"], base)]
    fields.append(f"stacks_add={median(add):.4f}")
    fields.append(f"python_add={median([(f - n) / p for f, n, p in zip(ms['full'], ms['native'], base)]):.4f}")
    for name in names[4:]:
        fields.append(f"{name}_vs_full={median([a / b for a, b in zip(ms[name], ms['full'])]):.4f}")
    for name in names[1:]:
        # The agent's own time per launch entry (walk, Python frames, hash, entry), by state.
        c = ms["walks"][name]
        timed_n, ticks, walk, python, clock_ticks, stack_frames, engine, e_ticks, e_python, wall_ns = c[5:15]
        if timed_n and clock_ticks:
            per = wall_ns / clock_ticks / timed_n
            fields.append(f"{name}_enter_ns={ticks * per:.0f}")
            if c[0] and name not in ("entries", "native", "full"):
                fields.append(f"{name}_lookups_per_walk={c[3] / c[0]:.3f}")
            if name == "full":
                fields.append(f"full_walk_ns={walk * per:.0f} full_python_ns={python * per:.0f}"
                              f" frames_per_stack={stack_frames / timed_n:.1f}")
                if engine and engine < timed_n:
                    # Autograd engine threads apart from the others (per entry of each).
                    unit = wall_ns / clock_ticks
                    fields.append(f"engine_share={engine / timed_n:.3f}"
                                  f" engine_enter_ns={e_ticks * unit / engine:.0f}"
                                  f" engine_python_ns={e_python * unit / engine:.0f}"
                                  f" other_enter_ns={(ticks - e_ticks) * unit / (timed_n - engine):.0f}"
                                  f" other_python_ns={(python - e_python) * unit / (timed_n - engine):.0f}")
    walks, frames, fast, lookups, refreshes = ms["walks"]["full"][:5]
    if walks:
        # The full windows' walks: frames written per walk, steps by a cached rule per walk
        # (the agent's own leading frames included), rule-cache misses (CFI lookups) per walk,
        # module-list refreshes.
        fields.append(f"frames_per_walk={frames / walks:.1f} fast_per_walk={fast / walks:.1f}"
                      f" lookups_per_walk={lookups / walks:.3f} refreshes={refreshes} walks={walks}")
    fields.append("full_ratios=" + fmt([f / p for f, p in zip(ms["full"], base)]))
    return f"{head} rounds={len(base)} " + " ".join(fields)


def deep_step(deep, sites, sweep_kib):
    """One step: one launch from each of the deep library's `sites` chains, in turn."""
    launch = deep.deep_launch
    launch.argtypes, launch.restype = [ctypes.c_int], ctypes.c_int
    buf = bytes(sweep_kib << 10)

    def step():
        for s in range(sites):
            if sweep_kib:
                buf.find(b"\x01")
            launch(s)

    return step


def main():
    if len(sys.argv) < 4 or sys.argv[1] not in ("double", "deep"):
        sys.exit(__doc__)
    import reuse_windows
    cuda = ctypes.CDLL(sys.argv[2])
    if cuda.xpuprof_double_init() < 0:
        sys.exit("level_windows: the agent did not start on the CUDA test double")
    sweep = os.environ.get("REUSE_SWEEP_KIB", "0")
    if sys.argv[1] == "deep":
        sites = int(os.environ.get("DEEP_SITES", "200"))
        step = deep_step(ctypes.CDLL(sys.argv[3]), sites, int(sweep))
        workload = f"deep{sites}_sweep{sweep}k"
    else:
        engine = ctypes.CDLL(sys.argv[3])
        engine.engine_start.argtypes, engine.engine_start.restype = [ctypes.c_char_p], ctypes.c_int
        engine.engine_run.argtypes, engine.engine_run.restype = [ctypes.c_int], None
        if engine.engine_start(sys.argv[2].encode()) != 0:
            sys.exit("level_windows: the engine thread did not start")
        step = reuse_windows.double_step(cuda, engine, int(sweep))
        workload = f"double_sweep{sweep}k"
    rounds = int(sys.argv[4]) if len(sys.argv) > 4 else 30
    per = int(sys.argv[5]) if len(sys.argv) > 5 else 40
    for _ in range(20):
        step()
    names, ms = levels(step, lambda: None, per, rounds)
    print(line(f"LEVELS workload={workload} steps={per}", names, ms), flush=True)


if __name__ == "__main__":
    main()
