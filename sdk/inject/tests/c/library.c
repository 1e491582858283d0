/* The library tests/inject.rs loads into a running program: its constructor and its exported
 * function each append a line to a file in $INJECT_TEST_DIR (set in the target's environment). */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static void put(const char *name, const char *text) {
    const char *dir = getenv("INJECT_TEST_DIR");
    char path[4096];
    FILE *f;
    if (dir == NULL) {
        return;
    }
    snprintf(path, sizeof path, "%s/%s", dir, name);
    f = fopen(path, "a");
    if (f != NULL) {
        fprintf(f, "%s\n", text);
        fclose(f);
    }
}

__attribute__((constructor)) static void loaded(void) {
    char line[64];
    snprintf(line, sizeof line, "pid %d", (int)getpid());
    put("constructor", line);
}

long kick(const char *text, long n) {
    char line[256];
    snprintf(line, sizeof line, "%s %ld", text, n);
    put("kick", line);
    return n * 2;
}
