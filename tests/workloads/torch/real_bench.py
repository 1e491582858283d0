"""Real-workload overhead benchmark (third-party model code, random weights, no downloads).

usage: real_bench.py MODE WORKLOAD [STEPS]
  MODE: ab        xpuprof's cupti agent paused and collecting in alternate adjacent windows of one
                  process (the method of transformer_bench.py's `ab`; without the agent both
                  windows run unprofiled: the method's own spread)
        residual  CUPTI attached and idle vs detached, in adjacent windows (run without the agent)
        range     the whole profiler dormant and collecting in alternate adjacent windows, switched
                  by the program's own cudaProfilerStart/Stop (torch.cuda.profiler.start/stop): run
                  under `xpuprof --capture-range cuda-profiler-api --capture-range-end repeat`, so
                  every source (eBPF sampling too, which `ab`'s pause leaves on in both windows) is
                  off outside a window; RANGE_SETTLE_S (0.3) of untimed steps after each switch let
                  the host's window follow; without xpuprof: the method's own spread
        levels    the cupti agent's launch path switched while the process runs, in adjacent windows
                  of STEPS steps, the order rotating per round (LEVEL_ROUNDS, 8): paused, collecting
                  with launch entries only (the path of launch_stacks = "off",
                  xpuprof_launch_detail(0)), native frames only (python = "off", detail 1), in full
                  (the default, detail 2), plus one window per LEVEL_EXTRA item `name=EXPORT:VALUE`
                  (the agent's int EXPORT(int) called with VALUE before the window and given its
                  answer back after: full capture with that switch); prints each state against
                  paused and `stacks_add` (full - entries) / paused, medians of the rounds
        plain | profiler | profiler_stack   STEPS timed steps after a warm-up, unprofiled or inside
                  torch.profiler (CPU+CUDA activities, with_stack for profiler_stack): the
                  cross-process comparison
  WORKLOAD: resnet  torchvision ResNet-18 training step (forward, backward, SGD), batch 32, 224x224
            qwen    HF transformers Qwen3-shaped decoder (Qwen3-0.6B's config: 28 layers), batch 1,
                    one decoded token per step with the KV cache, bf16
            ddp     ResNet-18 training under DistributedDataParallel over NCCL, one process per GPU
                    (start with torchrun); every rank runs the same windows, rank 0 prints

Prints `REAL mode=... workload=... ...` lines whose fields run-all.sh's `real` part summarises.
"""
import ctypes
import os
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "plugins", "cupti", "tests", "workloads"))
from transformer_bench import agent_capture, alternate, find_cupti  # noqa: E402
import level_windows  # noqa: E402


def resnet(device):
    import torchvision
    torch.manual_seed(0)
    model = torchvision.models.resnet18().to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    x = torch.randn(32, 3, 224, 224, device=device)
    y = torch.randint(0, 1000, (32,), device=device)
    loss_fn = torch.nn.CrossEntropyLoss()
    return model, opt, x, y, loss_fn


def train_step(parts):
    model, opt, x, y, loss_fn = parts

    def step():
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()

    return step


def qwen(device):
    from transformers import Qwen3Config, Qwen3ForCausalLM
    from transformers.cache_utils import DynamicCache
    torch.manual_seed(0)
    cfg = Qwen3Config(hidden_size=1024, intermediate_size=3072, num_hidden_layers=28, num_attention_heads=16,
                      num_key_value_heads=8, head_dim=128, vocab_size=151936, max_position_embeddings=4096,
                      tie_word_embeddings=True)
    model = Qwen3ForCausalLM(cfg).to(device=device, dtype=torch.bfloat16).eval()
    prompt = torch.randint(0, cfg.vocab_size, (1, 16), device=device)
    state = {}

    def reset():
        state["cache"] = DynamicCache()
        out = model(prompt, past_key_values=state["cache"], use_cache=True)
        state["token"] = out.logits[:, -1:].argmax(-1)
        state["n"] = 0

    def step():
        if state["n"] >= 256:  # a bounded context: every window decodes the same lengths
            reset()
        out = model(state["token"], past_key_values=state["cache"], use_cache=True)
        state["token"] = out.logits[:, -1:].argmax(-1)
        state["n"] += 1

    with torch.inference_mode():
        reset()
    return step


def build(workload):
    if workload == "ddp":
        import torch.distributed as dist
        from torch.nn.parallel import DistributedDataParallel
        rank = int(os.environ["LOCAL_RANK"])
        torch.cuda.set_device(rank)
        dist.init_process_group("nccl", device_id=torch.device("cuda", rank))
        model, opt, x, y, loss_fn = resnet(torch.device("cuda", rank))
        ddp = DistributedDataParallel(model, device_ids=[rank])
        opt = torch.optim.SGD(ddp.parameters(), lr=0.01, momentum=0.9)
        return train_step((ddp, opt, x, y, loss_fn)), dist.barrier, rank
    if workload == "resnet":
        return train_step(resnet("cuda")), lambda: None, 0
    if workload == "qwen":
        return qwen("cuda"), lambda: None, 0
    sys.exit(f"real_bench: unknown workload {workload!r}: resnet, qwen or ddp")


