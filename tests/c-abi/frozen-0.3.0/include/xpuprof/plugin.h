/*
 * xpuprof plugin interface for C and C++ (C ABI version 1).
 *
 * A plugin is a shared library named `libxpuprof_plugin_<name>.so` that exports one function,
 * `xpuprof_plugin_v1`, returning its descriptor (use XPUPROF_EXPORT_PLUGIN). The host finds it
 * through the same discovery and checks as a Rust plugin (`--plugin-dir`, XPUPROF_PLUGIN_PATH,
 * the config file's `plugin_dirs`, the install directory), and `xpuprof plugins` lists it.
 *
 * Records cross this interface as encoded batches, the same bytes a Rust plugin exchanges
 * (docs/formats.md, "Batch codec"): write them with the xpuprof_write_* functions and read them
 * with xpuprof_reader_next from <xpuprof/records.h>; never hand-write a varint.
 *
 * Growth: every struct that crosses the interface starts with `size`, the sizeof() the writer
 * was compiled with. Fields are only ever appended; a reader uses a field only when `size`
 * covers it (XPUPROF_HAS), so a plugin built with an older header loads into a newer host and
 * the other way round. Changing or removing a field is a new XPUPROF_C_ABI_VERSION and a new
 * entry symbol.
 *
 * Lifecycle, all entry points on one host thread per instance:
 *   sources: create -> prepare -> start(pid) -> stop -> destroy
 *   sinks:   create -> consume(batch)* -> finish -> destroy
 * A source may call host->emit from any thread between start and the return of stop; stop
 * returns only when everything recorded has been emitted. Entry points return XPUPROF_OK or an
 * error, whose message they set with xpuprof_fail() first.
 *
 * Compiles as C99 and as C++ (tests: -std=c99 -Wall -Wextra -Werror, -std=c++17).
 */
#ifndef XPUPROF_PLUGIN_H
#define XPUPROF_PLUGIN_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "records.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The C plugin ABI this header speaks; part of the entry symbol's name. */
#define XPUPROF_C_ABI_VERSION 1u
/* The SDK release this header belongs to (informational, shown by `xpuprof plugins`). */
#define XPUPROF_HEADER_VERSION "0.3.0"
/* Name of the symbol a plugin exports (a function returning its descriptor). */
#define XPUPROF_ENTRY_SYMBOL "xpuprof_plugin_v1"

/* Plugin kinds. */
#define XPUPROF_KIND_SOURCE 1u
#define XPUPROF_KIND_SINK 2u

/* Entry point results. */
#define XPUPROF_OK 0
#define XPUPROF_ERROR 1

/* Log levels of xpuprof_host.log. */
#define XPUPROF_LOG_ERROR 1
#define XPUPROF_LOG_WARN 2
#define XPUPROF_LOG_INFO 3
#define XPUPROF_LOG_DEBUG 4

/* Results of the config getters. */
#define XPUPROF_CONFIG_SET 1      /* the value was written to *out */
#define XPUPROF_CONFIG_UNSET 0    /* no value and no declared default */
#define XPUPROF_CONFIG_WRONG_TYPE -1 /* the key holds another type, or is not declared */

/* True when the struct at `ptr` (whose first field is `size`) has field `field`. */
#define XPUPROF_HAS(ptr, type, field) \
    ((ptr)->size >= offsetof(type, field) + sizeof(((type *)0)->field))

/* Callbacks the host gives every instance; valid until destroy returns. All thread-safe. */
typedef struct xpuprof_host {
    /* sizeof(xpuprof_host) as the host was built: check XPUPROF_HAS for appended fields. */
    uint32_t size;
    /* XPUPROF_C_ABI_VERSION of the host. */
    uint32_t abi_version;
    /* Opaque; pass it back to every callback. */
    void *ctx;
    /* Hands a batch of encoded records to the host, which copies it (sources, from any thread).
     * Blocks while the host's queue is full: never call it from a thread of the application. */
    void (*emit)(void *ctx, const uint8_t *batch, size_t len);
    /* Logs one message (not NUL-terminated, `len` bytes) at XPUPROF_LOG_*. */
    void (*log)(void *ctx, int level, const char *message, size_t len);
    /* Sets the message the host shows for the error the current entry point returns. */
    void (*set_error)(void *ctx, const char *message, size_t len);
} xpuprof_host;

