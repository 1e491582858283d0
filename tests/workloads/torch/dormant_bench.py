"""What a dormant xpuprof agent costs (issue 25): the same process's steps before and after a
capture window, for `scripts/gpu/check_dormant.py`.

usage: dormant_bench.py WORKLOAD --go FILE [--windows N] [--steps K] [--spin] [--sync-steps]
  WORKLOAD: b2small  transformer_bench.py's B2 small (6-layer encoder, batch 8 x seq 128, fp16,
                     inference: launch-bound)
            resnet   real_bench.py's ResNet-18 training step (forward, backward, SGD), batch 32

After a warm-up it prints `ready pid=PID`, times N windows of K steps ("before"), prints `pause`
and runs untimed steps until FILE exists (meanwhile the driver attaches xpuprof for a window and
lets it detach, opens a window with `xpuprof trigger`, or, for the control, does nothing), then
times N more windows ("after"). Each window starts and ends with a synchronize and has a
calibration loop before it (transformer_bench.py's `calibration_ms`): a window's step time over
the mean of the loops around it is its cost in "loops", which the GPU machine's clock phases do
not move. The last line is

  DORMANT workload=... before_ms=... after_ms=... before_loops=... after_loops=...
          ratio=after_loops/before_loops state_before=S state_after=S detached_ns=T

(medians over the windows), then the work counted per step (step_counters.py: perf counters on
every thread of the process, read at each window's start and end, so the calibration loops are
not in them), medians over each phase's windows:

  before_iu/after_iu   user-mode instructions per step (absent without hardware counters: pmu=no)
  before_ik/after_ik   kernel-mode instructions per step
  iu_ratio             after_iu / before_iu; iu_spread: (max - min) / median of the windows'
                       user instructions per step, the larger of the two phases
  before_task/after_task  CPU time of all threads per step (µs, task-clock)
  before_ctx/after_ctx    context switches per step
  agent_cpu_ms         CPU time of the agent's threads (named xpuprof-*) during the after phase
  agent_threads        their names; threads: threads counted in all

The process waits for the GPU with blocking synchronisation (CU_CTX_SCHED_BLOCKING_SYNC, set
before torch creates its context: a spinning wait would count instructions that depend on GPU
time); --spin keeps CUDA's default. --sync-steps ends every step with a synchronize: without it a
GPU slower than the launches (ResNet's steps, or any step on a GPU shared with other processes)
fills the launch queue and the launching thread waits inside the driver for room, work that
depends on GPU time again. `state_*` is the agent's state at the start of each phase as
`xpuprof_cupti_state()` reports it: `none` (no agent in the process), `detached` (CUPTI detached,
dormant), `paused` or `collecting`; `detached_ns` is `xpuprof_cupti_detached_ns()` read once the
go file appeared (waiting up to 3 s for the detach), 0 when CUPTI was never detached.
"""
import argparse
import ctypes
import os
import statistics
import sys
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
# transformer_bench.py lives with the CUDA workloads of the cupti plugin's tests.
for d in (HERE, os.path.join(HERE, "..", "..", "..", "plugins", "cupti", "tests", "workloads")):
    sys.path.insert(0, d)
from transformer_bench import build as build_transformer, calibration_ms  # noqa: E402
from real_bench import resnet, train_step  # noqa: E402
import step_counters  # noqa: E402

STATES = {-1: "not-running", 0: "detached", 1: "paused", 2: "collecting"}


def workload(name):
    """The step function and the context it runs in."""
    if name == "b2small":
        model = build_transformer()
        x = torch.randn(8, 128, 512, device="cuda", dtype=torch.half)
        return (lambda: model(x)), torch.inference_mode()
    if name == "resnet":
        import contextlib
        return train_step(resnet("cuda")), contextlib.nullcontext()
    sys.exit(f"dormant_bench: unknown workload {name!r}: b2small or resnet")


def agent():
    """The xpuprof cupti agent this process has loaded (from the start or by an attach), found in
    its maps; None when there is none."""
    with open("/proc/self/maps") as f:
        for line in f:
            path = line.split()[-1]
            if os.path.basename(path).startswith("libxpuprof_cupti_agent"):
                lib = ctypes.CDLL(path)
                lib.xpuprof_cupti_detached_ns.restype = ctypes.c_uint64
                return lib
    return None


def state():
    lib = agent()
    if lib is None:
        return "none"
    try:
        return STATES.get(lib.xpuprof_cupti_state(), "unknown")
    except AttributeError:
        return "unknown"  # an agent older than xpuprof_cupti_state


