"""PyTorch workload for the PC sampling checks (issue 32): a small convolutional model run eagerly
(cuDNN/cuBLAS and ATen kernels) and then through torch.compile (Inductor's Triton kernels, which
carry line tables pointing into the generated Python kernel files).

usage: pc_model.py [--steps N]

Prints `PC_MODEL pid=... steps=... ok` when done.
"""
import argparse
import os

import torch
from torch import nn


def build(device):
    torch.manual_seed(0)
    return nn.Sequential(
        nn.Conv2d(3, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(),
        nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(8), nn.Flatten(),
        nn.Linear(64 * 64, 1024), nn.GELU(), nn.Linear(1024, 10), nn.LayerNorm(10),
    ).to(device)


def run_eager(model, x, steps):
    for _ in range(steps):
        y = model(x)  # EAGER
    return y


def run_compiled(fn, x, steps):
    for _ in range(steps):
        y = fn(x)  # COMPILED
    return y


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=50)
    args = p.parse_args()
    device = torch.device("cuda:0")
    model = build(device).eval()
    x = torch.randn(64, 3, 64, 64, device=device)
    with torch.inference_mode():
        run_eager(model, x, args.steps)
        fn = torch.compile(model)
        run_compiled(fn, x, 3)  # compiles
        run_compiled(fn, x, args.steps)
    torch.cuda.synchronize(device)
    print(f"PC_MODEL pid={os.getpid()} steps={args.steps} ok", flush=True)


if __name__ == "__main__":
    main()
