"""A PyTorch training loop for `xpuprof attach` (issue 25), started without xpuprof.

usage: attach_train.py --seconds S --step-log FILE [--calibrate N] [--nvtx] [--counters K]
                       [--blocking-sync]

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

With --counters K it counts its own work (tests/workloads/torch/step_counters.py: perf counters on
every thread of the process, threads started later included) and appends, after every K logged
steps, `counters I0 I1 T IU IK TASK CTX AGENT STATE` to FILE: steps I0..I1-1 (ending at T,
CLOCK_MONOTONIC ns) took IU user-mode and IK kernel-mode instructions (-1 without hardware
counters), TASK ns of CPU time and CTX context switches in all threads, AGENT ns of it in threads
named xpuprof-* (an attached agent's); STATE is the agent's `xpuprof_cupti_state()` at the
block's end (0 CUPTI detached, 1 paused, 2 collecting; -2 no agent in the process: looked up in
/proc/self/maps once its threads appear, not before, so the unprofiled blocks do no extra work). scripts/gpu/check_attach_long.py compares them before an
attach, during it and after the detach. --blocking-sync makes waits for the GPU sleep
(CU_CTX_SCHED_BLOCKING_SYNC) so the instructions do not depend on GPU time.
"""
import argparse
import os
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "..",
                                "tests", "workloads", "torch"))


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


AGENT = []


def agent_state(present):
    """The attached agent's xpuprof_cupti_state(), -2 while it is not in the process."""
    if not AGENT and present:
        import ctypes
        with open("/proc/self/maps") as f:
            paths = {line.split()[-1] for line in f if "libxpuprof_cupti_agent" in line}
        for path in paths:
            AGENT.append(ctypes.CDLL(path).xpuprof_cupti_state)
    return AGENT[0]() if AGENT else -2


def count_block(log, counters, block, steps, t1):
    """Writes the `counters` line of steps block[0]..steps-1 and starts the next block."""
    i0, c0, task0 = block
    c1, task1 = counters.read(), counters.per_thread("task_ns")
    names = {}
    for tid in task1:
        try:
            with open(f"/proc/self/task/{tid}/comm") as f:
                names[tid] = f.read().strip()
        except OSError:
            pass
    agent = sum(v - task0.get(t, 0) for t, v in task1.items() if names.get(t, "").startswith("xpuprof"))
    state = agent_state(any(n.startswith("xpuprof") for n in names.values()))
    d = {e: c1.get(e, -1) - c0.get(e, 0) if e in c1 else -1 for e in ("instr_u", "instr_k", "task_ns", "ctx")}
    log.write(f"counters {i0} {steps} {t1} {d['instr_u']} {d['instr_k']} {d['task_ns']} {d['ctx']} {agent} {state}\n")
    counters.refresh()  # threads started meanwhile (an attached agent's) count from the next block
    return steps, counters.read(), counters.per_thread("task_ns")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--seconds", type=float, default=60.0)
    p.add_argument("--step-log", default=os.devnull)
    p.add_argument("--calibrate", type=int, default=0)
    p.add_argument("--nvtx", action="store_true")
    p.add_argument("--counters", type=int, default=0)
    p.add_argument("--blocking-sync", action="store_true")
    a = p.parse_args()
    if a.counters or a.blocking_sync:
        import step_counters
    if a.blocking_sync:
        why = step_counters.blocking_sync(int(os.environ.get("LOCAL_RANK", "0")))
        print(f"sync {'blocking' if why is None else 'default: ' + why}", flush=True)
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
    counters = step_counters.Counters() if a.counters else None
    if counters is not None:
        print(f"counters {','.join(counters.events)} missing {counters.missing or 'none'}", flush=True)
    print(f"ready pid={os.getpid()}", flush=True)
    end = time.monotonic() + a.seconds
    steps = 0
    with open(a.step_log, "w", buffering=1) as log:
        block = (0, counters.read(), counters.per_thread("task_ns")) if counters is not None else None
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
            if counters is not None and steps - block[0] == a.counters:
                block = count_block(log, counters, block, steps, t1)
            if a.calibrate and steps == a.calibrate:
                torch.cuda.profiler.stop()
    print(f"steps {steps}", flush=True)


if __name__ == "__main__":
    main()
