"""PC sampling's cost in one process (issue 32): ResNet-18 training (real_bench.py's workload:
torchvision ResNet-18, batch 32, forward, backward, SGD) in adjacent windows, paused and collecting,
each collecting window's PC sampling chosen through the cupti agent (`xpuprof_cupti_pc_sampling`).

usage: pc_cost.py ROUNDS STEPS SETTING...
  SETTING  nopc: collecting without PC sampling; N: every 2^N cycles (5 to 31); default:
           CUPTI's default period (once the agent has read it back: give N where the agent's
           own pc_sampling_period is not 0)
  Every round runs, for each setting in an order rotated per round, one paused and one
  collecting window of STEPS timed steps, the two in alternating order (rounds stop early once
  PC_COST_SECONDS have passed, so a time limit never cuts the results); each window first runs
  SETTLE steps (PC_COST_SETTLE, 3) untimed, so the switch itself (CUPTI enabling sampling on the
  context) is not timed, as in a run that leaves sampling on. A setting's cost is the median of
  its rounds' collecting/paused ratios; its samples per second are the samples the agent sent
  for its windows over their steps' time (at the timed steps' pace).
  First the concurrency probe: two one-thread spin kernels (torch.cuda._sleep) on two streams
  against one, collecting with PC sampling at the first sampling setting, collecting without
  it, and paused: about 1.0 when the two kernels overlap, about 2.0 when they run one after the
  other.

Run under `xpuprof --source cupti -c pc.toml` with `pc_sampling = true` (the agent must sample
for the settings to differ). Prints a `PCPAIR` line per pair of windows as it goes (a run cut
short still tells), one `PCCOST setting=...` line per setting and one `PCCONC` line per state.
"""
import ctypes
import os
import statistics
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from real_bench import resnet, timed_window, train_step  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "plugins", "cupti", "tests", "workloads"))
from transformer_bench import agent_capture  # noqa: E402


def agent_function(name, restype):
    """The agent's exported `name`, through the path the host put in CUDA_INJECTION64_PATH."""
    lib = ctypes.CDLL(os.environ["CUDA_INJECTION64_PATH"])
    f = getattr(lib, name)
    f.restype = restype
    return f


def code(setting):
    """`xpuprof_cupti_pc_sampling`'s argument for a setting."""
    if setting == "nopc":
        return -1
    if setting == "default":
        return 0
    n = int(setting)
    if not 5 <= n <= 31:
        sys.exit(f"pc_cost: period {n} is outside CUPTI's 5..31 (2^N cycles)")
    return n


class Agent:
    def __init__(self):
        self.capture = agent_capture()
        if self.capture is None:
            sys.exit("pc_cost: the cupti agent is not loaded: run under `xpuprof --source cupti -c pc.toml`")
        self.choose = agent_function("xpuprof_cupti_pc_sampling", ctypes.c_int)
        self.choose.argtypes = [ctypes.c_int]
        self.samples = agent_function("xpuprof_cupti_pc_samples", ctypes.c_uint64)

    def switch(self, on):
        if self.capture(1 if on else 0) < 0:
            sys.exit("pc_cost: xpuprof_cupti_capture failed")

    def set(self, setting):
        if self.choose(code(setting)) != 0:
            sys.exit(f"pc_cost: xpuprof_cupti_pc_sampling({code(setting)}) refused: is pc_sampling = true?")


def window(agent, step, steps, settle, on):
    """ms per timed step, samples sent and seconds the window collected."""
    before = agent.samples()
    agent.switch(on)
    t = time.perf_counter()
    for _ in range(settle):
        step()
    ms = timed_window(step, lambda: None, steps)
    took = time.perf_counter() - t
    agent.switch(False)
    return ms, agent.samples() - before, took


def rounds(agent, step, settings, n, steps, settle, deadline):
    got = {s: {"ratios": [], "on": [], "off": [], "samples": 0, "seconds": 0.0} for s in settings}
    for r in range(n):
        order = settings[r % len(settings):] + settings[:r % len(settings)]
        for j, s in enumerate(order):
            agent.set(s)
            if (r + j) % 2 == 0:
                off = window(agent, step, steps, settle, False)
                on = window(agent, step, steps, settle, True)
            else:
                on = window(agent, step, steps, settle, True)
                off = window(agent, step, steps, settle, False)
            # The samples' time: the window's steps at the timed steps' pace (the first steps after
            # sampling is enabled take longer on CUPTI's setup, not on sampling).
            busy = (settle + steps) * on[0] / 1e3
            print(f"PCPAIR round={r} setting={s} on_ms={on[0]:.4f} off_ms={off[0]:.4f} samples={on[1]}"
                  f" seconds={busy:.4f}", flush=True)
            g = got[s]
            g["ratios"].append(on[0] / off[0])
            g["on"].append(on[0])
            g["off"].append(off[0])
            g["samples"] += on[1]
            g["seconds"] += busy
        if time.monotonic() > deadline:
            print(f"PCSTOP after {r + 1} rounds: PC_COST_SECONDS passed", flush=True)
            break
    return got


def spin_overlap(cycles, reps=3):
    """Two one-thread spin kernels on two streams against one: their wall-time ratio (median)."""
    a, b = torch.cuda.Stream(), torch.cuda.Stream()
    torch.cuda._sleep(1000)  # the window's first launch (CUPTI sets sampling up there), untimed
    torch.cuda.synchronize()
    out = []
    for _ in range(reps):
        torch.cuda.synchronize()
        t = time.perf_counter()
        with torch.cuda.stream(a):
            torch.cuda._sleep(cycles)
        torch.cuda.synchronize()
        one = time.perf_counter() - t
        t = time.perf_counter()
        with torch.cuda.stream(a):
            torch.cuda._sleep(cycles)
        with torch.cuda.stream(b):
            torch.cuda._sleep(cycles)
        torch.cuda.synchronize()
        out.append((time.perf_counter() - t) / one)
    return statistics.median(out)


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    n, steps, settings = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3:]
    for s in settings:
        code(s)
    settle = int(os.environ.get("PC_COST_SETTLE", "3"))
    agent = Agent()
    step = train_step(resnet("cuda"))
    agent.switch(False)
    for _ in range(10):  # warm-up (paused): cuDNN/cuBLAS heuristics, allocator
        step()
    torch.cuda.synchronize()
    sampled = next((s for s in settings if s != "nopc"), None)
    cycles = int(os.environ.get("PC_COST_SPIN_CYCLES", "40000000"))
    for state in ([sampled] if sampled else []) + ["nopc", "paused"]:
        if state != "paused":
            agent.set(state)
            agent.switch(True)
        ratio = spin_overlap(cycles)
        agent.switch(False)
        print(f"PCCONC state={state} two_streams_over_one={ratio:.3f}", flush=True)
    deadline = time.monotonic() + float(os.environ.get("PC_COST_SECONDS", "1e9"))
    got = rounds(agent, step, settings, n, steps, settle, deadline)
    for s in settings:
        g = got[s]
        rate = g["samples"] / g["seconds"] if g["seconds"] else 0.0
        print(f"PCCOST setting={s} rounds={len(g['ratios'])} steps={steps} ratio_median={statistics.median(g['ratios']):.4f}"
              f" on_ms_median={statistics.median(g['on']):.4f} off_ms_median={statistics.median(g['off']):.4f}"
              f" samples={g['samples']} samples_per_s={rate:.0f}"
              f" ratios={','.join(f'{x:.3f}' for x in g['ratios'])}", flush=True)
    agent.switch(True)


if __name__ == "__main__":
    main()
