/*
 * An "NCCL program" on the test double libcuda.so.1 (libcuda_double.c), for
 * plugins/cupti/tests/cupti/nccl.rs: it makes the NVTX calls NCCL 2.25 and later make around
 * its collectives, as NVTX and CUPTI hand them to an injection, around kernel launches of the
 * double.
 *
 * - The payload extension's load, as NVTX's headers do it at the first nvtxPayloadSchemaRegister:
 *   open NVTX_INJECTION64_PATH (the agent), call its InitializeInjectionNvtxExtension with the
 *   payload module's description (module 2, compatibility 0x0103, one segment of 63 slots), then
 *   call the registration functions the injection put in slots 0 (nvtxPayloadSchemaRegister) and
 *   1 (nvtxPayloadEnumRegister).
 * - NCCL's registrations in its domain: the reduction-operation enumeration (static id 24), the
 *   schemas of ncclCommInitRank (id 0: communicator, ranks, rank, device), ncclAllReduce (id 5:
 *   communicator, "Message size [bytes]", reduction operation, at their offsets) and
 *   ncclAllGather (id 4); and a malformed registration (no entries), which must be refused.
 * - Collectives, each an nvtxDomainRangePushEx in NCCL's domain with the call's name and one
 *   extended payload (nvtxPayloadData_t {schema id, size, payload}), reaching CUPTI's NVTX
 *   callbacks (xpuprof_double_nvtx_call), the kernel launched inside, then nvtxDomainRangePop:
 *   3 all-reduces of 1 MiB and 3 of 16 MiB (ncclDevKernel_AllReduce_Sum_f32_RING_LL); two
 *   all-gathers of 4096 and 8192 bytes grouped (ncclGroupStart/End ranges without payload; the
 *   kernel is launched inside ncclGroupEnd's); one all-reduce of 64 bytes on one rank, whose
 *   kernel is not named for NCCL (oneRankReduce); one all-reduce whose payload names a schema
 *   never registered (its kernel has no bytes). Before the group, an all-gather that launches
 *   nothing (as NCCL's one-rank path may) followed by a kernel of the program's own: its bytes
 *   must go nowhere.
 *
 * The NVTX structs are declared from the NVTX v3 headers' public layout (pinned by static
 * assertions; those shared with xla_nvtx.c in nvtx_program.h), as the NVTX headers are not
 * installed. Prints `launches=N`.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cupti_nvtx_cbid.h>

#include "nvtx_program.h"

/* nvtxPayloadSchemaEntry_t, nvtxPayloadSchemaAttr_t, nvtxPayloadEnumAttr_t (nvToolsExtPayload.h),
 * nvtxExtModuleSegment_t and nvtxExtModuleInfo_t (nvtxExtTypes.h). */
typedef struct {
    uint64_t flags, type;
    const char *name, *description;
    uint64_t arrayOrUnionDetail, offset;
    const void *semantics, *reserved;
} schema_entry_t;
_Static_assert(sizeof(schema_entry_t) == 64 && offsetof(schema_entry_t, offset) == 40, "entry");
typedef struct {
    uint64_t fieldMask;
    const char *name;
    uint64_t type, flags;
    const schema_entry_t *entries;
    size_t numEntries, payloadStaticSize, packAlign;
    uint64_t schemaId;
    void *extension;
} schema_attr_t;
_Static_assert(sizeof(schema_attr_t) == 80 && offsetof(schema_attr_t, schemaId) == 64, "schema");
typedef struct {
    uint64_t fieldMask;
    const char *name;
    const void *entries;
    size_t numEntries, sizeOfEnum;
    uint64_t schemaId;
    void *extension;
} enum_attr_t;
_Static_assert(sizeof(enum_attr_t) == 56 && offsetof(enum_attr_t, schemaId) == 40, "enum");
typedef struct {
    size_t segmentId, slotCount;
    intptr_t *functionSlots;
} segment_t;
typedef struct {
    uint16_t nvtxVer, structSize, moduleId, compatId;
    size_t segmentsCount;
    segment_t *segments;
    void *getExportFunction;
    const void *extInfo;
} module_t;
_Static_assert(sizeof(module_t) == 40 && offsetof(module_t, segments) == 16, "module");

