/* Another tracer for tests/inject.rs: seizes the process given as its argument (without stopping
 * it), prints "seized", and holds it until its stdin closes. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/ptrace.h>
#include <unistd.h>

int main(int argc, char **argv) {
    char c;
    if (argc < 2 || ptrace(PTRACE_SEIZE, atoi(argv[1]), 0, 0) != 0) {
        perror("ptrace");
        return 1;
    }
    printf("seized\n");
    fflush(stdout);
    while (read(0, &c, 1) > 0) {
    }
    return 0;
}
