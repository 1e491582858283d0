/*
 * An "XLA program" on the test double libcuda.so.1 (libcuda_double.c), for
 * plugins/cupti/tests/cupti/annotations.rs: it makes the NVTX calls XLA's GPU runtime and
 * compiler make, as CUPTI hands them to its NVTX callbacks (CUpti_NvtxData with the parameter
 * structs of generated_nvtx_meta.h), around kernel launches of the double.
 *
 * `xla_nvtx xla`: what JAX 0.11.2 did on the H200 (docs/xla.md): strings registered in the
 *   domain `TSL` (created by nvtxDomainCreateA; nvtxDomainRegisterStringA: a module's `XlaModule:#...#` title, per operation a
 *   `Thunk:#name=...#` title, its HLO text, its source locations and its called computations);
 *   a compilation range (`XlaCompile:#...#`, ASCII) on the main thread while a compiler thread
 *   times candidates in its own `XlaAutotunerMeasurement:#...#` range; then steps, each a module
 *   range with one range per operation, pushed with nvtxDomainRangePushEx (registered title and
 *   an extended payload: an nvtxPayloadData_t whose payload is XLA's
 *   {hlo_dump, src_locations, called_hlo_dump} of string handles), one launch inside each;
 *   then a range of the program's own domain (`app`) around a launch.
 * `xla_nvtx hostile`: one good step, then calls a profiler must survive, each followed by a
 *   launch inside the range it opened: null attributes, attributes smaller than NVTX v2's,
 *   a UNICODE message, an unknown message type, a registered handle never registered,
 *   extended payloads whose nvtxPayloadData_t pointer, whose payload pointer, whose size or
 *   whose count is bad, a null ASCII message, a registration without a string or return value,
 *   pops without a push, and a range pushed on one thread and popped on another. Then one more
 *   good step.
 * `xla_nvtx bench N`: what the agent's annotations cost (scripts/bench-annotations.sh): N
 *   ranges of another domain pushed and popped with an ASCII title (a program's own NVTX
 *   ranges, which give no frame), then N steps as above; prints the nanoseconds per range and
 *   per step.
 *
 * nvtxEventAttributes_t and nvtxPayloadData_t are declared in nvtx_program.h (shared with
 * nccl_nvtx.c) from the NVTX v3 headers' public layout, as the NVTX headers are not installed.
 * Prints `launches=N` and exits 0.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <wchar.h>

#include <cupti_nvtx_cbid.h>

#include "nvtx_program.h"

#define NVTX_VERSION 3
#define MESSAGE_ASCII 1
#define MESSAGE_UNICODE 2
#define MESSAGE_REGISTERED 3
#define PAYLOAD_TYPE_EXT ((int32_t)0xDFBD0009)

/* XLA's InstructionAnnotation::Basic: the payload of an operation's range. */
typedef struct {
    uint64_t hlo_dump, src_locations, called_hlo_dump;
} basic_t;

static int tsl_domain_object;
static void *const TSL = &tsl_domain_object;
static unsigned long launches;

/* String handles are CUPTI's pointers; here, addresses in this table. */
static char handles[256];
static unsigned next_handle;

static uint64_t reg(const char *text) {
    struct {
        void *domain;
        const char *string;
    } p = {TSL, text};
    uint64_t h = (uint64_t)(uintptr_t)&handles[next_handle++ % sizeof handles];
    xpuprof_double_nvtx_call(CUPTI_CBID_NVTX_nvtxDomainRegisterStringA, "nvtxDomainRegisterStringA", &p, &h);
    return h;
}

/* nvtxDomainCreateA as CUPTI hands it over: the name, and the new handle as the return value. */
static void create_domain(const char *name, void *handle) {
    struct {
        const char *name;
    } p = {name};
    uint64_t h = (uint64_t)(uintptr_t)handle;
    xpuprof_double_nvtx_call(CUPTI_CBID_NVTX_nvtxDomainCreateA, "nvtxDomainCreateA", &p, &h);
}

