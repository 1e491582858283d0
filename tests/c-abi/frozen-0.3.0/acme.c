/*
 * acme: an xpuprof source in C for the fictitious "Acme NPU". It has no hardware to trace, so a
 * thread plays what a real backend would observe in the target: two devices with their own
 * 100 MHz clock (defined, and paired with the session clock), launch API calls with their CPU
 * launch stacks, kernels and a copy on the devices joined to them by correlation id, and a loss.
 * Everything a real backend emits, in the records it would emit them with.
 *
 *   make                      # builds libxpuprof_plugin_acme.so
 *   xpuprof --plugin-dir . --source acme --sink folded,summary -- sleep 1
 *   xpuprof check-plugin ./libxpuprof_plugin_acme.so
 *
 * Config ([source.acme] in xpuprof.toml): `launches` (default 8), `interval_us` (default 200).
 */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <xpuprof/plugin.h>

/* Acme's correlation backend and vendor numbers (third-party ranges of the model). */
#define ACME_BACKEND (XPUPROF_BACKEND_FIRST_THIRD_PARTY + 0x42)
#define ACME_VENDOR (XPUPROF_VENDOR_FIRST_THIRD_PARTY + 2)
/* The devices' clock: 100 MHz ticks, 48 valid bits. */
#define ACME_CLOCK 1
#define ACME_TICKS_PER_SECOND 100000000ull

/* String ids (this source numbers its own from 1; the host renumbers). */
enum {
    S_VENDOR = 1, S_DEV0, S_DEV1, S_ARCH, S_CLOCK, S_LAUNCH, S_MEMCPY, S_COMMAND,
    S_MAIN, S_TRAIN, S_FORWARD, S_BACKWARD, S_GEMM, S_RELU, S_LOSS, S_THREAD,
    S_COUNT
};
static const char *const strings[S_COUNT] = {
    NULL, "Acme", "Acme NPU 7 (die 0)", "Acme NPU 7 (die 1)", "acme-v7", "acme device clock",
    "acmeLaunchKernel", "acmeMemcpyAsync", "fake-training-app", "main", "train_step", "forward",
    "backward", "acme::gemm<float>", "acme::relu", "acme trace buffer full", "acme-main",
};
/* Frame ids: synthetic frames named by the source (a real backend sends module + offset). */
enum { F_MAIN = 1, F_TRAIN, F_FORWARD, F_BACKWARD };
/* Stack ids, innermost first. */
enum { K_FORWARD = 1, K_BACKWARD };

typedef struct acme {
    const xpuprof_host *host;
    int64_t launches, interval_us;
    uint32_t pid;
    uint64_t tick_base_ns;
    pthread_t thread;
    int running;
    uint64_t next_correlation;
} acme;

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The device clock: ticks since a base, starting at a non-zero value like real counters. */
static uint64_t device_ticks(const acme *a, uint64_t session_ns) {
    return 5000000ull + (session_ns - a->tick_base_ns) / (1000000000ull / ACME_TICKS_PER_SECOND);
}

static void write_sync(acme *a, xpuprof_batch *b) {
    xpuprof_clock_sync s = {0};
    s.domain = ACME_CLOCK;
    s.session_time = now_ns();
    s.source_time = device_ticks(a, s.session_time);
    xpuprof_write_clock_sync(b, &s);
}

