/*
 * What the NVTX programs on the test double (xla_nvtx.c, nccl_nvtx.c) share: the double's
 * entry points and the NVTX structs they pass, declared from the NVTX v3 headers' public layout
 * (pinned by the static assertions), as the NVTX headers are not installed.
 */
#ifndef XPUPROF_NVTX_PROGRAM_H
#define XPUPROF_NVTX_PROGRAM_H

#include <stddef.h>
#include <stdint.h>

int xpuprof_double_init(void);
int xpuprof_double_launch(const char *kernel);
void xpuprof_double_nvtx_call(uint32_t cbid, const char *name, const void *params, const void *ret);
/* The driver's teardown, where the double's CUPTI hands over its device record (when it has one). */
void xpuprof_double_exit(void) __attribute__((weak));

/* nvtxEventAttributes_v2 (nvToolsExt.h). */
typedef struct {
    uint16_t version;
    uint16_t size;
    uint32_t category;
    int32_t colorType;
    uint32_t color;
    int32_t payloadType;
    int32_t reserved0; /* with an extended payload: how many nvtxPayloadData_t */
    uint64_t payload;
    int32_t messageType;
    uint64_t message;
} attr_t;
_Static_assert(sizeof(attr_t) == 48, "NVTX_EVENT_ATTRIB_STRUCT_SIZE");
_Static_assert(offsetof(attr_t, payloadType) == 16 && offsetof(attr_t, payload) == 24, "payload");
_Static_assert(offsetof(attr_t, messageType) == 32 && offsetof(attr_t, message) == 40, "message");

/* nvtxPayloadData_t (nvToolsExtPayload.h). */
typedef struct {
    uint64_t schemaId;
    size_t size;
    const void *payload;
} payload_data_t;

#endif
