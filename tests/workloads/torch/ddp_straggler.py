"""DDP over NCCL with an injected straggler, for the multi-rank checks (scripts/gpu/parts/ranks.sh).

usage: torchrun ... ddp_straggler.py [--steps N] [--fsdp] [--sleep-ms MS] [--every K] [--slow-rank R]

A small MLP (8 layers of 2048x2048, several DDP buckets, so several all-reduces per step) trained
for N steps (default 60). Each step is an NVTX range `step` (so step times are known per rank).
Rank R (default 1) sleeps MS ms (default 20) in Python every K steps (default 10) before its
forward pass, on the line marked `STRAGGLER LINE`: the other ranks wait for it at the step's first
all-reduce. With --fsdp the model is wrapped in FullyShardedDataParallel instead (all-gathers and
reduce-scatters). Each rank prints `ready rank=... pid=...` first and `done rank=... steps=...` last.
"""
import argparse
import os
import time

import torch
import torch.distributed as dist


def model(device):
    torch.manual_seed(0)
    layers = []
    for _ in range(8):
        layers += [torch.nn.Linear(2048, 2048), torch.nn.ReLU()]
    return torch.nn.Sequential(*layers).to(device)


def straggle(ms):
    time.sleep(ms / 1000.0)  # STRAGGLER LINE


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=60)
    p.add_argument("--fsdp", action="store_true")
    p.add_argument("--sleep-ms", type=float, default=20.0)
    p.add_argument("--every", type=int, default=10)
    p.add_argument("--slow-rank", type=int, default=1)
    a = p.parse_args()
    local = int(os.environ.get("LOCAL_RANK", "0"))
    torch.cuda.set_device(local)
    dist.init_process_group("nccl", device_id=torch.device("cuda", local))
    rank = dist.get_rank()
    print(f"ready rank={rank} pid={os.getpid()}", flush=True)
    net = model("cuda")
    if a.fsdp:
        from torch.distributed.fsdp import FullyShardedDataParallel
        net = FullyShardedDataParallel(net, device_id=local)
    else:
        from torch.nn.parallel import DistributedDataParallel
        net = DistributedDataParallel(net, device_ids=[local])
    opt = torch.optim.SGD(net.parameters(), lr=0.001)
    x = torch.randn(256, 2048, device="cuda")
    for i in range(a.steps):
        torch.cuda.nvtx.range_push("step")
        if rank == a.slow_rank and i % a.every == a.every - 1:
            straggle(a.sleep_ms)
        opt.zero_grad(set_to_none=True)
        loss = net(x).square().mean()
        loss.backward()
        opt.step()
        torch.cuda.nvtx.range_pop()
    torch.cuda.synchronize()
    dist.barrier()
    print(f"done rank={rank} steps={a.steps}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
