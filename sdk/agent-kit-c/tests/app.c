/* A stand-in for a third-party accelerator's runtime and its agent, on xpuprof/agent.h: the
 * "runtime" has a launch API that the "agent" hooks (enter, trampoline, exit), and it sends one
 * raw record message. Compiled with frame pointers, like the applications the kit walks.
 * Prints the addresses of its functions so the test can find them in the captured stack. */
#include <stdio.h>
#include <stdlib.h>

#include <xpuprof/agent.h>

static xpuprof_agent *agent;

/* The runtime's launch API, as the agent's hook sees it. */
__attribute__((noinline)) static int acme_launch(unsigned correlation) {
    int outer = xpuprof_agent_enter(agent, 1, 42, correlation);
    xpuprof_agent_exit(agent, 0);
    return outer;
}

__attribute__((noinline)) int inner(unsigned c) { return acme_launch(c) + 1; }
__attribute__((noinline)) int middle(unsigned c) { return inner(c) + 1; }
__attribute__((noinline)) int outer(unsigned c) { return middle(c) + 1; }

int main(void) {
    static const char *const runtime[] = {NULL};
    xpuprof_agent_options o = {0};
    char err[256];
    uint64_t frames[64];
    unsigned i;
    const unsigned char record[12] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
    o.size = sizeof o;
    o.name = "acme agent";
    o.socket_env = "ACME_SOCKET";
    o.runtime_version = 7;
    o.backend = 0x142;
    o.runtime_libraries = runtime;
    agent = xpuprof_agent_start(&o, err, sizeof err);
    if (agent == NULL) {
        fprintf(stderr, "agent: %s\n", err);
        return 1;
    }
    printf("inner %p\nmiddle %p\nouter %p\nmain %p\n", (void *)inner, (void *)middle, (void *)outer, (void *)main);
    for (i = 1; i <= 3; i++) {
        if (outer(i) != 4) {
            return 2;
        }
    }
    if (xpuprof_agent_send(agent, 4, record, sizeof record) != 0) {
        return 3;
    }
    if (xpuprof_agent_walk(frames, 64) < 1) {
        return 4;
    }
    return 0; /* the kit flushes at exit */
}