def phase(step, windows, steps, counters):
    """Median ms per step and median loops per step of `windows` windows of `steps` steps, and
    each window's counters per step ({event: [per window]})."""
    ms, loops, counted = [], [], {}
    before = calibration_ms()
    for _ in range(windows):
        counters.refresh()
        torch.cuda.synchronize()
        c0 = counters.read()
        t = time.perf_counter()
        for _ in range(steps):
            step()
        torch.cuda.synchronize()
        took = (time.perf_counter() - t) * 1e3 / steps
        c1 = counters.read()
        for e, v in c1.items():
            counted.setdefault(e, []).append((v - c0.get(e, 0)) / steps)
        after = calibration_ms()
        ms.append(took)
        loops.append(took / ((before + after) / 2))
        before = after
    return statistics.median(ms), statistics.median(loops), counted


def counted_fields(b, a):
    """The DORMANT line's counter fields of the before (`b`) and after (`a`) phases."""
    med = statistics.median
    out = []
    for e, key, scale, fmt in (("instr_u", "iu", 1, ".0f"), ("instr_k", "ik", 1, ".0f"),
                               ("task_ns", "task", 1e-3, ".2f"), ("ctx", "ctx", 1, ".3f")):
        if b.get(e) and a.get(e):
            out.append(f"before_{key}={med(b[e]) * scale:{fmt}} after_{key}={med(a[e]) * scale:{fmt}}")
    if b.get("instr_u") and a.get("instr_u"):
        spread = max((max(x) - min(x)) / med(x) for x in (b["instr_u"], a["instr_u"]))
        out.append(f"iu_ratio={med(a['instr_u']) / med(b['instr_u']):.5f} iu_spread={spread:.5f} pmu=yes")
    else:
        out.append("pmu=no")
    return " ".join(out)


def wait_for(go, step):
    """Runs steps until `go` exists (at most 120 s)."""
    end = time.monotonic() + 120
    while not os.path.exists(go) and time.monotonic() < end:
        for _ in range(5):
            step()
        torch.cuda.synchronize()
    if not os.path.exists(go):
        sys.exit(f"dormant_bench: {go} did not appear within 120 s")


def detached_ns(step):
    """When the agent detached CUPTI, waiting up to 3 s (running steps: CUPTI detaches at a CUDA
    API exit) for a detach that is under way; 0 without an agent or a detach."""
    lib = agent()
    if lib is None:
        return 0
    end = time.monotonic() + 3
    while lib.xpuprof_cupti_state() != 0 and time.monotonic() < end:
        step()
        torch.cuda.synchronize()
    return lib.xpuprof_cupti_detached_ns()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("workload")
    p.add_argument("--go", required=True)
    p.add_argument("--windows", type=int, default=15)
    p.add_argument("--steps", type=int, default=0, help="steps per window (default: b2small 150, resnet 20)")
    p.add_argument("--spin", action="store_true", help="keep CUDA's default (spinning) wait")
    p.add_argument("--sync-steps", action="store_true", help="synchronize after every step")
    a = p.parse_args()
    steps = a.steps or (150 if a.workload == "b2small" else 20)
    sync = "spin" if a.spin else (step_counters.blocking_sync() or "blocking")
    step, context = workload(a.workload)
    if a.sync_steps:
        bare = step

        def step():
            bare()
            torch.cuda.synchronize()
    with context:
        for _ in range(20):
            step()
        torch.cuda.synchronize()
        cpu = os.environ.get("BENCH_CPU")
        if cpu and int(cpu) in os.sched_getaffinity(0):
            os.sched_setaffinity(0, {int(cpu)})
        counters = step_counters.Counters()
        print(f"ready pid={os.getpid()}", flush=True)
        s0 = state()
        b_ms, b_loops, b_counted = phase(step, a.windows, steps, counters)
        print("pause", flush=True)
        wait_for(a.go, step)
        det = detached_ns(step)
        s1 = state()
        counters.refresh()
        cpu0, task0 = step_counters.thread_cpu(), counters.per_thread("task_ns")
        a_ms, a_loops, a_counted = phase(step, a.windows, steps, counters)
        agent_s, agent_names = step_counters.agent_cpu(cpu0, step_counters.thread_cpu(), task0,
                                                       counters.per_thread("task_ns"))
    missing = ",".join(sorted(counters.missing)) or "none"
    print(f"DORMANT workload={a.workload} before_ms={b_ms:.4f} after_ms={a_ms:.4f} before_loops={b_loops:.5f}"
          f" after_loops={a_loops:.5f} ratio={a_loops / b_loops:.4f} state_before={s0} state_after={s1}"
          f" detached_ns={det} {counted_fields(b_counted, a_counted)} agent_cpu_ms={agent_s * 1e3:.3f}"
          f" agent_threads={','.join(agent_names) or 'none'} threads={len(counters.threads)}"
          f" counters_missing={missing} sync={sync.replace(' ', '_')} sync_steps={int(a.sync_steps)}", flush=True)


if __name__ == "__main__":
    main()
