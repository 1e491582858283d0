"""A small PyTorch program for the cupti source: a few matmuls, elementwise ops and a softmax on
the GPU. Prints the EXPECT line scripts/gpu/check_profile.py reads (the kernel count depends on
PyTorch's kernel choices, so only "some kernels, all joined" is expected)."""
import torch


def step(x, w):
    return torch.softmax((x @ w).relu() + 1.0, dim=-1)


def main():
    torch.manual_seed(0)
    x = torch.randn(256, 512, device="cuda")
    w = torch.randn(512, 512, device="cuda")
    for _ in range(20):
        y = step(x, w)
    torch.cuda.synchronize()
    print(f"checksum {float(y.sum()):.3f}")
    # libtorch and Python are built without frame pointers, so launch stacks end inside the
    # PyTorch library that launched (at::native, c10, cuBLAS, the softmax dispatcher).
    print("EXPECT kernels=any launchers=at::,c10::,cublas,softmax")


if __name__ == "__main__":
    main()
