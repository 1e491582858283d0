/*
 * libacme_agent.so: a third party's in-target agent for the Acme runtime, on xpuprof's C agent
 * kit (xpuprof/agent.h, -lxpuprof_agent). Preloaded into the application (LD_PRELOAD), it
 * subscribes to the runtime's callbacks; at every launch's entry the kit records the launch site
 * with the application's exact stack (the runtime's and this agent's frames cut from its top)
 * and calls the correlation trampoline; at the exit it stamps the result. The kernels the device
 * ran go out as this agent's own message, ACME_MSG_KERNEL. The kit sends it all to the xpuprof
 * host plugin whose socket ACME_XPUPROF_SOCKET names (the example's Rust source,
 * rust-source-acme-agent, decodes it), and/or to a file in the directory ACME_XPUPROF_DUMP
 * names, and flushes at exit. PREFIX/share/xpuprof/agent-stream.md lays out the stream.
 */
#include <stdio.h>
#include <string.h>

#include <xpuprof/agent.h>

#include "acme.h"

/* Launch sites of the Acme runtime's API in xpuprof's launch records (the domain number). */
#define ACME_DOMAIN 1
/* The correlation backend for the trampoline: third parties use 0x100 and up. */
#define ACME_BACKEND 0x142
/* This agent's own message: one kernel the device ran. Payload, little-endian:
 *   correlation u32, name_len u32, start u64, end u64 (CLOCK_MONOTONIC ns), name bytes. */
#define ACME_MSG_KERNEL XPUPROF_MSG_OWN_FIRST

static xpuprof_agent *agent;

static void on_call(void *user, int exit, unsigned api, unsigned correlation, int result) {
    (void)user;
    if (!exit) {
        xpuprof_agent_enter(agent, ACME_DOMAIN, api, correlation);
    } else {
        xpuprof_agent_exit(agent, (uint32_t)result);
    }
}

static void put32(unsigned char *at, uint32_t v) {
    for (int i = 0; i < 4; i++) at[i] = (unsigned char)(v >> (8 * i));
}

static void put64(unsigned char *at, uint64_t v) {
    for (int i = 0; i < 8; i++) at[i] = (unsigned char)(v >> (8 * i));
}

static void on_kernel(void *user, unsigned correlation, const char *name, uint64_t start, uint64_t end) {
    unsigned char m[24 + 256];
    size_t n = strlen(name);
    (void)user;
    if (n > 256) n = 256;
    put32(m, correlation);
    put32(m + 4, (uint32_t)n);
    put64(m + 8, start);
    put64(m + 16, end);
    memcpy(m + 24, name, n);
    /* Never blocks; a record that does not fit the kit's queue is counted and reported. */
    xpuprof_agent_send(agent, ACME_MSG_KERNEL, m, 24 + n);
}

__attribute__((constructor)) static void acme_agent_load(void) {
    static const char *const cut[] = {"libacme.so", "libacme_agent.so", NULL};
    xpuprof_agent_options o = {0};
    char error[256];
    o.size = sizeof o;
    o.name = "acme agent";
    o.socket_env = "ACME_XPUPROF_SOCKET";
    o.dump_env = "ACME_XPUPROF_DUMP";
    o.runtime_version = 1;
    o.backend = ACME_BACKEND;
    o.runtime_libraries = cut;
    agent = xpuprof_agent_start(&o, error, sizeof error);
    if (agent == NULL) {
        /* The application runs on, untraced. */
        fprintf(stderr, "acme agent: %s\n", error);
        return;
    }
    acme_subscribe(on_call, NULL);
    acme_subscribe_activity(on_kernel, NULL);
}
