// Launch-bound microbenchmark: N empty kernels from one thread; prints the launch loop's wall
// time (from the first launch to the end of the final synchronize), excluding CUDA start-up.
#include "common.h"
#include <algorithm>
#include <chrono>
#include <vector>
#include <cstring>
#include <ctime>
#include <sched.h>
#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

// Instructions retired by the calling thread (user and kernel), or -1 where the machine has no
// counter for it: unlike time, the count does not move with what else runs on the machine.
static int open_instruction_counter() {
  perf_event_attr a;
  std::memset(&a, 0, sizeof a);
  a.size = sizeof a;
  a.type = PERF_TYPE_HARDWARE;
  a.config = PERF_COUNT_HW_INSTRUCTIONS;
  a.disabled = 1;
  return static_cast<int>(syscall(SYS_perf_event_open, &a, 0, -1, -1, 0));
}

static double thread_cpu_seconds() {
  timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

__global__ void empty_kernel() {}

// The empty asm after the launch keeps it from being a tail call, so launch_empty stays on
// the stack (a tail call would hand its frame to the callee, for any unwinder).
NOINLINE void launch_empty() {
  empty_kernel<<<1, 1>>>();
  asm volatile("" ::: "memory");
}

int main(int argc, char** argv) {
  int n = arg_int(argc, argv, 1, 200000);
  CHECK(cudaFree(nullptr));
  for (int i = 0; i < 100; i++) launch_empty();  // warm-up: module load, first-launch costs
  CHECK(cudaDeviceSynchronize());
  // Also time batches of 10k launches: the median batch is robust to short disturbances (other
  // processes, the profiler's own threads) that move the total, and the fastest batch is the
  // cost of a launch with no disturbance at all.
  // BENCH_CPU=N pins this thread, and only it, to CPU N for the loop (threads started earlier,
  // CUPTI's and the profiler agent's, keep the process's CPU set): a launch loop that shares its
  // CPU with nothing, the same in every configuration.
  if (const char* cpu = std::getenv("BENCH_CPU"); cpu && *cpu) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(std::atoi(cpu), &set);
    if (sched_setaffinity(0, sizeof set, &set) != 0) std::perror("BENCH_CPU: sched_setaffinity");
  }
  const int batch = 10000;
  std::vector<double> per_launch;
  int counter = open_instruction_counter();
  if (counter >= 0) ioctl(counter, PERF_EVENT_IOC_ENABLE, 0);
  double cpu0 = thread_cpu_seconds();
  auto t0 = std::chrono::steady_clock::now();
  auto tb = t0;
  for (int i = 0; i < n; i++) {
    launch_empty();
    if ((i + 1) % batch == 0) {
      auto now = std::chrono::steady_clock::now();
      per_launch.push_back(std::chrono::duration<double>(now - tb).count() * 1e6 / batch);
      tb = now;
    }
  }
  double cpu1 = thread_cpu_seconds();
  long long instructions = -1;
  if (counter >= 0) {
    ioctl(counter, PERF_EVENT_IOC_DISABLE, 0);
    if (read(counter, &instructions, sizeof instructions) != sizeof instructions) instructions = -1;
    close(counter);
  }
  CHECK(cudaDeviceSynchronize());
  auto t1 = std::chrono::steady_clock::now();
  CHECK_LAUNCH();
  double s = std::chrono::duration<double>(t1 - t0).count();
  double med = 0, best = 0;
  if (!per_launch.empty()) {
    std::sort(per_launch.begin(), per_launch.end());
    med = per_launch[per_launch.size() / 2];
    best = per_launch.front();
  }
  std::printf(
      "BENCH launches=%d seconds=%.6f us_per_launch=%.4f batch_median_us=%.4f batch_min_us=%.4f "
      "thread_cpu_us=%.4f instructions_per_launch=%.1f\n",
      n, s, s * 1e6 / n, med, best, (cpu1 - cpu0) * 1e6 / n, instructions < 0 ? -1.0 : double(instructions) / n);
  std::printf("EXPECT kernels=%d launchers=launch_empty\n", n + 100);
  return 0;
}
