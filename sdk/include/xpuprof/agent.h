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
 * The host side is your source plugin: it listens on a Unix socket (SOCK_STREAM), puts the
 * socket's path in the variable `socket_env` names (in its prepare) and decodes what each
 * process's agent sends on its own connection. A Rust source reads it with the SDK's
 * `agent-stream` feature (xpuprof_sdk::wire::stream::StreamReader). The stream, byte by byte, is
 * PREFIX/share/xpuprof/agent-stream.md; in short (every integer little-endian):
 *
 *   message    len u32 (bytes after this field), type u8, 3 zero bytes, payload; a reader skips
 *              types it does not know by `len`
 *   1 hello    pid u32, runtime_version u32, protocol u32 (XPUPROF_AGENT_PROTOCOL), flags u32
 *              (2: the agent sends launch stacks), command line; always first
 *   2 modules  count u32, then start u64, end u64, file_offset u64, path_len u32, path: the
 *              executable mappings of the process; sent after the hello and again (whole)
 *              when a stack leaves the last map
 *   3 launches tid u32, pad u32, then entries: a stack (1 u8, pad u8, frames u16, pad u32,
 *              hash u64, frames x u64 raw return addresses, innermost first; a thread sends a
 *              stack once, before the first launch naming its hash) or a launch (2 u8, domain
 *              u8, flags u16, api u32, correlation u32, result u32, entry u64, stack hash u64,
 *              exit u64); times are CLOCK_MONOTONIC nanoseconds
 *   7 lost launches count u64    12 lost bytes chunks u64, bytes u64
 *   8 bye      launches u64, stacks u64: the last message
 *   128-255    your own messages (xpuprof_agent_send), XPUPROF_MSG_OWN_FIRST..XPUPROF_MSG_OWN_LAST
 *
 * A dump (`dump_env`) is the same bytes, in DIR/agent-PID.bin; `xpuprof decode-agent-dump FILE`
 * prints one. Stability: a protocol number never changes meaning; a change of a payload raises
 * it, and hosts keep reading older protocols (PREFIX/share/xpuprof/stability.md).
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

/* The most frames a launch stack keeps: a larger max_depth is taken as this. Deeper stacks are
 * cut at their outermost end (the frames nearest main). Wire protocol 2 carries up to 65535
 * frames per stack; protocol 1 (agents of xpuprof before the bound) carried 255. */
#define XPUPROF_AGENT_MAX_DEPTH 1024

/* The wire protocol this kit writes in its hello (1: a stack's frame count was one byte). */
#define XPUPROF_AGENT_PROTOCOL 2

/* Message types an agent may pass to xpuprof_agent_send: the common ones whose payload the
 * stream defines (agent-stream.md), and its own range, whose meaning is its host plugin's.
 * The kit writes the others itself (hello, modules, launches, losses, bye). */
#define XPUPROF_MSG_RECORDS 4   /* count u32, pad u32, count x u16 sizes, pad to 8, the records */
#define XPUPROF_MSG_DROPPED 5   /* count u64, time u64: records the vendor library dropped */
#define XPUPROF_MSG_CLOCK 6     /* vendor u64, monotonic u64: one reading of both clocks */
#define XPUPROF_MSG_STRINGS 9   /* count u32, then address u64, len u32, bytes */
#define XPUPROF_MSG_API_NAMES 10 /* count u32, then domain u32, api u32, len u32, bytes */
#define XPUPROF_MSG_ERROR 11    /* UTF-8 text: why the agent cannot trace this process */
#define XPUPROF_MSG_OWN_FIRST 128
#define XPUPROF_MSG_OWN_LAST 255

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
    /* Most frames per stack; 0 means 128, more than XPUPROF_AGENT_MAX_DEPTH means that. */
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

/* Queues one wire message of `type` (one of the XPUPROF_MSG_* above, or your own from
 * XPUPROF_MSG_OWN_FIRST to XPUPROF_MSG_OWN_LAST) with `len` bytes of payload. Never blocks;
 * returns 0, or -1 when it was dropped (the host was gone or the queue full: counted and
 * reported as lost bytes) or when `type` is one the kit writes itself (nothing is sent). */
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
