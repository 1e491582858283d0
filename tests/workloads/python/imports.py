"""A Python workload that spends its CPU time deep inside nested imports, for the eBPF source's
tests of where Python frames go in a native stack (the shape of `import torch`).
`imports.py DEPTH ROUNDS N`:

Writes a chain of DEPTH modules into a temporary directory: `deep_0` imports `deep_1`, ...,
`deep_{DEPTH-1}` imports nothing and, while it is being imported, calls `burn(N)` (in this
file) through C code: `burn` is the key function of `sorted`, so between the eval loop running
the module and the one running `burn` sit a builtin and the sort's C frames. Each of the ROUNDS
removes the chain from `sys.modules` and imports `deep_0` again through `importlib`
(`import_module`), so every round runs the import machinery (`_find_and_load`,
`_load_unlocked`, `exec_module`, ...: about six Python frames per level, separated by C calls
such as `builtins.__import__` and `exec`). With DEPTH 12 a sample holds more than 80 Python
frames in 26 runs of the eval loop.

Each module keeps its own code object (`CODE`) and every round's modules stay referenced, so no
code object is freed while the program runs: a freed code object's address may be reused by the
next round's module, and the frames here are about where Python frames go, not about that.

Lines marked `# CALL name` are where the tests expect the caller's frame to point.
"""
import importlib
import os
import sys
import tempfile

MASK = (1 << 31) - 1


def burn(n):
    total, i = 0, 0
    while i < n:
        total = (total + (i ^ (i >> 3))) & MASK
        i += 1
    return total


def leaf(n):
    return sorted([n], key=burn)  # CALL burn


def write_chain(root, depth):
    for i in range(depth):
        with open(os.path.join(root, f"deep_{i}.py"), "w") as f:
            f.write("import sys\nCODE = sys._getframe().f_code\n")
            if i + 1 < depth:
                f.write(f"import deep_{i + 1}\n")
            else:
                f.write("import imports\n")
                f.write("imports.leaf(imports.N)\n")


def run(depth, rounds):
    kept = []
    for _ in range(rounds):
        kept.extend(sys.modules.pop(f"deep_{i}", None) for i in range(depth))
        importlib.import_module("deep_0")  # CALL import_module


def main(argv):
    global N
    depth, rounds, N = int(argv[1]), int(argv[2]), int(argv[3])
    # The chain imports this file as `imports` (not `__main__`) to reach `leaf` and `N`.
    sys.modules["imports"] = sys.modules[__name__]
    with tempfile.TemporaryDirectory() as root:
        write_chain(root, depth)
        sys.path.insert(0, root)
        run(depth, rounds)  # CALL run


N = 0
if __name__ == "__main__":
    main(sys.argv)  # CALL main
