"""torch.compile with max-autotune for the compile-time checks (issue 33 item 4): Inductor
benchmarks candidate GEMM kernels (Triton templates and cuBLAS) while it compiles; those
benchmarking launches are compile-time work, the steady-state kernels are not.

usage: autotune.py [--steps N]

The compiled call is the line marked CALL, the first call (which compiles and autotunes) the line
marked COMPILE. Prints `AUTOTUNE pid=... steps=... ok` when done.
"""
import argparse
import os

import torch
from torch import nn


def run(fn, x, steps):
    y = None
    for _ in range(steps):
        y = fn(x)  # CALL
    return y


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=50)
    args = p.parse_args()
    device = torch.device("cuda:0")
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(1024, 2048), nn.GELU(), nn.Linear(2048, 1024)).to(device).half().eval()
    fn = torch.compile(model, mode="max-autotune-no-cudagraphs")
    x = torch.randn(256, 1024, device=device, dtype=torch.float16)
    with torch.inference_mode():
        fn(x)  # COMPILE
        run(fn, x, args.steps)
    torch.cuda.synchronize(device)
    print(f"AUTOTUNE pid={os.getpid()} steps={args.steps} ok", flush=True)


if __name__ == "__main__":
    main()
