/* A test double: a C source that breaks the record rules `xpuprof check-plugin` enforces, or
 * crashes, as its `fault` key says:
 *   "rules": a string used before its definition, a string redefined with other text, a kernel
 *            in a clock domain that no ClockSync pairs, an API call stamped with a foreign clock;
 *   "crash": a NULL dereference in start (the check must survive it and name the step). */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>

#include <xpuprof/plugin.h>

typedef struct bad {
    const xpuprof_host *host;
    char fault[16];
    uint32_t pid;
} bad;

static int create(const xpuprof_host *host, const xpuprof_create_info *info, void **instance) {
    bad *b = (bad *)calloc(1, sizeof *b);
    if (b == NULL) {
        return xpuprof_fail(host, "out of memory");
    }
    b->host = host;
    xpuprof_config_str(info, "fault", b->fault, sizeof b->fault);
    *instance = b;
    return XPUPROF_OK;
}

static int start(void *instance, uint32_t pid) {
    bad *b = (bad *)instance;
    b->pid = pid;
    if (strcmp(b->fault, "crash") == 0) {
        volatile int *nowhere = NULL;
        return *nowhere;
    }
    return XPUPROF_OK;
}

static int stop(void *instance) {
    bad *b = (bad *)instance;
    xpuprof_batch batch = {0};
    xpuprof_api_call call = {0};
    xpuprof_device_op op = {0};
    xpuprof_clock_domain_def cd = {0};
    call.pid = call.tid = b->pid;
    call.start = 12345; /* not a CLOCK_MONOTONIC time of this session */
    call.end = 12346;
    call.name = 7; /* used before its definition */
    xpuprof_write_api_call(&batch, &call);
    xpuprof_write_string(&batch, 7, "badCall");
    xpuprof_write_string(&batch, 7, "otherText");
    cd.domain = 2;
    cd.ticks_per_second = 1000;
    xpuprof_write_clock_domain_def(&batch, &cd);
    op.pid = b->pid;
    op.clock = 2; /* never paired by a ClockSync */
    op.start = 10;
    op.end = 20;
    xpuprof_write_device_op(&batch, &op);
    xpuprof_emit(b->host, &batch);
    xpuprof_batch_free(&batch);
    return XPUPROF_OK;
}

static void destroy(void *instance) {
    free(instance);
}

static const xpuprof_plugin plugin = {
    XPUPROF_PLUGIN_INIT(XPUPROF_KIND_SOURCE),
    .name = "bad-source",
    .version = "0.0.1",
    .description = "test double: breaks the record rules or crashes",
    .config_schema = "[[key]]\nname = \"fault\"\ntype = \"string\"\ndefault = \"rules\"\n"
                     "allowed = [\"rules\", \"crash\"]\ndoc = \"what to do wrong\"\n",
    .create = create,
    .start = start,
    .stop = stop,
    .destroy = destroy,
};

XPUPROF_EXPORT_PLUGIN(plugin)