/* Definitions, each before the first record that uses it. */
static void write_definitions(acme *a, xpuprof_batch *b) {
    static const uint32_t forward[] = {F_FORWARD, F_TRAIN, F_MAIN};
    static const uint32_t backward[] = {F_BACKWARD, F_TRAIN, F_MAIN};
    static const uint32_t frame_names[] = {0, S_MAIN, S_TRAIN, S_FORWARD, S_BACKWARD};
    xpuprof_process_def p = {0};
    xpuprof_thread_def t = {0};
    xpuprof_clock_domain_def cd = {0};
    uint32_t i;
    for (i = 1; i < S_COUNT; i++) {
        xpuprof_write_string(b, i, strings[i]);
    }
    p.pid = a->pid;
    p.command = S_COMMAND;
    xpuprof_write_process_def(b, &p);
    t.pid = t.tid = a->pid;
    t.name = S_THREAD;
    xpuprof_write_thread_def(b, &t);
    for (i = 0; i < 2; i++) {
        xpuprof_device_def d = {0};
        xpuprof_stream_def s = {0};
        d.id = i + 1;
        d.vendor = ACME_VENDOR;
        d.vendor_name = S_VENDOR;
        d.index = i;
        d.name = i == 0 ? S_DEV0 : S_DEV1;
        d.kind = XPUPROF_DEVICE_ACCELERATOR;
        d.arch = S_ARCH;
        d.compute_units = 64;
        d.memory_bytes = 32ull << 30;
        d.uuid[0] = 0xac;
        d.uuid[15] = (uint8_t)i;
        xpuprof_write_device_def(b, &d);
        s.id = i + 1;
        s.device = i + 1;
        s.pid = a->pid;
        s.native_id = 100 + i;
        s.kind = XPUPROF_QUEUE_OTHER;
        xpuprof_write_stream_def(b, &s);
    }
    for (i = F_MAIN; i <= F_BACKWARD; i++) {
        xpuprof_frame_def f = {0};
        f.id = i;
        f.kind = XPUPROF_FRAME_SYNTHETIC;
        f.pid = a->pid;
        f.name = frame_names[i];
        xpuprof_write_frame_def(b, &f);
    }
    {
        xpuprof_stack_def k = {0};
        k.id = K_FORWARD;
        k.frames = xpuprof_id_list(forward, 3);
        xpuprof_write_stack_def(b, &k);
        k.id = K_BACKWARD;
        k.frames = xpuprof_id_list(backward, 3);
        xpuprof_write_stack_def(b, &k);
    }
    cd.domain = ACME_CLOCK;
    cd.ticks_per_second = ACME_TICKS_PER_SECOND;
    cd.valid_bits = 48;
    cd.name = S_CLOCK;
    xpuprof_write_clock_domain_def(b, &cd);
    write_sync(a, b);
}

/* One launch as the target would make it: the API call (session clock) with its launch stack,
 * and the kernel it caused on device `dev` (device clock), sharing one correlation id. */
static void write_launch(acme *a, xpuprof_batch *b, uint32_t dev, uint32_t stack, uint32_t kernel) {
    xpuprof_api_call call = {0};
    xpuprof_launch_site site = {0};
    xpuprof_device_op op = {0};
    uint64_t corr = ++a->next_correlation;
    uint64_t t = now_ns();
    call.pid = call.tid = a->pid;
    call.start = t;
    call.end = t + 3000;
    call.name = S_LAUNCH;
    call.kind = XPUPROF_API_LAUNCH;
    call.correlation = xpuprof_corr(ACME_BACKEND, corr);
    xpuprof_write_api_call(b, &call);
    site.pid = site.tid = a->pid;
    site.time = t;
    site.correlation = call.correlation;
    site.api = S_LAUNCH;
    site.stack = stack;
    xpuprof_write_launch_site(b, &site);
    op.kind = XPUPROF_OP_KERNEL;
    op.pid = a->pid;
    op.device = dev;
    op.stream = dev;
    op.clock = ACME_CLOCK;
    op.start = device_ticks(a, t + 10000);
    op.end = op.start + (kernel == S_GEMM ? 12000 : 3000); /* 120 us, 30 us */
    op.name = kernel;
    op.correlation = call.correlation;
    op.has_kernel = 1;
    op.kernel.grid[0] = 1024;
    op.kernel.grid[1] = op.kernel.grid[2] = 1;
    op.kernel.block[0] = 256;
    op.kernel.block[1] = op.kernel.block[2] = 1;
    op.kernel.shared_memory = 16384;
    op.kernel.registers = 64;
    xpuprof_write_device_op(b, &op);
}

static void write_copy(acme *a, xpuprof_batch *b) {
    xpuprof_api_call call = {0};
    xpuprof_device_op op = {0};
    uint64_t t = now_ns();
    call.pid = call.tid = a->pid;
    call.start = t;
    call.end = t + 2000;
    call.name = S_MEMCPY;
    call.kind = XPUPROF_API_COPY;
    call.correlation = xpuprof_corr(ACME_BACKEND, ++a->next_correlation);
    xpuprof_write_api_call(b, &call);
    op.kind = XPUPROF_OP_MEMCPY;
    op.copy = XPUPROF_COPY_HTOD;
    op.pid = a->pid;
    op.device = op.stream = 1;
    op.dst_device = 1;
    op.clock = ACME_CLOCK;
    op.start = device_ticks(a, t + 5000);
    op.end = op.start + 4000;
    op.name = S_MEMCPY;
    op.bytes = 1 << 20;
    op.correlation = call.correlation;
    xpuprof_write_device_op(b, &op);
}