static void push_attr(void *domain, const attr_t *a) {
    struct {
        void *domain;
        const attr_t *attr;
    } p = {domain, a};
    xpuprof_double_nvtx_call(CUPTI_CBID_NVTX_nvtxDomainRangePushEx, "nvtxDomainRangePushEx", &p, NULL);
}

static void pop(void *domain) {
    struct {
        void *domain;
    } p = {domain};
    xpuprof_double_nvtx_call(CUPTI_CBID_NVTX_nvtxDomainRangePop, "nvtxDomainRangePop", &p, NULL);
}

static attr_t registered(uint64_t title) {
    attr_t a;
    memset(&a, 0, sizeof a);
    a.version = NVTX_VERSION;
    a.size = sizeof a;
    a.messageType = MESSAGE_REGISTERED;
    a.message = title;
    return a;
}

/* XLA's RangePush of an operation: registered title, one extended payload. */
static void push_op(uint64_t title, const payload_data_t *data, int32_t count) {
    attr_t a = registered(title);
    a.payloadType = PAYLOAD_TYPE_EXT;
    a.reserved0 = count;
    a.payload = (uint64_t)(uintptr_t)data;
    push_attr(TSL, &a);
}

static void push_ascii(void *domain, const char *text) {
    attr_t a;
    memset(&a, 0, sizeof a);
    a.version = NVTX_VERSION;
    a.size = sizeof a;
    a.messageType = MESSAGE_ASCII;
    a.message = (uint64_t)(uintptr_t)text;
    push_attr(domain, &a);
}

static void launch(const char *kernel) {
    xpuprof_double_launch(kernel);
    launches++;
}

/* One compiled module: its title and three operations, as XLA prepares them at load. */
struct op {
    const char *kernel;
    uint64_t title;
    basic_t payload;
};
static uint64_t module_title;
static struct op ops[3];

static void prepare(void) {
    static const char *names[3][3] = {
        {"layer1/dot_general", "gemm.1", "dot_kernel"},
        {"layer1/add", "loop_add_fusion", "add_kernel"},
        {"sgd/sub", "loop_subtract_fusion", "sub_kernel"},
    };
    static const int lines[3] = {30, 31, 50};
    char text[300];
    int i;
    module_title = reg("XlaModule:#prefix=jit(train_step),hlo_module=jit_train_step,program_id=3#");
    for (i = 0; i < 3; i++) {
        snprintf(text, sizeof text, "Thunk:#name=%s,hlo_op=%s,unique_hlo_op_id=%d#", names[i][0], names[i][1], i + 1);
        ops[i].title = reg(text);
        snprintf(text, sizeof text, "%s = f32[64,256]{1,0} fusion(p0, p1), metadata={op_name=\"jit(train_step)/%s\"}",
                 names[i][1], names[i][0]);
        ops[i].payload.hlo_dump = reg(text);
        snprintf(text, sizeof text, "\n- /w/train.py:98:4[<module>]\n-- /w/train.py:%d:12[dense] %s\n", lines[i],
                 names[i][0]);
        ops[i].payload.src_locations = reg(text);
        ops[i].payload.called_hlo_dump = reg("\n");
        ops[i].kernel = names[i][2];
    }
}

__attribute__((noinline)) void train_step(void) {
    int i;
    attr_t m = registered(module_title);
    push_attr(TSL, &m);
    for (i = 0; i < 3; i++) {
        payload_data_t data = {0x1000, sizeof ops[i].payload, &ops[i].payload};
        push_op(ops[i].title, &data, 1);
        launch(ops[i].kernel);
        pop(TSL);
    }
    pop(TSL);
}

static void *autotuner(void *arg) {
    (void)arg;
    push_ascii(TSL, "XlaAutotunerMeasurement:#hlo_op=gemm.1#");
    launch("autotune_candidate_kernel");
    launch("autotune_candidate_kernel");
    pop(TSL);
    return NULL;
}

