"""Launch-stack reuse on a GPU (issue #29): torchvision ResNet-18 training (forward, backward,
SGD; batch 32) in ONE process under the cupti agent, in adjacent windows paused / collecting with
every launch captured in full / with the native walk reused / with native and Python reused (the
order rotating), then a check window (every launch captured both ways, launches whose stacks
differ counted). The windows are plugins/cupti/tests/workloads/reuse_windows.py's.

usage: reuse_resnet.py [ROUNDS] [STEPS_PER_WINDOW] [CHECK_STEPS]
Run with the cupti agent in CUDA_INJECTION64_PATH (directly or under `xpuprof record`).
"""
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "plugins", "cupti", "tests", "workloads"))
from real_bench import resnet, train_step  # noqa: E402
import reuse_windows  # noqa: E402


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 8
    per = int(sys.argv[2]) if len(sys.argv) > 2 else 12
    check_steps = int(sys.argv[3]) if len(sys.argv) > 3 else 10
    lib = reuse_windows.agent()
    step = train_step(resnet(torch.device("cuda")))
    for _ in range(10):  # warm-up: cuDNN heuristics, allocator
        step()
    torch.cuda.synchronize()
    reuse_windows.report("resnet", lib, step, torch.cuda.synchronize, rounds, per, check_steps)


if __name__ == "__main__":
    main()
