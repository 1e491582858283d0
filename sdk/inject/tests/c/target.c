/* The injected program of tests/inject.rs, started before the injection.
 * `target sleep`: prints "ready", blocks in read(2) on stdin until the test writes "go\n", and
 *   exits 7; 5 if the read came back short (the system call was not restarted after the stop).
 * `target spin SECONDS`: prints "ready" and runs without system calls for SECONDS (time from the
 *   vDSO), checking a floating-point sum kept in registers at every step; exits 7, or 9 if a
 *   register was not put back. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int spin(double seconds) {
    double end = now() + seconds, a = 0.0, b = 0.0;
    unsigned long i;
    for (i = 0;; i++) {
        a += 1.5;
        b += 0.25;
        if (a != 1.5 * (double)(i + 1) || b * 6.0 != a) {
            fprintf(stderr, "register lost at step %lu\n", i);
            return 9;
        }
        if ((i & 0xfffff) == 0 && now() > end) {
            return 7;
        }
    }
}

int main(int argc, char **argv) {
    char buf[8] = {0};
    ssize_t n;
    if (argc < 2) {
        return 64;
    }
    printf("ready\n");
    fflush(stdout);
    if (strcmp(argv[1], "spin") == 0) {
        return spin(argc > 2 ? atof(argv[2]) : 1.0);
    }
    n = read(0, buf, 3);
    if (n != 3 || memcmp(buf, "go\n", 3) != 0) {
        fprintf(stderr, "read returned %zd\n", n);
        return 5;
    }
    return 7;
}