__attribute__((noinline)) void compile_step(void) {
    pthread_t t;
    push_ascii(TSL, "XlaCompile:#module=jit_train_step,program_id=3#");
    push_ascii(TSL, "XlaPass:#name=gemm-autotuner,module=jit_train_step#");
    pthread_create(&t, NULL, autotuner, NULL);
    pthread_join(t, NULL);
    launch("redzone_check_kernel");
    pop(TSL);
    pop(TSL);
}

/* ---- hostile -------------------------------------------------------------------------------- */

/* Pushes `a` (or NULL), launches inside, pops. */
__attribute__((noinline)) void bad_range(const attr_t *a) {
    push_attr(TSL, a);
    launch("after_bad_push_kernel");
    pop(TSL);
}

static void *pop_elsewhere(void *arg) {
    (void)arg;
    pop(TSL); /* this thread pushed nothing */
    launch("other_thread_kernel");
    return NULL;
}

static void hostile(void) {
    static const wchar_t wide[] = L"Thunk:#name=wide#";
    uint64_t never = (uint64_t)(uintptr_t)&handles[sizeof handles - 1];
    basic_t wild = {0xdead0000, 0xdead0008, 0xdead0010};
    attr_t a;
    pthread_t t;
    /* Null attributes; attributes of 16 bytes (before NVTX v2's payload and message). */
    bad_range(NULL);
    a = registered(ops[0].title);
    a.size = 16;
    bad_range(&a);
    a = registered(ops[0].title);
    a.version = 0;
    a.size = 0;
    bad_range(&a);
    /* A UNICODE message, an unknown message type, a null ASCII message. */
    a = registered(0);
    a.messageType = MESSAGE_UNICODE;
    a.message = (uint64_t)(uintptr_t)wide;
    bad_range(&a);
    a = registered(ops[0].title);
    a.messageType = 77;
    bad_range(&a);
    a = registered(0);
    a.messageType = MESSAGE_ASCII;
    bad_range(&a);
    /* A registered handle never registered. */
    bad_range((a = registered(never), &a));
    /* Extended payloads: the nvtxPayloadData_t pointer unmapped; its payload pointer unmapped;
     * a payload of 4 bytes; a payload pointer null; a count of 100000; string handles in the
     * payload that were never registered. The title is a real operation's. */
    {
        payload_data_t unmapped_payload = {0x1000, 24, (const void *)(uintptr_t)0x18};
        payload_data_t small = {0x1000, 4, &ops[0].payload};
        payload_data_t none = {0x1000, 24, NULL};
        payload_data_t many = {0x1000, 24, &ops[0].payload};
        payload_data_t unknown = {0x1000, 24, &wild};
        a = registered(ops[0].title);
        a.payloadType = PAYLOAD_TYPE_EXT;
        a.reserved0 = 1;
        a.payload = 0x10;
        bad_range(&a);
        a.payload = (uint64_t)(uintptr_t)&unmapped_payload;
        bad_range(&a);
        a.payload = (uint64_t)(uintptr_t)&small;
        bad_range(&a);
        a.payload = (uint64_t)(uintptr_t)&none;
        bad_range(&a);
        a.reserved0 = 100000;
        a.payload = (uint64_t)(uintptr_t)&many;
        bad_range(&a);
        a.reserved0 = 1;
        a.payload = (uint64_t)(uintptr_t)&unknown;
        bad_range(&a);
    }
    /* Registrations without a string or a return value; nvtxRangePushA(NULL). */
    {
        struct {
            void *domain;
            const char *string;
        } p = {TSL, NULL};
        uint64_t h = 0;
        struct {
            const char *message;
        } pa = {NULL};
        int dummy = 0;
        xpuprof_double_nvtx_call(CUPTI_CBID_NVTX_nvtxDomainRegisterStringA, "nvtxDomainRegisterStringA", &p, &h);
        p.string = "Thunk:#name=no_return#";
        xpuprof_double_nvtx_call(CUPTI_CBID_NVTX_nvtxDomainRegisterStringA, "nvtxDomainRegisterStringA", &p, NULL);
        xpuprof_double_nvtx_call(CUPTI_CBID_NVTX_nvtxRangePushA, "nvtxRangePushA", &pa, &dummy);
        launch("after_bad_push_kernel");
        xpuprof_double_nvtx_call(CUPTI_CBID_NVTX_nvtxRangePop, "nvtxRangePop", &dummy, &dummy);
        /* Calls with no parameters at all. */
        xpuprof_double_nvtx_call(CUPTI_CBID_NVTX_nvtxDomainRangePushEx, "nvtxDomainRangePushEx", NULL, NULL);
        xpuprof_double_nvtx_call(CUPTI_CBID_NVTX_nvtxDomainRegisterStringA, "nvtxDomainRegisterStringA", NULL, &h);
    }
    /* Pops without a push: on this thread, in a domain never pushed, and on another thread;
     * then a range pushed here and popped on that other thread (and here again). */
    pop(TSL);
    pop((void *)&launches);
    pthread_create(&t, NULL, pop_elsewhere, NULL);
    pthread_join(t, NULL);
    {
        payload_data_t data = {0x1000, sizeof ops[1].payload, &ops[1].payload};
        push_op(ops[1].title, &data, 1);
        pthread_create(&t, NULL, pop_elsewhere, NULL);
        pthread_join(t, NULL);
        launch("still_inside_kernel");
        pop(TSL);
    }
}