/* The validated configuration, opaque; read it with the xpuprof_config_* functions. */
typedef struct xpuprof_config xpuprof_config;

/* What `create` gets; valid only during the create call (copy what you keep). */
typedef struct xpuprof_create_info {
    uint32_t size;
    uint32_t verbosity; /* 0 = warnings, 1 = info, 2 = debug */
    /* Output directory (sinks create their files inside it). */
    xpuprof_text output_dir;
    /* Session start, session clock (CLOCK_MONOTONIC) ns. */
    uint64_t start_time;
    /* The whole argument document, TOML: `[plugin]` (this plugin's config) and `[session]`. */
    xpuprof_text args_toml;
    const xpuprof_config *config;
    /* Each getter returns an XPUPROF_CONFIG_* result. The value is the user's or, when the user
     * left the key out, the default the plugin's schema declares. */
    int (*get_int)(const xpuprof_config *config, const char *key, int64_t *out);
    int (*get_float)(const xpuprof_config *config, const char *key, double *out);
    int (*get_bool)(const xpuprof_config *config, const char *key, int *out);
    /* The string is valid during create only. */
    int (*get_str)(const xpuprof_config *config, const char *key, xpuprof_text *out);
} xpuprof_create_info;

/* Environment variables a source asks the host to set in the target (prepare). */
typedef struct xpuprof_env {
    uint32_t size;
    void *ctx;
    void (*set)(void *ctx, const char *key, const char *value);
} xpuprof_env;

/* Files a sink wrote (finish). */
typedef struct xpuprof_files {
    uint32_t size;
    void *ctx;
    void (*add)(void *ctx, const char *path);
} xpuprof_files;

/* What a plugin says about itself, and its entry points. Returned by xpuprof_plugin_v1(),
 * must stay valid while the library is loaded (a static const object). */
typedef struct xpuprof_plugin {
    /* sizeof(xpuprof_plugin) as the plugin was compiled. */
    uint32_t size;
    /* XPUPROF_C_ABI_VERSION the plugin was compiled with. */
    uint32_t abi_version;
    /* XPUPROF_KIND_SOURCE or XPUPROF_KIND_SINK. */
    uint32_t kind;
    uint32_t reserved; /* zero */
    /* Name on the command line (`-s NAME`, `[source.NAME]`): letters, digits, '-' and '_'. */
    const char *name;
    const char *version;
    const char *description;
    /* XPUPROF_HEADER_VERSION (set by XPUPROF_PLUGIN_INIT). */
    const char *header_version;
    /* The configuration schema, TOML: one `[[key]]` table per key with `name`, `type`
     * ("bool", "integer", "float", "string", "string-list"), `doc`, and optionally `default`,
     * `allowed` (array), `min`, `max`. NULL or "" when the plugin takes no configuration. The
     * host checks the user's table against it before anything runs. */
    const char *config_schema;
    /* Capabilities the plugin needs ("bpf-perf", "cuda", ...), NULL-terminated, or NULL. */
    const char *const *capabilities;

    /* Creates an instance; stores it in *instance. `host` stays valid until destroy. */
    int (*create)(const xpuprof_host *host, const xpuprof_create_info *info, void **instance);
    /* Sources: adds variables to the target's environment. May be NULL. */
    int (*prepare)(void *instance, const xpuprof_env *env);
    /* Sources: starts recording the process tree rooted at `pid` (held before exec). */
    int (*start)(void *instance, uint32_t pid);
    /* Sources: emits everything still buffered and stops. */
    int (*stop)(void *instance);
    /* Sinks: one batch of encoded records, valid only during the call. */
    int (*consume)(void *instance, const uint8_t *batch, size_t len);
    /* Sinks: finishes the output and names the files written. */
    int (*finish)(void *instance, const xpuprof_files *files);
    /* Releases the instance. Called once, also after a failed call. */
    void (*destroy)(void *instance);
    /* Append new fields here. */
} xpuprof_plugin;

/* Fills the fixed fields of a descriptor: `xpuprof_plugin p = { XPUPROF_PLUGIN_INIT(kind), ...}`
 * is awkward in C99, so use designated initialisers:
 *   static const xpuprof_plugin plugin = {
 *       XPUPROF_PLUGIN_INIT(XPUPROF_KIND_SINK),
 *       .name = "csv", ...
 *   };
 */
