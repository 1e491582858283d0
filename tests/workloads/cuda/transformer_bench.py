"""Benchmark B2: PyTorch transformer-encoder inference with random weights (no downloads).

usage: transformer_bench.py MODE SIZE [STEPS]
  MODE: plain | profiler | profiler_stack   (torch.profiler with CPU+CUDA activities)
  SIZE: small (batch 8 x seq 128, launch-bound) | large (batch 64 x seq 512, compute-bound)

6 layers, d_model 512, 8 heads, feed-forward 2048, fp16, eval mode under inference_mode. Warms
up first (inside the profiler for the profiler modes, so its start-up is excluded), then times
STEPS forward passes from the first launch to a final synchronize; the profiler is stopped
after the timing and nothing is exported. Prints `BENCH2 mode=... size=... ms_per_step=...
ms_per_step_median=...`: the whole run's mean, and the median of ten equal windows (each ended by a
synchronize), which a single hiccup of the machine does not move.

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


def timed(model, x, steps, windows=10):
    """Mean ms per step over `steps`, and the median of `windows` equal windows' ms per step."""
    per = max(1, steps // windows)
    times = []
    t0 = time.perf_counter()
    done = 0
    while done < steps:
        n = min(per, steps - done)
        t = time.perf_counter()
        run(model, x, n)
        torch.cuda.synchronize()
        times.append((time.perf_counter() - t) * 1e3 / n)
        done += n
    total = (time.perf_counter() - t0) * 1e3 / steps
    times.sort()
    return total, times[len(times) // 2]


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
            mean, median = timed(model, x, steps)
    print(f"BENCH2 mode={mode} size={size} steps={steps} ms_per_step={mean:.4f} ms_per_step_median={median:.4f}",
          flush=True)


if __name__ == "__main__":
    main()
