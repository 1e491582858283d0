"""torch.compile workload for the Python-stack checks: a small MLP compiled by Inductor, whose
fused Triton kernels must sit under the Python line that calls the compiled function.

usage: compiled.py [--steps N]

The compiled call is the line marked CALL below; the checker finds it by that marker.
Prints `COMPILED pid=... steps=... ok` when done.
"""
import argparse
import os

import torch
from torch import nn


def build(device):
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(1024, 4096), nn.GELU(), nn.Linear(4096, 1024), nn.LayerNorm(1024)).to(device)


def run(fn, x, steps):
    for _ in range(steps):
        y = fn(x)  # CALL
    return y


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=50)
    args = p.parse_args()
    device = torch.device("cuda:0")
    model = build(device).eval()
    fn = torch.compile(model)
    x = torch.randn(64, 1024, device=device)
    with torch.inference_mode():
        run(fn, x, 3)  # compiles (and warms up) outside the measured steps
        run(fn, x, args.steps)
    torch.cuda.synchronize(device)
    print(f"COMPILED pid={os.getpid()} steps={args.steps} ok", flush=True)


if __name__ == "__main__":
    main()
