"""A Triton kernel whose hot loop is in a helper function inlined into it, for PC sampling's
inlined lines (issue 32): the samples' line (`# HOT` in `chain`) is code inlined into `kernel` at
the `# CALL` line, which nvdisasm -gi names as its call site; xpuprof's PC view should show
`pc_triton.py:<CALL>;pc_triton.py:<HOT>` below the kernel.

usage: pc_triton.py [launches]   (default 20)

Prints `PC_TRITON launches=... ok` when done.
"""
import sys

import torch
import triton
import triton.language as tl


@triton.jit
def chain(x, n):
    for _ in range(n):
        x = x * 0.999 + 0.0001  # HOT
    return x


@triton.jit
def kernel(out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = offs.to(tl.float32) * 0.001
    y = chain(x, n)  # CALL
    tl.store(out_ptr + offs, y)


def run(launches):
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    out = torch.empty(sms * 4 * 1024, device="cuda")
    for _ in range(launches):
        kernel[(sms * 4,)](out, 1 << 16, BLOCK=1024)
    torch.cuda.synchronize()
    return out


def main():
    launches = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    out = run(launches)
    print(f"PC_TRITON launches={launches} value={float(out[1]):.4f} ok", flush=True)


if __name__ == "__main__":
    main()