#define NVTX_VERSION 3
#define MESSAGE_ASCII 1
#define PAYLOAD_TYPE_EXT ((int32_t)0xDFBD0009)
#define STATIC_START (1ull << 24)
#define TYPE_INT 5
#define TYPE_UINT64 18
#define TYPE_SIZE 22
/* NVTX_PAYLOAD_SCHEMA_ATTR_* and NVTX_PAYLOAD_ENUM_ATTR_*. */
#define SCHEMA_FIELDS ((1 << 2) | (1 << 4) | (1 << 5) | (1 << 6) | (1 << 8))
#define ENUM_FIELDS ((1 << 1) | (1 << 2) | (1 << 3) | (1 << 4) | (1 << 5))
#define SID_REDOP (STATIC_START + 24)

typedef uint64_t (*schema_register_t)(void *domain, const schema_attr_t *attr);
typedef uint64_t (*enum_register_t)(void *domain, const enum_attr_t *attr);

static int nccl_domain_object;
static void *const NCCL = &nccl_domain_object;
static unsigned long launches;

/* NCCL's payloads (nvtx_payload_schemas.h). */
typedef struct {
    uint64_t comm;
    size_t bytes;
    int op;
} all_reduce_t;
typedef struct {
    uint64_t comm;
    size_t bytes;
} all_gather_t;
typedef struct {
    uint64_t comm;
    int nranks, myrank, cudaDev;
} init_t;

#define ENTRY(type, name, offset) {0, type, name, NULL, 0, offset, NULL, NULL}

static void push(const char *name, const payload_data_t *data) {
    attr_t a;
    struct {
        void *domain;
        const attr_t *attr;
    } p = {NCCL, &a};
    memset(&a, 0, sizeof a);
    a.version = NVTX_VERSION;
    a.size = sizeof a;
    a.messageType = MESSAGE_ASCII;
    a.message = (uint64_t)(uintptr_t)name;
    if (data != NULL) {
        a.payloadType = PAYLOAD_TYPE_EXT;
        a.reserved0 = 1;
        a.payload = (uint64_t)(uintptr_t)data;
    }
    xpuprof_double_nvtx_call(CUPTI_CBID_NVTX_nvtxDomainRangePushEx, "nvtxDomainRangePushEx", &p, NULL);
}

static void pop(void) {
    struct {
        void *domain;
    } p = {NCCL};
    xpuprof_double_nvtx_call(CUPTI_CBID_NVTX_nvtxDomainRangePop, "nvtxDomainRangePop", &p, NULL);
}

static void launch(const char *kernel) {
    xpuprof_double_launch(kernel);
    launches++;
}

/* NVTX's load of the payload extension: the injection fills the slots. */
static intptr_t slots[63];

static int load_payload_extension(void) {
    const char *path = getenv("NVTX_INJECTION64_PATH");
    segment_t segment = {0, 63, slots};
    module_t module = {NVTX_VERSION, sizeof(module_t), 2, 0x0103, 1, &segment, NULL, NULL};
    int (*init)(module_t *);
    void *h;
    if (path == NULL || (h = dlopen(path, RTLD_NOW)) == NULL) {
        fprintf(stderr, "no NVTX injection (NVTX_INJECTION64_PATH)\n");
        return 0;
    }
    init = (int (*)(module_t *))dlsym(h, "InitializeInjectionNvtxExtension");
    if (init == NULL || init(&module) == 0 || slots[0] <= 1 || slots[1] <= 1) {
        fprintf(stderr, "the injection took no payload registration slot\n");
        return 0;
    }
    return 1;
}

static void all_reduce(size_t bytes, uint64_t schema, const char *kernel) {
    all_reduce_t pl = {0xC0FFEE, bytes, 0};
    payload_data_t d = {STATIC_START + schema, sizeof pl, &pl};
    push("ncclAllReduce", &d);
    launch(kernel);
    pop();
}

static void all_gather(size_t bytes) {
    all_gather_t pl = {0xC0FFEE, bytes};
    payload_data_t d = {STATIC_START + 4, sizeof pl, &pl};
    push("ncclAllGather", &d);
    pop();
}