/* The recording thread: emits as it goes, one batch per launch. It plays the whole script even
 * when the target exits early, so the example's output is the same on every run. */
static void *record(void *arg) {
    acme *a = (acme *)arg;
    xpuprof_batch b = {0};
    struct timespec pause;
    int64_t i;
    pause.tv_sec = (time_t)(a->interval_us / 1000000);
    pause.tv_nsec = (long)(a->interval_us % 1000000) * 1000;
    write_definitions(a, &b);
    write_copy(a, &b);
    xpuprof_emit(a->host, &b);
    for (i = 0; i < a->launches; i++) {
        write_launch(a, &b, 1 + (uint32_t)(i % 2), i % 2 ? K_BACKWARD : K_FORWARD, i % 3 ? S_GEMM : S_RELU);
        xpuprof_emit(a->host, &b);
        nanosleep(&pause, NULL);
    }
    xpuprof_batch_free(&b);
    return NULL;
}

static const char schema[] =
    "[[key]]\nname = \"launches\"\ntype = \"integer\"\ndefault = 8\nmin = 0\nmax = 100000\n"
    "doc = \"kernel launches to play\"\n"
    "[[key]]\nname = \"interval_us\"\ntype = \"integer\"\ndefault = 200\nmin = 0\nmax = 1000000\n"
    "doc = \"pause between launches, microseconds\"\n";

static int create(const xpuprof_host *host, const xpuprof_create_info *info, void **instance) {
    acme *a = (acme *)calloc(1, sizeof *a);
    if (a == NULL) {
        return xpuprof_fail(host, "failed to allocate the acme source");
    }
    a->host = host;
    a->launches = xpuprof_config_int(info, "launches", 8);
    a->interval_us = xpuprof_config_int(info, "interval_us", 200);
    *instance = a;
    return XPUPROF_OK;
}

static int start(void *instance, uint32_t pid) {
    acme *a = (acme *)instance;
    int rc;
    a->pid = pid;
    a->tick_base_ns = now_ns();
    rc = pthread_create(&a->thread, NULL, record, a);
    if (rc != 0) {
        return xpuprof_fail(a->host, "failed to start the acme recording thread: %s", strerror(rc));
    }
    a->running = 1;
    return XPUPROF_OK;
}

/* Waits for the recording thread, then emits the closing clock pairing and the loss the Acme
 * runtime reported (a real backend reads it from its trace buffer's drop counter). */
static int stop(void *instance) {
    acme *a = (acme *)instance;
    xpuprof_batch b = {0};
    xpuprof_loss loss = {0};
    if (!a->running) {
        return XPUPROF_OK;
    }
    pthread_join(a->thread, NULL);
    a->running = 0;
    write_sync(a, &b);
    loss.pid = a->pid;
    loss.time = now_ns();
    loss.cause = S_LOSS;
    loss.count = 3;
    xpuprof_write_loss(&b, &loss);
    if (b.failed) {
        xpuprof_batch_free(&b);
        return xpuprof_fail(a->host, "failed to encode the last records: out of memory");
    }
    xpuprof_emit(a->host, &b);
    xpuprof_batch_free(&b);
    return XPUPROF_OK;
}

static void destroy(void *instance) {
    acme *a = (acme *)instance;
    if (a->running) {
        stop(a);
    }
    free(a);
}

static const xpuprof_plugin plugin = {
    XPUPROF_PLUGIN_INIT(XPUPROF_KIND_SOURCE),
    .name = "acme",
    .version = "1.0.0",
    .description = "the fictitious Acme NPU: devices, launches with stacks, kernels, a copy and a loss",
    .config_schema = schema,
    .create = create,
    .start = start,
    .stop = stop,
    .destroy = destroy,
};

XPUPROF_EXPORT_PLUGIN(plugin)