#define XPUPROF_PLUGIN_INIT(kind_) \
    .size = (uint32_t)sizeof(xpuprof_plugin), .abi_version = XPUPROF_C_ABI_VERSION, .kind = (kind_), \
    .header_version = XPUPROF_HEADER_VERSION

#if defined(__GNUC__) || defined(__clang__)
#define XPUPROF_VISIBLE __attribute__((visibility("default")))
#define XPUPROF_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define XPUPROF_VISIBLE
#define XPUPROF_PRINTF(f, a)
#endif

/* Exports `descriptor` (an xpuprof_plugin object) as this library's plugin. Once per library. */
#ifdef __cplusplus
#define XPUPROF_EXPORT_PLUGIN(descriptor) \
    extern "C" XPUPROF_VISIBLE const xpuprof_plugin *xpuprof_plugin_v1(void) { return &(descriptor); }
#else
#define XPUPROF_EXPORT_PLUGIN(descriptor) \
    XPUPROF_VISIBLE const xpuprof_plugin *xpuprof_plugin_v1(void); \
    XPUPROF_VISIBLE const xpuprof_plugin *xpuprof_plugin_v1(void) { return &(descriptor); }
#endif

/* Formats into `msg` (cut to `cap` - 1 bytes); returns the length written. */
static inline size_t xpuprof__format(char *msg, size_t cap, const char *fmt, va_list ap) {
    int n = vsnprintf(msg, cap, fmt, ap);
    if (n < 0) {
        msg[0] = '\0';
        return 0;
    }
    return (size_t)n < cap ? (size_t)n : cap - 1;
}

/* Sets the error message of the current entry point (printf-style) and returns XPUPROF_ERROR:
 *   return xpuprof_fail(host, "failed to open %s: %s", path, strerror(errno)); */
static inline XPUPROF_PRINTF(2, 3) int xpuprof_fail(const xpuprof_host *host, const char *fmt, ...) {
    char msg[1024];
    size_t n;
    va_list ap;
    va_start(ap, fmt);
    n = xpuprof__format(msg, sizeof msg, fmt, ap);
    va_end(ap);
    host->set_error(host->ctx, msg, n);
    return XPUPROF_ERROR;
}

/* Logs a printf-style message through the host. */
static inline XPUPROF_PRINTF(3, 4) void xpuprof_log(const xpuprof_host *host, int level, const char *fmt, ...) {
    char msg[1024];
    size_t n;
    va_list ap;
    va_start(ap, fmt);
    n = xpuprof__format(msg, sizeof msg, fmt, ap);
    va_end(ap);
    host->log(host->ctx, level, msg, n);
}

/* Hands the batch's records to the host and empties it (sources). */
static inline void xpuprof_emit(const xpuprof_host *host, xpuprof_batch *batch) {
    if (batch->len > 0) {
        host->emit(host->ctx, batch->data, batch->len);
    }
    xpuprof_batch_clear(batch);
}

/* Config getters: the value of `key`, or `fallback` when it is unset. */
static inline int64_t xpuprof_config_int(const xpuprof_create_info *info, const char *key, int64_t fallback) {
    int64_t v = fallback;
    return info->get_int(info->config, key, &v) == XPUPROF_CONFIG_SET ? v : fallback;
}

static inline double xpuprof_config_float(const xpuprof_create_info *info, const char *key, double fallback) {
    double v = fallback;
    return info->get_float(info->config, key, &v) == XPUPROF_CONFIG_SET ? v : fallback;
}

static inline int xpuprof_config_bool(const xpuprof_create_info *info, const char *key, int fallback) {
    int v = fallback;
    return info->get_bool(info->config, key, &v) == XPUPROF_CONFIG_SET ? v : fallback;
}

/* The string value copied into `out` (NUL-terminated, cut to `cap` - 1 bytes); returns its full
 * length, or -1 when unset. */
static inline long xpuprof_config_str(const xpuprof_create_info *info, const char *key, char *out, size_t cap) {
    xpuprof_text t = {0, 0};
    size_t n;
    if (info->get_str(info->config, key, &t) != XPUPROF_CONFIG_SET) {
        return -1;
    }
    if (cap > 0) {
        n = t.len < cap - 1 ? t.len : cap - 1;
        if (n > 0) {
            memcpy(out, t.ptr, n);
        }
        out[n] = '\0';
    }
    return (long)t.len;
}

#ifdef __cplusplus
}
#endif

#endif /* XPUPROF_PLUGIN_H */
