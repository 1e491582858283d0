/*
 * xpuprof agent kit for C and C++: what an in-target agent of a third-party accelerator needs
 * besides its vendor's API, from xpuprof's own agents (libxpuprof_agent.so, -lxpuprof_agent).
 *
 *   - launch sites: at a launch API's entry, on the application thread, the calling thread's
 *     stack is walked (frame pointers, bounded by the thread's stack; frames of the profiler and
 *     of the vendor runtime are cut from its top), stamped and queued with the call's
 *     correlation id; no lock is contended and nothing waits on the host;
 *   - the correlation trampoline: the exported xpuprof_agent_launch(backend, id) is called with
 *     the frame the walk started from, so the eBPF source's uprobe sees the same stack;
 *   - the wire stream: a hello with the process's module map, the launch sites, your own
 *     messages (raw vendor records, clock pairs), losses when the host is slow or gone, and a
 *     bye, written by one sender thread to the socket the host plugin named in the environment;
 *     flushed at exit and on SIGINT/SIGTERM.
 *
 * The host side of the stream is a source plugin that decodes it (xpuprof-wire's Reader, the
 * toolbox's agent_host); see docs/architecture.md, "The agent kit".
 *
 * One agent per process. Every function is safe to call from any thread once
 * xpuprof_agent_start returned; with a NULL agent they do nothing.
 */
#ifndef XPUPROF_AGENT_H
#define XPUPROF_AGENT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct xpuprof_agent xpuprof_agent;

typedef struct xpuprof_agent_options {
    /* sizeof(xpuprof_agent_options): fields are only ever appended. */
    uint32_t size;
    /* The vendor runtime's version, sent in the hello. */
    uint32_t runtime_version;
    /* Who speaks, in messages ("acme agent"). */
    const char *name;
    /* The environment variable holding the host plugin's socket path (set in its prepare). */
    const char *socket_env;
    /* The environment variable naming a directory to dump the stream to, or NULL. */
    const char *dump_env;
    /* File names (or paths) of libraries whose frames are cut from the top of launch stacks:
     * the vendor runtime, and your agent library when it links the kit statically. A path or a
     * file name (`libacme.so` also matches `libacme.so.1`); NULL-terminated, or NULL. The kit's own
     * libxpuprof_agent.so is always cut. */
    const char *const *runtime_libraries;
    /* The correlation backend the trampoline reports (XPUPROF_BACKEND_*, third parties 0x100+). */
    uint32_t backend;
    /* Most frames per stack; 0 means 128. */
    uint32_t max_depth;
} xpuprof_agent_options;

/* Starts the agent: connects, sends the hello and the module map, starts the sender thread and
 * the exit flush. Returns NULL and writes why into `error` (cut to `error_cap`) when it cannot. */
xpuprof_agent *xpuprof_agent_start(const xpuprof_agent_options *options, char *error, size_t error_cap);

/* At a launch API's entry, on the calling thread: records the launch site (time, stack,
 * `api` number in `domain`, `correlation`) and calls the trampoline. Nested calls only count
 * the outermost. Returns 1 for the outermost call, 0 otherwise. Pair with xpuprof_agent_exit. */
int xpuprof_agent_enter(xpuprof_agent *agent, uint8_t domain, uint32_t api, uint32_t correlation);

/* At the API's exit: stamps the outermost call's end and `result`, publishes it. */
void xpuprof_agent_exit(xpuprof_agent *agent, uint32_t result);

/* Queues one wire message of `type` (xpuprof-wire's MSG_* numbers: raw vendor records, clock
 * pairs, strings). Never blocks; returns 0, or -1 when it was dropped (and counted). */
int xpuprof_agent_send(xpuprof_agent *agent, uint8_t type, const void *payload, size_t len);

/* The calling thread's stack into `out`: the return address of the function that called
 * xpuprof_agent_walk first, then its callers'; returns how many. Frame pointers where the code
 * keeps them, the binaries' unwind tables (.eh_frame) where it does not. */
size_t xpuprof_agent_walk(uint64_t *out, size_t max);

/* Flushes the launch sites, reports the losses, says bye and waits for the sender (also run
 * at exit and on SIGINT/SIGTERM; only the first call does anything). */
void xpuprof_agent_finish(xpuprof_agent *agent);

#ifdef __cplusplus
}
#endif

#endif /* XPUPROF_AGENT_H */
