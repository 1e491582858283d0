/*
 * A "CUDA program" on the test double libcuda.so.1 (libcuda_double.c), started without xpuprof:
 * plugins/cupti/tests/attach.rs attaches to it while it runs. It launches `step_kernel` from
 * train_step every 2 ms for SECONDS, then prints how many launches it made, how often CUPTI was
 * subscribed and finalized, and exits 3.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

int xpuprof_double_launch(const char *kernel);
unsigned xpuprof_double_finalized(void);
unsigned xpuprof_double_subscribed(void);

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

__attribute__((noinline)) void train_step(void) { xpuprof_double_launch("step_kernel"); }

int main(int argc, char **argv) {
    double end = now() + (argc > 1 ? atof(argv[1]) : 5.0);
    unsigned long launches = 0;
    printf("ready\n");
    fflush(stdout);
    while (now() < end) {
        train_step();
        launches++;
        usleep(2000);
    }
    printf("launches %lu subscribed %u finalized %u\n", launches, xpuprof_double_subscribed(),
           xpuprof_double_finalized());
    return 3;
}
