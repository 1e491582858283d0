"""A pure-Python workload with known call paths for the eBPF source's tests (Python frames in CPU
samples). `calls.py MODE ROUNDS [N]`:

- cpu: main -> outer_a -> hot_three and main -> outer_b -> hot_one, hot_three doing three times
  the work of hot_one (the same loop, whose cost is linear in its count: small-int arithmetic);
- sleep: main -> wait_outer -> sleeper blocks 20 ms per round (off-CPU time);
- launch: main -> launcher calls testLaunchKernel of liblaunchtest.so ($LAUNCH_LIB) once per
  round through ctypes (eBPF launch probes), then waits 0.3 s (`launch ROUNDS exit`: exits at once);
- mixed: as cpu, while a thread that never runs Python spins in C (libnativethread.so, path in
  $NATIVE_THREAD_LIB) and a child process without Python (argv after N) burns CPU.

With $WORKLOAD_RESULT set, cpu mode writes its wall and CPU nanoseconds there (benchmarks).

Lines marked `# CALL name` are where the tests expect the caller's frame to point.
"""
import ctypes
import os
import subprocess
import sys
import time

MASK = (1 << 31) - 1


def hot_three(n):
    x = 1
    for _ in range(3 * n):
        x = (x * 1103515245 + 12345) & MASK
    return x


def hot_one(n):
    x = 1
    for _ in range(n):
        x = (x * 1103515245 + 12345) & MASK
    return x


def outer_a(n):
    return hot_three(n)  # CALL hot_three


def outer_b(n):
    return hot_one(n)  # CALL hot_one


def sleeper(seconds):
    time.sleep(seconds)  # CALL sleep


def wait_outer(seconds):
    sleeper(seconds)  # CALL sleeper


def launcher(lib, i):
    lib.testLaunchKernel(i)  # CALL testLaunchKernel


def cpu(rounds, n):
    for _ in range(rounds):
        outer_a(n)  # CALL outer_a
        outer_b(n)  # CALL outer_b


def main(argv):
    mode, rounds = argv[1], int(argv[2])
    n = int(argv[3]) if len(argv) > 3 and argv[3].isdigit() else 200_000
    if mode == "cpu":
        wall, cpu_time = time.perf_counter_ns(), time.process_time_ns()
        cpu(rounds, n)  # CALL cpu
        if "WORKLOAD_RESULT" in os.environ:
            with open(os.environ["WORKLOAD_RESULT"], "w") as f:
                f.write(f"{time.perf_counter_ns() - wall} {time.process_time_ns() - cpu_time}\n")
    elif mode == "sleep":
        for _ in range(rounds):
            wait_outer(0.02)  # CALL wait_outer
    elif mode == "launch":
        lib = ctypes.CDLL(os.environ["LAUNCH_LIB"])
        time.sleep(0.5)  # the profiler probes the library once its maps scan sees it mapped
        for i in range(rounds):
            launcher(lib, i)  # CALL launcher
        # The host names Python frames by reading the process's code objects: a sample or launch
        # it handles after the exit keeps its frames unnamed ("exit": leave at once).
        if argv[3:] != ["exit"]:
            time.sleep(0.3)
    elif mode == "mixed":
        lib = ctypes.CDLL(os.environ["NATIVE_THREAD_LIB"])
        lib.native_thread_start.argtypes = [ctypes.c_double]
        lib.native_thread_start(ctypes.c_double(0.5))
        child = subprocess.Popen(argv[4:])
        cpu(rounds, n)  # CALL cpu-mixed
        lib.native_thread_join()
        child.wait()
    else:
        sys.exit(f"unknown mode {mode!r}: cpu, sleep, launch or mixed")


if __name__ == "__main__":
    main(sys.argv)  # CALL main
