"""Benchmark B2: PyTorch transformer-encoder inference with random weights (no downloads).

usage: transformer_bench.py MODE SIZE [STEPS]
  MODE: plain | profiler | profiler_stack   (torch.profiler with CPU+CUDA activities)
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


def main():
    mode, size = sys.argv[1], sys.argv[2]
    batch, seq = {"small": (8, 128), "large": (64, 512)}[size]
    steps = int(sys.argv[3]) if len(sys.argv) > 3 else (300 if size == "small" else 40)
    model = build()
    x = torch.randn(batch, seq, 512, device="cuda", dtype=torch.half)
    with torch.inference_mode():
        if mode == "plain":
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
            mean, median, rel, cpu, steal = timed(model, x, steps)
    print(f"BENCH2 mode={mode} size={size} steps={steps} ms_per_step={mean:.4f} ms_per_step_median={median:.4f}"
          f" loops_per_step_median={rel:.4f} cpu_ms_per_step={cpu:.4f}"
          f" steal_ms={steal if steal is None else round(steal)}", flush=True)


if __name__ == "__main__":
    main()
