"""PyTorch workload for end-to-end profiling: a random-weight transformer encoder (no downloads).

usage: workload.py [--mode infer|train|both] [--steps N] [--procs P] [--devices D]

- infer: forward passes under inference_mode (fp16, 6 layers, d_model 512, batch 8 x seq 128).
- train: forward + backward + AdamW step (fp32 master weights, autocast fp16).
- --procs P: P processes share the job (multiprocessing spawn), each running the mode; their
  kernels must appear under their own process's stacks.
- --devices D: process i runs on cuda:(i % D); with --procs 2 --devices 2 each GPU gets one.

Every process prints `WORKLOAD pid=... device=... mode=... steps=... ok` when done, so tests can
check that each process ran. Exit code 0 on success.
"""
import argparse
import os
import sys

import torch
from torch import nn


def build(device):
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(d_model=512, nhead=8, dim_feedforward=2048, batch_first=True)
    return nn.TransformerEncoder(layer, num_layers=6, enable_nested_tensor=False).to(device)


def infer(model, device, steps):
    model = model.half().eval()
    x = torch.randn(8, 128, 512, device=device, dtype=torch.float16)
    with torch.inference_mode():
        for _ in range(steps):
            model(x)


def train(model, device, steps):
    model = model.float().train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    x = torch.randn(8, 128, 512, device=device)
    target = torch.randn(8, 128, 512, device=device)
    for _ in range(steps):
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.float16):
            loss = nn.functional.mse_loss(model(x), target)
        loss.backward()
        opt.step()


def worker(rank, args):
    device = torch.device(f"cuda:{rank % args.devices}")
    torch.cuda.set_device(device)
    model = build(device)
    if args.mode in ("infer", "both"):
        infer(model, device, args.steps)
    if args.mode in ("train", "both"):
        train(build(device), device, args.steps)
    torch.cuda.synchronize(device)
    print(f"WORKLOAD pid={os.getpid()} device={device.index} mode={args.mode} steps={args.steps} ok", flush=True)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--mode", choices=["infer", "train", "both"], default="both")
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--procs", type=int, default=1)
    p.add_argument("--devices", type=int, default=1)
    args = p.parse_args()
    if not torch.cuda.is_available():
        sys.exit("workload.py: no CUDA device available")
    if args.devices > torch.cuda.device_count():
        sys.exit(f"workload.py: asked for {args.devices} devices, {torch.cuda.device_count()} present")
    if args.procs == 1:
        worker(0, args)
        return
    ctx = torch.multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=worker, args=(r, args)) for r in range(args.procs)]
    for pr in procs:
        pr.start()
    for pr in procs:
        pr.join()
    bad = [pr.exitcode for pr in procs if pr.exitcode != 0]
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
