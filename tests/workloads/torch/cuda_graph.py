"""PyTorch CUDA graph: a small MLP captured with `torch.cuda.CUDAGraph` in `capture_model` and
replayed from `replay_steps`.

usage: cuda_graph.py [--replays N]

Under `xpuprof --source cupti --sink folded` with `graph_stacks = "both"`, every replayed kernel
must sit under the replay (`at::cuda::CUDAGraph::replay`, and `replay_steps` with Python frames)
and, below `[recorded at]`, under the capture (`capture_model` with Python frames). Prints the
`EXPECT` line scripts/gpu/check_graph_stacks.py reads.
"""
import argparse

import torch
from torch import nn


def capture_model(model, static_x):
    # Warm up on a side stream first, as torch.cuda.graphs' documentation asks.
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            model(static_x)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        static_y = model(static_x)
    return graph, static_y


def replay_steps(graph, replays):
    for _ in range(replays):
        graph.replay()
    torch.cuda.synchronize()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--replays", type=int, default=50)
    args = ap.parse_args()
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(512, 2048), nn.GELU(), nn.Linear(2048, 512)).cuda().eval()
    static_x = torch.randn(64, 512, device="cuda")
    with torch.no_grad():
        graph, static_y = capture_model(model, static_x)
        replay_steps(graph, args.replays)
    assert torch.isfinite(static_y).all()
    print(
        "EXPECT kernels=any launchers=CUDAGraph::replay,replay_steps capture_launchers=capture_model "
        f"python_builders=1 replays={args.replays}"
    )


if __name__ == "__main__":
    main()
