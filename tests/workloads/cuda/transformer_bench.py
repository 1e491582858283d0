"""Benchmark B2: PyTorch transformer-encoder inference with random weights (no downloads).

usage: transformer_bench.py MODE SIZE [STEPS]
  MODE: plain | profiler | profiler_stack   (torch.profiler with CPU+CUDA activities)
  SIZE: small (batch 8 x seq 128, launch-bound) | large (batch 64 x seq 512, compute-bound)

6 layers, d_model 512, 8 heads, feed-forward 2048, fp16, eval mode under inference_mode. Warms
up first (inside the profiler for the profiler modes, so its start-up is excluded), then times
STEPS forward passes from the first launch to a final synchronize; the profiler is stopped
after the timing and nothing is exported. Prints `BENCH2 mode=... size=... ms_per_step=...`.
"""
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
            t0 = time.perf_counter()
            run(model, x, steps)
            torch.cuda.synchronize()
            dt = time.perf_counter() - t0
    print(f"BENCH2 mode={mode} size={size} steps={steps} ms_per_step={dt * 1e3 / steps:.4f}", flush=True)


if __name__ == "__main__":
    main()
