"""A PyTorch training loop for `xpuprof attach` (issue 25), started without xpuprof.

usage: attach_train.py --seconds S --step-log FILE [--calibrate N] [--nvtx]

Trains a small MLP (forward, backward, AdamW step) on the GPU. After 20 warm-up steps it prints
`ready pid=PID` and then appends one line per step to FILE: `step I T0 T1`, the step's start and
end in CLOCK_MONOTONIC nanoseconds (the session clock of xpuprof's outputs); each step ends with
torch.cuda.synchronize(), so every kernel of step I runs between its T0 and T1. It stops after S
seconds and prints `steps N`.

Under torchrun each rank trains on its own GPU (cuda:LOCAL_RANK, no gradient exchange: enough for
`xpuprof attach --tree` on the launcher to find every rank) and logs to FILE.RANK.

With --calibrate N it wraps steps 1..N after the warm-up in torch.cuda.profiler.start()/stop()
(cudaProfilerStart/Stop): `xpuprof record --capture-range cuda-profiler-api` on it then counts
exactly N steps of kernels, which gives the kernels per step scripts/gpu/check_attach.py expects.

With --nvtx each logged step runs inside an NVTX range `train_step` (torch.cuda.nvtx; the warm-up
makes no NVTX call), for checking what NVTX an attach can see.
"""
import argparse
import os
import time

import torch


def make_model():
    torch.manual_seed(0)
    layers = []
    for _ in range(4):
        layers += [torch.nn.Linear(1024, 1024), torch.nn.GELU()]
    model = torch.nn.Sequential(*layers, torch.nn.Linear(1024, 10)).cuda()
    return model, torch.optim.AdamW(model.parameters(), lr=1e-4)


def train_step(model, opt, x, y):
    opt.zero_grad(set_to_none=True)
    loss = torch.nn.functional.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    return loss


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--seconds", type=float, default=60.0)
    p.add_argument("--step-log", default=os.devnull)
    p.add_argument("--calibrate", type=int, default=0)
    p.add_argument("--nvtx", action="store_true")
    a = p.parse_args()
    rank = os.environ.get("LOCAL_RANK")
    if rank is not None:
        torch.cuda.set_device(int(rank))
        if a.step_log != os.devnull:
            a.step_log = f"{a.step_log}.{rank}"
    model, opt = make_model()
    x = torch.randn(256, 1024, device="cuda")
    y = torch.randint(0, 10, (256,), device="cuda")
    for _ in range(20):
        train_step(model, opt, x, y)
    torch.cuda.synchronize()
    print(f"ready pid={os.getpid()}", flush=True)
    end = time.monotonic() + a.seconds
    steps = 0
    with open(a.step_log, "w", buffering=1) as log:
        while steps < a.calibrate or (a.calibrate == 0 and time.monotonic() < end):
            if a.calibrate and steps == 0:
                torch.cuda.profiler.start()
            t0 = time.monotonic_ns()
            if a.nvtx:
                torch.cuda.nvtx.range_push("train_step")
            train_step(model, opt, x, y)
            torch.cuda.synchronize()
            if a.nvtx:
                torch.cuda.nvtx.range_pop()
            t1 = time.monotonic_ns()
            log.write(f"step {steps} {t0} {t1}\n")
            steps += 1
            if a.calibrate and steps == a.calibrate:
                torch.cuda.profiler.stop()
    print(f"steps {steps}", flush=True)


if __name__ == "__main__":
    main()
