#!/usr/bin/env python3
"""Checks a profile of plugins/cupti/tests/workloads/frameless.cu (host code built without frame pointers).

Usage: check_stacks.py PROFILE_DIR PROGRAM_STDOUT

Asserted, as a user would see it in profile.folded: every frameless_kernel sits under the full
launch path main;level1;level2;level3;level4;launch_kernels, rooted at the thread's start
(_start), and the count of kernels is what the program printed. Prints one PASS/FAIL line last.
"""
import re
import sys

PATH = "main;level1;level2;level3;level4;launch_kernels;"


def names(stack):
    """The stack with C++ parameter lists dropped (`level1(float*, int)` -> `level1`): the
    program is CUDA C++, so its frames are demangled with their signatures."""
    return ";".join(re.sub(r"\(.*\)( const)?$", "", f) for f in stack.split(";"))


def main():
    out, stdout = sys.argv[1], sys.argv[2]
    expect = {}
    for line in open(stdout):
        if line.startswith("EXPECT "):
            expect = dict(kv.split("=", 1) for kv in line.split()[1:])
    want = int(expect.get("kernels", "0"))
    full = other = 0
    bad = []
    for line in open(f"{out}/profile.folded"):
        stack, _, weight = line.rstrip("\n").rpartition(" ")
        if "[GPU_Kernel]frameless_kernel" not in stack:
            continue
        w = int(weight)
        if PATH in names(stack) and stack.startswith("_start;"):
            full += w
        else:
            other += w
            bad.append(stack[:400])
    total = full + other
    for b in bad[:3]:
        print(f"not under the full path: {b}")
    share = 100.0 * full / total if total else 0.0
    if total == 0 or other:
        print(f"FAIL frameless kernels under the full path: {share:.1f}% of {total} µs (expected 100%, {want} kernels)")
        return 1
    print(f"PASS frameless kernels under _start;...;{PATH.rstrip(';')}: 100% of {total} µs ({want} kernels launched)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
