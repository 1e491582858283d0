/*
 * A "CUDA program" on the test double libcuda.so.1 (libcuda_double.c), for
 * plugins/cupti/tests/cupti/attach.rs and windows.rs.
 *
 * `app SECONDS`: launches `step_kernel` from train_step every 2 ms for SECONDS (xpuprof attaches
 *   to it while it runs, or opens windows in it).
 * `app markers`: launches 5 `outside_kernel`, then 7 `inside_kernel` between cuProfilerStart and
 *   cuProfilerStop, 3 `outside_kernel`, and 4 more `inside_kernel` in a second range.
 * `app nvtx`: the same with the NVTX range "step" (pushed and popped) instead, with a nested
 *   range of another name inside the first one.
 * Each mode runs cuInit first (and its injection under xpuprof record; `app SECONDS noinit` does
 * not: the process maps the driver without having initialised CUDA; `app SECONDS late` does after
 * a second, as a framework's import delays it), then prints how many launches it made and how
 * often CUPTI was subscribed and finalized, and exits 3 (after the driver's teardown,
 * xpuprof_double_exit, where the double's CUPTI hands over the device record it held).
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int xpuprof_double_init(void);
int xpuprof_double_launch(const char *kernel);
void xpuprof_double_profiler(int start);
void xpuprof_double_nvtx(const char *message);
unsigned xpuprof_double_finalized(void);
unsigned xpuprof_double_subscribed(void);
void xpuprof_double_exit(void);

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

__attribute__((noinline)) void train_step(void) { xpuprof_double_launch("step_kernel"); }

static unsigned long launch(const char *kernel, int n) {
    int i;
    for (i = 0; i < n; i++) {
        xpuprof_double_launch(kernel);
    }
    return (unsigned long)n;
}

/* A range of `inside` launches, opened and closed by cuProfilerStart/Stop or NVTX "step". */
static unsigned long range(int nvtx, int inside, int nested) {
    unsigned long n = 0;
    if (nvtx) {
        xpuprof_double_nvtx("step");
    } else {
        xpuprof_double_profiler(1);
    }
    if (nested) {
        xpuprof_double_nvtx("inner");
        n += launch("inside_kernel", 2);
        xpuprof_double_nvtx(NULL);
        inside -= 2;
    }
    n += launch("inside_kernel", inside);
    if (nvtx) {
        xpuprof_double_nvtx(NULL);
    } else {
        xpuprof_double_profiler(0);
    }
    return n;
}

int main(int argc, char **argv) {
    unsigned long launches = 0;
    const char *mode = argc > 1 ? argv[1] : "5";
    if (argc > 2 && strcmp(argv[2], "late") == 0) {
        usleep(1000000);
    }
    if (argc < 3 || strcmp(argv[2], "noinit") != 0) {
        xpuprof_double_init();
    }
    printf("ready\n");
    fflush(stdout);
    if (strcmp(mode, "markers") == 0 || strcmp(mode, "nvtx") == 0) {
        int nvtx = strcmp(mode, "nvtx") == 0;
        launches += launch("outside_kernel", 5);
        launches += range(nvtx, 7, nvtx);
        launches += launch("outside_kernel", 3);
        launches += range(nvtx, 4, 0);
    } else {
        double end = now() + atof(mode);
        while (now() < end) {
            train_step();
            launches++;
            usleep(2000);
        }
    }
    xpuprof_double_exit();
    printf("launches %lu subscribed %u finalized %u\n", launches, xpuprof_double_subscribed(),
           xpuprof_double_finalized());
    return 3;
}