def timed_window(step, sync, n):
    """Milliseconds per step of `n` steps from a synchronized start (all ranks) to a final
    synchronize."""
    sync()
    torch.cuda.synchronize()
    t = time.perf_counter()
    for _ in range(n):
        step()
    torch.cuda.synchronize()
    took = (time.perf_counter() - t) * 1e3 / n
    sync()
    return took


def ab(step, sync, steps, pairs):
    capture = agent_capture()
    per = max(1, steps // (2 * pairs))

    def window(on):
        if capture is not None and capture(1 if on else 0) < 0:
            sys.exit("xpuprof_cupti_capture failed")
        return timed_window(step, sync, per)

    pairs_out = list(alternate(pairs, window))
    if capture is not None:
        capture(1)
    return [on / off for on, off, _ in pairs_out], [off for _, off, _ in pairs_out], capture is not None


def ranged(step, sync, steps, pairs):
    """`ab` with the profiler's capture windows as the switch: cudaProfilerStart opens a window
    for every source, cudaProfilerStop closes it. The switch is asynchronous for the host's own
    sources (the agent tells the host, the host opens its samplers), so each window first runs
    untimed steps for RANGE_SETTLE_S seconds."""
    per = max(1, steps // (2 * pairs))
    settle = float(os.environ.get("RANGE_SETTLE_S", "0.3"))

    def window(on):
        sync()
        torch.cuda.synchronize()
        (torch.cuda.profiler.start if on else torch.cuda.profiler.stop)()
        end = time.perf_counter() + settle
        while time.perf_counter() < end:
            step()
        return timed_window(step, sync, per)

    torch.cuda.profiler.stop()
    pairs_out = list(alternate(pairs, window))
    torch.cuda.profiler.stop()
    return [on / off for on, off, _ in pairs_out], [off for _, off, _ in pairs_out]


def residual(step, sync, steps, pairs):
    lib = ctypes.CDLL(find_cupti())
    cb_type = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int, ctypes.c_uint, ctypes.c_void_p)
    callback = cb_type(lambda *a: None)  # never called: nothing is enabled
    sub = ctypes.c_void_p()
    per = max(1, steps // (2 * pairs))

    def window(attached):
        if attached and lib.cuptiSubscribe(ctypes.byref(sub), callback, None) != 0:
            sys.exit("residual: cuptiSubscribe failed")
        took = timed_window(step, sync, per)
        if attached and (lib.cuptiUnsubscribe(sub) != 0 or lib.cuptiFinalize() != 0):
            sys.exit("residual: detaching CUPTI failed")
        return took

    return [on / off for on, off, _ in alternate(pairs, window)]


def fmt(values):
    return ",".join(f"{v:.3f}" for v in values)


def main():
    mode, workload = sys.argv[1], sys.argv[2]
    steps = int(sys.argv[3]) if len(sys.argv) > 3 else 640
    step, sync, rank = build(workload)
    grad = contextlib_for(workload)
    with grad:
        for _ in range(10):  # warm-up: cuDNN/cuBLAS heuristics, allocator, NCCL communicators
            step()
        torch.cuda.synchronize()
        pairs = int(os.environ.get("AB_PAIRS", "16"))
        head = f"REAL mode={mode} workload={workload} steps={steps}"
        if mode == "ab":
            ratios, off, agent = ab(step, sync, steps, pairs)
            r, o = sorted(ratios), sorted(off)
            line = (f"{head} pairs={pairs} agent={int(agent)} off_ms_median={o[len(o) // 2]:.4f}"
                    f" ratio_median={r[len(r) // 2]:.4f} ratios={fmt(ratios)}")
        elif mode == "levels":
            def synced():
                sync()
                torch.cuda.synchronize()

            names, ms = level_windows.levels(step, synced, steps, int(os.environ.get("LEVEL_ROUNDS", "8")))
            line = level_windows.line(head, names, ms)
        elif mode == "range":
            ratios, off = ranged(step, sync, steps, pairs)
            r, o = sorted(ratios), sorted(off)
            line = (f"{head} pairs={pairs} off_ms_median={o[len(o) // 2]:.4f}"
                    f" ratio_median={r[len(r) // 2]:.4f} ratios={fmt(ratios)}")
        elif mode == "residual":
            r = sorted(residual(step, sync, steps, pairs))
            line = f"{head} pairs={pairs} ratio_median={r[len(r) // 2]:.4f} ratios={fmt(r)}"
        elif mode in ("plain", "profiler", "profiler_stack"):
            if mode == "plain":
                ms = timed_window(step, sync, steps)
            else:
                acts = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
                with torch.profiler.profile(activities=acts, with_stack=(mode == "profiler_stack")):
                    for _ in range(5):
                        step()
                    ms = timed_window(step, sync, steps)
            line = f"{head} ms_per_step={ms:.4f}"
        else:
            sys.exit(f"real_bench: unknown mode {mode!r}")
    if rank == 0:
        print(line, flush=True)
    if workload == "ddp":
        torch.distributed.destroy_process_group()


def contextlib_for(workload):
    """Decoding runs under inference_mode; training needs autograd."""
    import contextlib
    return torch.inference_mode() if workload == "qwen" else contextlib.nullcontext()


if __name__ == "__main__":
    main()