/* ---- bench ---------------------------------------------------------------------------------- */

static double now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

/* N ranges of the program's own (a domain other than XLA's), then N XLA steps, timed. */
static void bench(long n) {
    static int app_domain_object;
    long i;
    double t0, t1, t2;
    create_domain("app", &app_domain_object);
    t0 = now_ns();
    for (i = 0; i < n; i++) {
        push_ascii(&app_domain_object, "forward: layer 3 attention");
        pop(&app_domain_object);
    }
    t1 = now_ns();
    for (i = 0; i < n; i++) {
        train_step();
    }
    t2 = now_ns();
    printf("bench ranges=%ld ns_per_range=%.1f ns_per_step=%.1f\n", n, (t1 - t0) / n, (t2 - t1) / n);
}

int main(int argc, char **argv) {
    int i, steps = 3;
    int hostile_mode = argc > 1 && strcmp(argv[1], "hostile") == 0;
    int bench_mode = argc > 2 && strcmp(argv[1], "bench") == 0;
    if (argc < 2 || (!hostile_mode && !bench_mode && strcmp(argv[1], "xla") != 0)) {
        fprintf(stderr, "usage: xla_nvtx xla|hostile|bench N\n");
        return 2;
    }
    xpuprof_double_init();
    create_domain("TSL", TSL);
    prepare();
    if (bench_mode) {
        bench(atol(argv[2]) > 0 ? atol(argv[2]) : 1);
        if (xpuprof_double_exit != NULL) {
            xpuprof_double_exit();
        }
        return 0;
    }
    compile_step();
    train_step();
    if (hostile_mode) {
        hostile();
        steps = 1;
    }
    for (i = 0; i < steps; i++) {
        train_step();
    }
    if (!hostile_mode) {
        /* The program's own range in a domain of its own: never read (null attributes here,
         * which would be counted if they were). */
        static int app_domain_object;
        create_domain("app", &app_domain_object);
        push_attr(&app_domain_object, NULL);
        launch("app_kernel");
        pop(&app_domain_object);
    }
    printf("launches=%lu\n", launches);
    fflush(stdout);
    if (xpuprof_double_exit != NULL) {
        xpuprof_double_exit();
    }
    return 0;
}