int main(void) {
    static const schema_entry_t init_entries[] = {
        ENTRY(TYPE_UINT64, "NCCL communicator ID", 0),
        ENTRY(TYPE_INT, "No. of ranks", offsetof(init_t, nranks)),
        ENTRY(TYPE_INT, "Rank", offsetof(init_t, myrank)),
        ENTRY(TYPE_INT, "CUDA device", offsetof(init_t, cudaDev)),
    };
    static const schema_entry_t all_reduce_entries[] = {
        ENTRY(TYPE_UINT64, "NCCL communicator ID", 0),
        ENTRY(TYPE_SIZE, "Message size [bytes]", offsetof(all_reduce_t, bytes)),
        ENTRY(SID_REDOP, "Reduction operation", offsetof(all_reduce_t, op)),
    };
    static const schema_entry_t all_gather_entries[] = {
        ENTRY(TYPE_UINT64, "NCCL communicator ID", 0),
        ENTRY(TYPE_SIZE, "Message size [bytes]", offsetof(all_gather_t, bytes)),
    };
    static const struct {
        const char *name;
        uint64_t value;
        int8_t isFlag;
    } redops[] = {{"ncclSum", 0, 0}, {"ncclProd", 1, 0}, {"ncclMax", 2, 0}, {"ncclMin", 3, 0}, {"ncclAvg", 4, 0}};
    enum_attr_t redop = {ENUM_FIELDS, "NCCL reduction operation", redops, 5, sizeof(int), SID_REDOP, NULL};
    schema_attr_t init = {SCHEMA_FIELDS, NULL, 1, 0, init_entries, 4, sizeof(init_t), 0, STATIC_START + 0, NULL};
    schema_attr_t ar = {SCHEMA_FIELDS, NULL, 1, 0, all_reduce_entries, 3, sizeof(all_reduce_t), 0, STATIC_START + 5, NULL};
    schema_attr_t ag = {SCHEMA_FIELDS, NULL, 1, 0, all_gather_entries, 2, sizeof(all_gather_t), 0, STATIC_START + 4, NULL};
    schema_attr_t bad = {SCHEMA_FIELDS, NULL, 1, 0, NULL, 3, 24, 0, STATIC_START + 30, NULL};
    init_t init_payload = {0xC0FFEE, 1, 0, 0};
    payload_data_t init_data = {STATIC_START + 0, sizeof init_payload, &init_payload};
    int i;

    if (xpuprof_double_init() != 1) {
        fprintf(stderr, "the agent did not start\n");
        return 1;
    }
    if (!load_payload_extension()) {
        return 2;
    }
    ((enum_register_t)slots[1])(NCCL, &redop);
    if (((schema_register_t)slots[0])(NCCL, &ar) != STATIC_START + 5 ||
        ((schema_register_t)slots[0])(NCCL, &ag) != STATIC_START + 4 ||
        ((schema_register_t)slots[0])(NCCL, &init) != STATIC_START + 0) {
        fprintf(stderr, "a schema registration did not return the schema's id\n");
        return 3;
    }
    ((schema_register_t)slots[0])(NCCL, &bad);
    push("ncclCommInitRank", &init_data);
    pop();
    for (i = 0; i < 3; i++) {
        all_reduce(1 << 20, 5, "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)");
    }
    for (i = 0; i < 3; i++) {
        all_reduce(16 << 20, 5, "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)");
    }
    /* A one-rank in-place all-reduce launches nothing; the program's next kernel is its own. */
    all_gather(1 << 30);
    launch("vector_add");
    push("ncclGroupStart", NULL);
    pop();
    all_gather(4096);
    all_gather(8192);
    push("ncclGroupEnd", NULL);
    launch("ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)");
    pop();
    all_reduce(64, 5, "void (anonymous namespace)::oneRankReduce<FuncPreMulSum<float> >(void*, void*, unsigned long, unsigned long, bool)");
    all_reduce(1 << 10, 99, "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)");
    if (xpuprof_double_exit) {
        xpuprof_double_exit();
    }
    printf("launches=%lu\n", launches);
    return 0;
}
