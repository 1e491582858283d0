/*
 * libacme_agent.so: a third party's in-target agent for the Acme runtime, on xpuprof's C agent
 * kit (xpuprof/agent.h, -lxpuprof_agent). Preloaded into the application (LD_PRELOAD), it
 * subscribes to the runtime's callbacks; at every launch's entry the kit records the launch site
 * with the application's exact stack (the runtime's and this agent's frames cut from its top)
 * and calls the correlation trampoline; at the exit it stamps the result. The kit sends it all
 * to the xpuprof host plugin whose socket ACME_XPUPROF_SOCKET names, or to a file in the
 * directory ACME_XPUPROF_DUMP names, and flushes at exit.
 */
#include <stdio.h>

#include <xpuprof/agent.h>

#include "acme.h"

/* Launch sites of the Acme runtime's API in xpuprof's launch records (the domain number). */
#define ACME_DOMAIN 1
/* The correlation backend for the trampoline: third parties use 0x100 and up. */
#define ACME_BACKEND 0x142

static xpuprof_agent *agent;

static void on_call(void *user, int exit, unsigned api, unsigned correlation, int result) {
    (void)user;
    if (!exit) {
        xpuprof_agent_enter(agent, ACME_DOMAIN, api, correlation);
    } else {
        xpuprof_agent_exit(agent, (uint32_t)result);
    }
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
}
