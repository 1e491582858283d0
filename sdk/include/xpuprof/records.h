/*
 * xpuprof records for C and C++: the event model and its batch codec (docs/formats.md, "Batch
 * codec"), header-only.
 *
 * Every record kind is a plain struct whose zero value is the model's default, so write
 *     xpuprof_device_op op = {0};  op.kind = XPUPROF_OP_KERNEL; ...
 *     xpuprof_write_device_op(&batch, &op);
 * and set only what you know. Writers append one encoded record to an xpuprof_batch (a growable
 * buffer; they return 0, or -1 when memory ran out, which also marks the batch `failed`).
 * xpuprof_reader_next decodes a batch into an xpuprof_record: strings, byte strings and id
 * lists then point into the batch and are valid as long as it is.
 *
 * Fields named after the Rust model (xpuprof_sdk::model), same meaning and units: ids are
 * numbers a source chooses (from 1; 0 = none) and defines with a definition record before the
 * first record that uses them; times are nanoseconds of the session clock (CLOCK_MONOTONIC), or
 * ticks of the record's `clock` domain when it names one (define it with
 * xpuprof_clock_domain_def and pair it with xpuprof_clock_sync records).
 */
#ifndef XPUPROF_RECORDS_H
#define XPUPROF_RECORDS_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- record tags ---- */
#define XPUPROF_TAG_STR 1
#define XPUPROF_TAG_PROCESS 2
#define XPUPROF_TAG_THREAD 3
#define XPUPROF_TAG_DEVICE 4
#define XPUPROF_TAG_STREAM 5
#define XPUPROF_TAG_MODULE 6
#define XPUPROF_TAG_FRAME 7
#define XPUPROF_TAG_STACK 8
#define XPUPROF_TAG_CLOCK_DOMAIN 9
#define XPUPROF_TAG_API_CALL 16
#define XPUPROF_TAG_DEVICE_OP 17
#define XPUPROF_TAG_LAUNCH_SITE 18
#define XPUPROF_TAG_CPU_SAMPLE 19
#define XPUPROF_TAG_MARKER 20
#define XPUPROF_TAG_RANGE 21
#define XPUPROF_TAG_COUNTER 22
#define XPUPROF_TAG_LOSS 23
#define XPUPROF_TAG_CLOCK_SYNC 24
#define XPUPROF_TAG_OVERHEAD 25
#define XPUPROF_TAG_RETIRED 26
#define XPUPROF_TAG_WINDOW 27
#define XPUPROF_TAG_DEVICE_SAMPLE 28

/* ---- enumerations (values of docs/formats.md) ---- */
/* FrameKind */
#define XPUPROF_FRAME_FILE_OFFSET 0
#define XPUPROF_FRAME_VIRTUAL 1
#define XPUPROF_FRAME_KERNEL 2
#define XPUPROF_FRAME_SYNTHETIC 3
/* DeviceOpKind */
#define XPUPROF_OP_KERNEL 0
#define XPUPROF_OP_MEMCPY 1
#define XPUPROF_OP_MEMSET 2
#define XPUPROF_OP_SYNC 3
#define XPUPROF_OP_ALLOC 4
#define XPUPROF_OP_FREE 5
#define XPUPROF_OP_OTHER 255
/* CopyKind */
#define XPUPROF_COPY_UNKNOWN 0
#define XPUPROF_COPY_HTOD 1
#define XPUPROF_COPY_DTOH 2
#define XPUPROF_COPY_DTOD 3
#define XPUPROF_COPY_HTOH 4
#define XPUPROF_COPY_PTOP 5
/* SampleKind */
#define XPUPROF_SAMPLE_ON_CPU 0
#define XPUPROF_SAMPLE_OFF_CPU 1
/* ApiKind */
#define XPUPROF_API_UNKNOWN 0
#define XPUPROF_API_LAUNCH 1
#define XPUPROF_API_SYNC 2
#define XPUPROF_API_COPY 3
#define XPUPROF_API_ALLOC 4
#define XPUPROF_API_FREE 5
#define XPUPROF_API_MEMSET 6
#define XPUPROF_API_OTHER 7
/* DeviceKind */
#define XPUPROF_DEVICE_GPU 0
#define XPUPROF_DEVICE_SUB_DEVICE 1
#define XPUPROF_DEVICE_ACCELERATOR 2
#define XPUPROF_DEVICE_OTHER 255
/* QueueKind */
#define XPUPROF_QUEUE_UNKNOWN 0
#define XPUPROF_QUEUE_CUDA_STREAM 1
#define XPUPROF_QUEUE_HIP_STREAM 2
#define XPUPROF_QUEUE_HSA_QUEUE 3
#define XPUPROF_QUEUE_ZE_COMMAND_QUEUE 4
#define XPUPROF_QUEUE_ZE_IMMEDIATE_LIST 5
#define XPUPROF_QUEUE_SYCL_QUEUE 6
#define XPUPROF_QUEUE_OTHER 255
/* CollectiveOp */
#define XPUPROF_COLLECTIVE_NONE 0
#define XPUPROF_COLLECTIVE_ALL_REDUCE 1
#define XPUPROF_COLLECTIVE_ALL_GATHER 2
#define XPUPROF_COLLECTIVE_REDUCE_SCATTER 3
#define XPUPROF_COLLECTIVE_BROADCAST 4
#define XPUPROF_COLLECTIVE_REDUCE 5
#define XPUPROF_COLLECTIVE_ALL_TO_ALL 6
#define XPUPROF_COLLECTIVE_SEND_RECV 7
#define XPUPROF_COLLECTIVE_OTHER 255
/* SizeUnit */
#define XPUPROF_UNIT_BLOCKS 0
#define XPUPROF_UNIT_WORK_ITEMS 1
/* OverheadKind */
#define XPUPROF_OVERHEAD_OTHER 0
#define XPUPROF_OVERHEAD_BUFFER_FLUSH 1
#define XPUPROF_OVERHEAD_INSTRUMENTATION 2
#define XPUPROF_OVERHEAD_RESOLUTION 3
/* WindowOpener */
#define XPUPROF_WINDOW_OTHER 0
#define XPUPROF_WINDOW_START 1
#define XPUPROF_WINDOW_DELAY 2
#define XPUPROF_WINDOW_TRIGGER 3
#define XPUPROF_WINDOW_ATTACH 4
#define XPUPROF_WINDOW_CUDA_PROFILER_API 5
#define XPUPROF_WINDOW_NVTX 6
#define XPUPROF_WINDOW_EVERY 7
/* Vendor: an open byte; third parties use 0x40 and up and name themselves in vendor_name. */
#define XPUPROF_VENDOR_UNKNOWN 0
#define XPUPROF_VENDOR_NVIDIA 1
#define XPUPROF_VENDOR_AMD 2
#define XPUPROF_VENDOR_INTEL 3
#define XPUPROF_VENDOR_FIRST_THIRD_PARTY 0x40
/* Correlation backends: third parties use 0x100 and up. */
#define XPUPROF_BACKEND_UNCORRELATED 0
#define XPUPROF_BACKEND_CUDA 1
#define XPUPROF_BACKEND_ROCM 2
#define XPUPROF_BACKEND_LEVEL_ZERO 3
#define XPUPROF_BACKEND_FIRST_THIRD_PARTY 0x100
/* The session clock domain; any other number is a source's own clock. */
#define XPUPROF_CLOCK_SESSION 0

/* ---- value types ---- */

/* A string: `len` bytes of UTF-8 at `ptr`, not NUL-terminated when read from a batch. */
typedef struct xpuprof_text {
    const char *ptr;
    size_t len;
} xpuprof_text;

/* A byte string (build ids, UUIDs). */
typedef struct xpuprof_bytes {
    const uint8_t *ptr;
    size_t len;
} xpuprof_bytes;

/* A list of ids. Writers read `items[0..count]`; the reader sets `packed` instead (the encoded
 * list inside the batch): walk either with xpuprof_ids_next. */
typedef struct xpuprof_ids {
    const uint32_t *items;
    uint32_t count;
    const uint8_t *packed;
    size_t packed_len;
} xpuprof_ids;

/* A backend correlation id; `present` = 0 means none. */
typedef struct xpuprof_correlation {
    uint32_t present;
    uint32_t backend;
    uint64_t id;
} xpuprof_correlation;

/* An external correlation id pushed by a framework; `present` = 0 means none. */
typedef struct xpuprof_external_id {
    uint32_t present;
    uint32_t kind;
    uint64_t id;
} xpuprof_external_id;

/* ---- definitions ---- */
typedef struct xpuprof_str_def {
    uint32_t id;
    xpuprof_text text;    /* as the source sent it (a kernel's mangled name) */
    xpuprof_text display; /* the host's text for people (demangled); empty: show `text` */
} xpuprof_str_def;

typedef struct xpuprof_process_def {
    uint32_t pid, ppid;
    uint32_t command; /* string id */
    /* Its place in a job (RANK/LOCAL_RANK/WORLD_SIZE and the MPI and SLURM equivalents, read from
     * its environment by the host); each only when its has_ flag is set. */
    uint8_t has_rank, has_local_rank, has_world_size;
    uint32_t rank, local_rank, world_size;
    uint32_t host; /* string id of its host name; 0 when not known */
    uint32_t name; /* string id of the name outputs show (`rank N (host, pid)`); 0: the command */
} xpuprof_process_def;

typedef struct xpuprof_thread_def {
    uint32_t pid, tid;
    uint32_t name; /* string id */
} xpuprof_thread_def;

typedef struct xpuprof_device_def {
    uint32_t id;
    uint8_t vendor;
    uint32_t index;
    uint32_t name; /* string id */
    uint8_t uuid[16];
    uint32_t compute_units;
    uint64_t memory_bytes;
    uint32_t kind; /* XPUPROF_DEVICE_* */
    uint64_t native_id;
    uint32_t parent; /* device id */
    uint32_t arch, vendor_name; /* string ids */
} xpuprof_device_def;

typedef struct xpuprof_stream_def {
    uint32_t id, device, pid;
    uint64_t native_id;
    uint32_t name; /* string id */
    uint32_t kind; /* XPUPROF_QUEUE_* */
    uint32_t parent; /* stream id */
} xpuprof_stream_def;

typedef struct xpuprof_module_def {
    uint32_t id;
    uint32_t path; /* string id */
    xpuprof_bytes build_id;
} xpuprof_module_def;

typedef struct xpuprof_frame_def {
    uint32_t id;
    uint8_t kind; /* XPUPROF_FRAME_* */
    uint32_t module;
    uint64_t address;
    uint32_t pid;
    uint32_t name;       /* string id; set it for synthetic frames */
    xpuprof_ids inlined; /* string ids, outermost first */
    uint32_t file;       /* string id: source file at the address (0 = unknown) */
    uint32_t line;       /* line at the address (0 = unknown) */
    uint32_t start_line; /* first line of the innermost function (0 = unknown) */
} xpuprof_frame_def;

typedef struct xpuprof_stack_def {
    uint32_t id;
    xpuprof_ids frames; /* frame ids, innermost first */
} xpuprof_stack_def;

typedef struct xpuprof_clock_domain_def {
    uint32_t domain;           /* never XPUPROF_CLOCK_SESSION */
    uint64_t ticks_per_second; /* 0 = nanoseconds */
    uint8_t valid_bits;        /* 0 = 64 */
    uint32_t name;             /* string id */
} xpuprof_clock_domain_def;

/* ---- events ---- */
typedef struct xpuprof_api_call {
    uint32_t pid, tid;
    uint64_t start, end;
    uint32_t name; /* string id */
    xpuprof_correlation correlation;
    int64_t result;
    xpuprof_external_id external;
    uint32_t kind; /* XPUPROF_API_* */
    uint32_t clock;
} xpuprof_api_call;

typedef struct xpuprof_kernel_info {
    uint32_t grid[3], block[3];
    uint32_t shared_memory, registers;
    uint32_t unit; /* XPUPROF_UNIT_* */
    uint32_t vgprs, sgprs, scratch_bytes;
} xpuprof_kernel_info;

typedef struct xpuprof_graph_info {
    uint64_t graph, node;
} xpuprof_graph_info;

/* Set by the host's correlator, never by sources. */
typedef struct xpuprof_launch_ref {
    uint32_t tid;
    uint32_t stack; /* stack id */
    uint32_t api;   /* string id */
    uint64_t time;
} xpuprof_launch_ref;

typedef struct xpuprof_submission {
    uint64_t list;
    xpuprof_correlation record;
    uint64_t execution;
} xpuprof_submission;

typedef struct xpuprof_device_op {
    uint8_t kind; /* XPUPROF_OP_* */
    uint32_t pid, device, stream;
    uint64_t start, end;
    uint32_t clock;
    uint32_t name; /* string id: kernel or operation name */
    uint64_t bytes;
    uint8_t copy; /* XPUPROF_COPY_* */
    xpuprof_correlation correlation;
    uint8_t has_kernel, has_graph, has_launch, has_submission;
    xpuprof_kernel_info kernel;
    xpuprof_graph_info graph;
    xpuprof_launch_ref launch;
    uint32_t src_device, dst_device;
    xpuprof_submission submission;
    /* Set by the host's correlator, never by sources: the call that recorded this work. */
    uint8_t has_recorded;
    xpuprof_launch_ref recorded;
    /* The collective this work implements (XPUPROF_COLLECTIVE_*), and an id of its
     * communicator that is the same on every rank, or 0 when not known. */
    uint8_t collective;
    uint64_t communicator;
} xpuprof_device_op;

typedef struct xpuprof_launch_site {
    uint32_t pid, tid;
    uint64_t time;
    xpuprof_correlation correlation; /* required: `present` must be 1 */
    uint32_t api;   /* string id */
    uint32_t stack; /* stack id */
    uint32_t clock;
    /* 1 when this call recorded work that runs later (a graph node, a regular command list
     * append): device work names it in its submission's `record`. */
    uint8_t recording;
} xpuprof_launch_site;

typedef struct xpuprof_cpu_sample {
    uint32_t pid, tid;
    uint64_t time;
    uint8_t kind; /* XPUPROF_SAMPLE_* */
    uint64_t weight;
    uint32_t stack;
    uint32_t clock;
} xpuprof_cpu_sample;

/* A marker (start == end, tag XPUPROF_TAG_MARKER) or a range (XPUPROF_TAG_RANGE). */
typedef struct xpuprof_annotation {
    uint32_t pid, tid;
    uint64_t start, end;
    uint32_t name, domain; /* string ids */
    uint32_t clock;
} xpuprof_annotation;

typedef struct xpuprof_counter {
    uint32_t pid, device;
    uint64_t time;
    uint32_t name; /* string id */
    double value;
    uint32_t clock;
} xpuprof_counter;

typedef struct xpuprof_loss {
    uint32_t pid;
    uint64_t time;
    uint32_t cause; /* string id: a short stable phrase */
    uint64_t count;
    uint32_t clock;
} xpuprof_loss;

typedef struct xpuprof_clock_sync {
    uint32_t domain;
    uint64_t source_time;
    uint64_t session_time;
} xpuprof_clock_sync;

typedef struct xpuprof_overhead {
    uint32_t pid, tid;
    uint64_t start, end;
    uint32_t kind; /* XPUPROF_OVERHEAD_* */
    uint32_t name, device, clock;
} xpuprof_overhead;

/* A backend retired a correlation id (no device work will carry it any more); the host's
 * correlator consumes it. */
typedef struct xpuprof_retirement {
    uint32_t pid;
    xpuprof_correlation correlation;
    uint64_t time;
    uint32_t clock;
} xpuprof_retirement;

/* A capture window: the sources recorded from start to end, dormant outside every window. */
typedef struct xpuprof_capture_window {
    uint64_t start, end;
    uint32_t opener; /* XPUPROF_WINDOW_* */
    uint32_t pid, clock;
} xpuprof_capture_window;

/* Device PC samples: `count` samples of the instruction at `pc_offset` in `kernel`, stalled on
 * `stall`, taken between start and end; `file`/`line` where the code has a line table;
 * `instruction` (its disassembly) and `call_file`/`call_line` (the outermost call site of
 * inlined code) where known. */
typedef struct xpuprof_device_sample {
    uint32_t pid, device;
    uint64_t start, end;
    uint32_t clock, kernel;
    xpuprof_correlation correlation;
    uint64_t code, pc_offset;
    uint32_t stall;
    uint64_t count;
    uint32_t file, line;
    uint32_t instruction, call_file, call_line;
} xpuprof_device_sample;

/* One decoded record: `tag` says which member is valid. */
typedef struct xpuprof_record {
    uint8_t tag;
    union {
        xpuprof_str_def str;
        xpuprof_process_def process;
        xpuprof_thread_def thread;
        xpuprof_device_def device;
        xpuprof_stream_def stream;
        xpuprof_module_def module;
        xpuprof_frame_def frame;
        xpuprof_stack_def stack;
        xpuprof_clock_domain_def clock_domain;
        xpuprof_api_call api_call;
        xpuprof_device_op device_op;
        xpuprof_launch_site launch_site;
        xpuprof_cpu_sample cpu_sample;
        xpuprof_annotation annotation; /* XPUPROF_TAG_MARKER and XPUPROF_TAG_RANGE */
        xpuprof_counter counter;
        xpuprof_loss loss;
        xpuprof_clock_sync clock_sync;
        xpuprof_overhead overhead;
        xpuprof_retirement retired;
        xpuprof_capture_window window;
        xpuprof_device_sample device_sample;
    } u;
} xpuprof_record;

/* ---- helpers ---- */

/* A NUL-terminated string as xpuprof_text. */
static inline xpuprof_text xpuprof_str(const char *s) {
    xpuprof_text t;
    t.ptr = s;
    t.len = s ? strlen(s) : 0;
    return t;
}

/* An id list over `count` ids at `items`. */
static inline xpuprof_ids xpuprof_id_list(const uint32_t *items, uint32_t count) {
    xpuprof_ids l;
    l.items = items;
    l.count = count;
    l.packed = NULL;
    l.packed_len = 0;
    return l;
}

/* A present correlation. */
static inline xpuprof_correlation xpuprof_corr(uint32_t backend, uint64_t id) {
    xpuprof_correlation c;
    c.present = 1;
    c.backend = backend;
    c.id = id;
    return c;
}

/* Walks an id list: `size_t at = 0; uint32_t id; while (xpuprof_ids_next(&l, &at, &id)) ...` */
static inline int xpuprof_ids_next(const xpuprof_ids *l, size_t *at, uint32_t *id) {
    if (l->packed == NULL) {
        if (l->items == NULL || *at >= l->count) {
            return 0;
        }
        *id = l->items[(*at)++];
        return 1;
    }
    if (*at >= l->packed_len) {
        return 0;
    }
    {
        uint64_t v = 0;
        unsigned shift = 0;
        while (*at < l->packed_len) {
            uint8_t b = l->packed[(*at)++];
            if (shift < 64) {
                v |= (uint64_t)(b & 0x7f) << shift;
            }
            if (!(b & 0x80)) {
                break;
            }
            shift += 7;
        }
        *id = (uint32_t)v;
    }
    return 1;
}

/* ---- writing ---- */

/* A growable buffer of encoded records. Zero-initialise it, or call xpuprof_batch_init. */
typedef struct xpuprof_batch {
    uint8_t *data;
    size_t len, cap;
    int failed; /* set when an allocation failed; the batch then holds the records before it */
} xpuprof_batch;

static inline void xpuprof_batch_init(xpuprof_batch *b) {
    b->data = NULL;
    b->len = b->cap = 0;
    b->failed = 0;
}

/* Empties the batch, keeping its memory. */
static inline void xpuprof_batch_clear(xpuprof_batch *b) {
    b->len = 0;
    b->failed = 0;
}

static inline void xpuprof_batch_free(xpuprof_batch *b) {
    free(b->data);
    xpuprof_batch_init(b);
}

static inline int xpuprof__reserve(xpuprof_batch *b, size_t more) {
    if (b->failed) {
        return -1;
    }
    if (b->len + more > b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 256;
        uint8_t *d;
        while (cap < b->len + more) {
            cap *= 2;
        }
        d = (uint8_t *)realloc(b->data, cap);
        if (d == NULL) {
            b->failed = 1;
            return -1;
        }
        b->data = d;
        b->cap = cap;
    }
    return 0;
}

static inline void xpuprof__byte(xpuprof_batch *b, uint8_t v) {
    if (xpuprof__reserve(b, 1) == 0) {
        b->data[b->len++] = v;
    }
}

static inline void xpuprof__var(xpuprof_batch *b, uint64_t v) {
    if (xpuprof__reserve(b, 10) != 0) {
        return;
    }
    while (v >= 0x80) {
        b->data[b->len++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    b->data[b->len++] = (uint8_t)v;
}

static inline void xpuprof__svar(xpuprof_batch *b, int64_t v) {
    xpuprof__var(b, ((uint64_t)v << 1) ^ (uint64_t)(v >> 63));
}

static inline void xpuprof__raw(xpuprof_batch *b, const void *p, size_t n) {
    if (n > 0 && xpuprof__reserve(b, n) == 0) {
        memcpy(b->data + b->len, p, n);
        b->len += n;
    }
}

static inline void xpuprof__bytes(xpuprof_batch *b, const void *p, size_t n) {
    xpuprof__var(b, n);
    xpuprof__raw(b, p, n);
}

static inline void xpuprof__f64(xpuprof_batch *b, double v) {
    uint64_t bits;
    uint8_t le[8];
    int i;
    memcpy(&bits, &v, 8);
    for (i = 0; i < 8; i++) {
        le[i] = (uint8_t)(bits >> (8 * i));
    }
    xpuprof__raw(b, le, 8);
}

static inline void xpuprof__ids(xpuprof_batch *b, const xpuprof_ids *l) {
    size_t at = 0, n = 0;
    uint32_t id;
    while (xpuprof_ids_next(l, &at, &id)) {
        n++;
    }
    xpuprof__var(b, n);
    at = 0;
    while (xpuprof_ids_next(l, &at, &id)) {
        xpuprof__var(b, id);
    }
}

static inline void xpuprof__opt_corr(xpuprof_batch *b, const xpuprof_correlation *c) {
    if (!c->present) {
        xpuprof__var(b, 0);
        return;
    }
    xpuprof__var(b, (uint64_t)c->backend + 1);
    xpuprof__var(b, c->id);
}

/* Starts a length-prefixed part (a record's payload, a nested value): one byte is reserved for
 * the length; xpuprof__end_len moves longer bodies into place. Returns where the length goes. */
static inline size_t xpuprof__begin_len(xpuprof_batch *b) {
    size_t at = b->len;
    xpuprof__byte(b, 0);
    return at;
}

static inline void xpuprof__end_len(xpuprof_batch *b, size_t at) {
    size_t len, n = 0;
    uint8_t lenbuf[10];
    uint64_t v;
    if (b->failed) {
        return;
    }
    len = b->len - at - 1;
    v = len;
    while (v >= 0x80) {
        lenbuf[n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    lenbuf[n++] = (uint8_t)v;
    if (n > 1) {
        if (xpuprof__reserve(b, n - 1) != 0) {
            return;
        }
        memmove(b->data + at + n, b->data + at + 1, len);
        b->len += n - 1;
    }
    memcpy(b->data + at, lenbuf, n);
}

/* A keyed varint field, written only when it is not 0. */
static inline void xpuprof__key_var(xpuprof_batch *b, uint32_t number, uint64_t v) {
    if (v != 0) {
        xpuprof__var(b, (uint64_t)number << 3 | 0);
        xpuprof__var(b, v);
    }
}

/* A keyed string (wire type 2), written only when it is not empty. */
static inline void xpuprof__key_text(xpuprof_batch *b, uint32_t number, const xpuprof_text *t) {
    if (t->len != 0) {
        xpuprof__var(b, (uint64_t)number << 3 | 2);
        xpuprof__bytes(b, t->ptr, t->len);
    }
}

/* A keyed correlation (wire type 2), written when present. */
static inline void xpuprof__key_corr(xpuprof_batch *b, uint32_t number, const xpuprof_correlation *c) {
    size_t at;
    if (!c->present) {
        return;
    }
    xpuprof__var(b, (uint64_t)number << 3 | 2);
    at = xpuprof__begin_len(b);
    xpuprof__var(b, c->backend);
    xpuprof__var(b, c->id);
    xpuprof__end_len(b, at);
}

static inline int xpuprof__end_record(xpuprof_batch *b, size_t at) {
    xpuprof__end_len(b, at);
    return b->failed ? -1 : 0;
}

#define XPUPROF__BEGIN(b, tag) \
    size_t at_;                \
    xpuprof__byte((b), (tag)); \
    at_ = xpuprof__begin_len(b)

static inline int xpuprof_write_str_def(xpuprof_batch *b, const xpuprof_str_def *r) {
    XPUPROF__BEGIN(b, XPUPROF_TAG_STR);
    xpuprof__var(b, r->id);
    xpuprof__bytes(b, r->text.ptr, r->text.len);
    xpuprof__key_text(b, 1, &r->display);
    return xpuprof__end_record(b, at_);
}

/* Defines string `id` as the NUL-terminated `text`. */
static inline int xpuprof_write_string(xpuprof_batch *b, uint32_t id, const char *text) {
    xpuprof_str_def d;
    d.id = id;
    d.text = xpuprof_str(text);
    d.display.ptr = NULL;
    d.display.len = 0;
    return xpuprof_write_str_def(b, &d);
}

static inline int xpuprof_write_process_def(xpuprof_batch *b, const xpuprof_process_def *r) {
    XPUPROF__BEGIN(b, XPUPROF_TAG_PROCESS);
    xpuprof__var(b, r->pid);
    xpuprof__var(b, r->ppid);
    xpuprof__var(b, r->command);
    if (r->has_rank) {
        xpuprof__var(b, (uint64_t)1 << 3 | 0);
        xpuprof__var(b, r->rank);
    }
    if (r->has_local_rank) {
        xpuprof__var(b, (uint64_t)2 << 3 | 0);
        xpuprof__var(b, r->local_rank);
    }
    if (r->has_world_size) {
        xpuprof__var(b, (uint64_t)3 << 3 | 0);
        xpuprof__var(b, r->world_size);
    }
    xpuprof__key_var(b, 4, r->host);
    xpuprof__key_var(b, 5, r->name);
    return xpuprof__end_record(b, at_);
}

static inline int xpuprof_write_thread_def(xpuprof_batch *b, const xpuprof_thread_def *r) {
    XPUPROF__BEGIN(b, XPUPROF_TAG_THREAD);
    xpuprof__var(b, r->pid);
    xpuprof__var(b, r->tid);
    xpuprof__var(b, r->name);
    return xpuprof__end_record(b, at_);
}

static inline int xpuprof_write_device_def(xpuprof_batch *b, const xpuprof_device_def *r) {
    XPUPROF__BEGIN(b, XPUPROF_TAG_DEVICE);
    xpuprof__var(b, r->id);
    xpuprof__byte(b, r->vendor);
    xpuprof__var(b, r->index);
    xpuprof__var(b, r->name);
    xpuprof__bytes(b, r->uuid, 16);
    xpuprof__var(b, r->compute_units);
    xpuprof__var(b, r->memory_bytes);
    xpuprof__key_var(b, 1, r->kind);
    xpuprof__key_var(b, 2, r->native_id);
    xpuprof__key_var(b, 3, r->parent);
    xpuprof__key_var(b, 4, r->arch);
    xpuprof__key_var(b, 5, r->vendor_name);
    return xpuprof__end_record(b, at_);
}

static inline int xpuprof_write_stream_def(xpuprof_batch *b, const xpuprof_stream_def *r) {
    XPUPROF__BEGIN(b, XPUPROF_TAG_STREAM);
    xpuprof__var(b, r->id);
    xpuprof__var(b, r->device);
    xpuprof__var(b, r->pid);
    xpuprof__var(b, r->native_id);
    xpuprof__var(b, r->name);
    xpuprof__key_var(b, 1, r->kind);
    xpuprof__key_var(b, 2, r->parent);
    return xpuprof__end_record(b, at_);
}

static inline int xpuprof_write_module_def(xpuprof_batch *b, const xpuprof_module_def *r) {
    XPUPROF__BEGIN(b, XPUPROF_TAG_MODULE);
    xpuprof__var(b, r->id);
    xpuprof__var(b, r->path);
    xpuprof__bytes(b, r->build_id.ptr, r->build_id.len);
    return xpuprof__end_record(b, at_);
}

static inline int xpuprof_write_frame_def(xpuprof_batch *b, const xpuprof_frame_def *r) {
    XPUPROF__BEGIN(b, XPUPROF_TAG_FRAME);
    xpuprof__var(b, r->id);
    xpuprof__byte(b, r->kind);
    xpuprof__var(b, r->module);
    xpuprof__var(b, r->address);
    xpuprof__var(b, r->pid);
    xpuprof__var(b, r->name);
    xpuprof__ids(b, &r->inlined);
    xpuprof__key_var(b, 1, r->file);
    xpuprof__key_var(b, 2, r->line);
    xpuprof__key_var(b, 3, r->start_line);
    return xpuprof__end_record(b, at_);
}

static inline int xpuprof_write_stack_def(xpuprof_batch *b, const xpuprof_stack_def *r) {
    XPUPROF__BEGIN(b, XPUPROF_TAG_STACK);
    xpuprof__var(b, r->id);
    xpuprof__ids(b, &r->frames);
    return xpuprof__end_record(b, at_);
}

static inline int xpuprof_write_clock_domain_def(xpuprof_batch *b, const xpuprof_clock_domain_def *r) {
    XPUPROF__BEGIN(b, XPUPROF_TAG_CLOCK_DOMAIN);
    xpuprof__key_var(b, 1, r->domain);
    xpuprof__key_var(b, 2, r->ticks_per_second);
    xpuprof__key_var(b, 3, r->valid_bits);
    xpuprof__key_var(b, 4, r->name);
    return xpuprof__end_record(b, at_);
}

static inline int xpuprof_write_api_call(xpuprof_batch *b, const xpuprof_api_call *r) {
    XPUPROF__BEGIN(b, XPUPROF_TAG_API_CALL);
    xpuprof__var(b, r->pid);
    xpuprof__var(b, r->tid);
    xpuprof__var(b, r->start);
    xpuprof__var(b, r->end > r->start ? r->end - r->start : 0);
    xpuprof__var(b, r->name);
    xpuprof__opt_corr(b, &r->correlation);
    xpuprof__svar(b, r->result);
    if (r->external.present) {
        xpuprof__var(b, (uint64_t)r->external.kind + 1);
        xpuprof__var(b, r->external.id);
    } else {
        xpuprof__var(b, 0);
    }
    xpuprof__key_var(b, 1, r->kind);
    xpuprof__key_var(b, 2, r->clock);
    return xpuprof__end_record(b, at_);
}

/* The keyed fields of a kernel group (written inside keyed field 1 of a device op). */
static inline void xpuprof__kernel_ext(xpuprof_batch *b, const xpuprof_kernel_info *k) {
    size_t at;
    if (!(k->unit || k->vgprs || k->sgprs || k->scratch_bytes)) {
        return;
    }
    xpuprof__var(b, (uint64_t)1 << 3 | 2);
    at = xpuprof__begin_len(b);
    xpuprof__key_var(b, 1, k->unit);
    xpuprof__key_var(b, 2, k->vgprs);
    xpuprof__key_var(b, 3, k->sgprs);
    xpuprof__key_var(b, 4, k->scratch_bytes);
    xpuprof__end_len(b, at);
}

static inline void xpuprof__launch_ref(xpuprof_batch *b, const xpuprof_launch_ref *l) {
    xpuprof__var(b, l->tid);
    xpuprof__var(b, l->stack);
    xpuprof__var(b, l->api);
    xpuprof__var(b, l->time);
}

static inline int xpuprof_write_device_op(xpuprof_batch *b, const xpuprof_device_op *r) {
    int i;
    XPUPROF__BEGIN(b, XPUPROF_TAG_DEVICE_OP);
    xpuprof__byte(b, r->kind);
    xpuprof__var(b, r->pid);
    xpuprof__var(b, r->device);
    xpuprof__var(b, r->stream);
    xpuprof__var(b, r->start);
    xpuprof__var(b, r->end > r->start ? r->end - r->start : 0);
    xpuprof__var(b, r->clock);
    xpuprof__var(b, r->name);
    xpuprof__var(b, r->bytes);
    xpuprof__byte(b, r->copy);
    xpuprof__opt_corr(b, &r->correlation);
    xpuprof__byte(b, (uint8_t)((r->has_kernel ? 1 : 0) | (r->has_graph ? 2 : 0) | (r->has_launch ? 4 : 0)));
    if (r->has_kernel) {
        for (i = 0; i < 3; i++) {
            xpuprof__var(b, r->kernel.grid[i]);
        }
        for (i = 0; i < 3; i++) {
            xpuprof__var(b, r->kernel.block[i]);
        }
        xpuprof__var(b, r->kernel.shared_memory);
        xpuprof__var(b, r->kernel.registers);
    }
    if (r->has_graph) {
        xpuprof__var(b, r->graph.graph);
        xpuprof__var(b, r->graph.node);
    }
    if (r->has_launch) {
        xpuprof__launch_ref(b, &r->launch);
    }
    if (r->has_kernel) {
        xpuprof__kernel_ext(b, &r->kernel);
    }
    xpuprof__key_var(b, 2, r->src_device);
    xpuprof__key_var(b, 3, r->dst_device);
    if (r->has_submission) {
        size_t at;
        xpuprof__var(b, (uint64_t)4 << 3 | 2);
        at = xpuprof__begin_len(b);
        xpuprof__key_var(b, 1, r->submission.list);
        xpuprof__key_corr(b, 2, &r->submission.record);
        xpuprof__key_var(b, 3, r->submission.execution);
        xpuprof__end_len(b, at);
    }
    if (r->has_recorded) {
        size_t at;
        xpuprof__var(b, (uint64_t)7 << 3 | 2);
        at = xpuprof__begin_len(b);
        xpuprof__launch_ref(b, &r->recorded);
        xpuprof__end_len(b, at);
    }
    xpuprof__key_var(b, 8, r->collective);
    xpuprof__key_var(b, 9, r->communicator);
    return xpuprof__end_record(b, at_);
}

static inline int xpuprof_write_launch_site(xpuprof_batch *b, const xpuprof_launch_site *r) {
    XPUPROF__BEGIN(b, XPUPROF_TAG_LAUNCH_SITE);
    xpuprof__var(b, r->pid);
    xpuprof__var(b, r->tid);
    xpuprof__var(b, r->time);
    xpuprof__var(b, (uint64_t)r->correlation.backend + 1);
    xpuprof__var(b, r->correlation.id);
    xpuprof__var(b, r->api);
    xpuprof__var(b, r->stack);
    xpuprof__key_var(b, 1, r->clock);
    xpuprof__key_var(b, 2, r->recording);
    return xpuprof__end_record(b, at_);
}

static inline int xpuprof_write_cpu_sample(xpuprof_batch *b, const xpuprof_cpu_sample *r) {
    XPUPROF__BEGIN(b, XPUPROF_TAG_CPU_SAMPLE);
    xpuprof__var(b, r->pid);
    xpuprof__var(b, r->tid);
    xpuprof__var(b, r->time);
    xpuprof__byte(b, r->kind);
    xpuprof__var(b, r->weight);
    xpuprof__var(b, r->stack);
    xpuprof__key_var(b, 1, r->clock);
    return xpuprof__end_record(b, at_);
}

/* Writes a marker (tag XPUPROF_TAG_MARKER) or a range (XPUPROF_TAG_RANGE). */
static inline int xpuprof_write_annotation(xpuprof_batch *b, uint8_t tag, const xpuprof_annotation *r) {
    XPUPROF__BEGIN(b, tag);
    xpuprof__var(b, r->pid);
    xpuprof__var(b, r->tid);
    xpuprof__var(b, r->start);
    xpuprof__var(b, r->end > r->start ? r->end - r->start : 0);
    xpuprof__var(b, r->name);
    xpuprof__var(b, r->domain);
    xpuprof__key_var(b, 1, r->clock);
    return xpuprof__end_record(b, at_);
}

static inline int xpuprof_write_counter(xpuprof_batch *b, const xpuprof_counter *r) {
    XPUPROF__BEGIN(b, XPUPROF_TAG_COUNTER);
    xpuprof__var(b, r->pid);
    xpuprof__var(b, r->device);
    xpuprof__var(b, r->time);
    xpuprof__var(b, r->name);
    xpuprof__f64(b, r->value);
    xpuprof__key_var(b, 1, r->clock);
    return xpuprof__end_record(b, at_);
}

static inline int xpuprof_write_loss(xpuprof_batch *b, const xpuprof_loss *r) {
    XPUPROF__BEGIN(b, XPUPROF_TAG_LOSS);
    xpuprof__var(b, r->pid);
    xpuprof__var(b, r->time);
    xpuprof__var(b, r->cause);
    xpuprof__var(b, r->count);
    xpuprof__key_var(b, 1, r->clock);
    return xpuprof__end_record(b, at_);
}

static inline int xpuprof_write_clock_sync(xpuprof_batch *b, const xpuprof_clock_sync *r) {
    XPUPROF__BEGIN(b, XPUPROF_TAG_CLOCK_SYNC);
    xpuprof__var(b, r->domain);
    xpuprof__var(b, r->source_time);
    xpuprof__var(b, r->session_time);
    return xpuprof__end_record(b, at_);
}

static inline int xpuprof_write_overhead(xpuprof_batch *b, const xpuprof_overhead *r) {
    XPUPROF__BEGIN(b, XPUPROF_TAG_OVERHEAD);
    xpuprof__key_var(b, 1, r->pid);
    xpuprof__key_var(b, 2, r->tid);
    xpuprof__key_var(b, 3, r->start);
    xpuprof__key_var(b, 4, r->end);
    xpuprof__key_var(b, 5, r->kind);
    xpuprof__key_var(b, 6, r->name);
    xpuprof__key_var(b, 7, r->device);
    xpuprof__key_var(b, 8, r->clock);
    return xpuprof__end_record(b, at_);
}

static inline int xpuprof_write_retired(xpuprof_batch *b, const xpuprof_retirement *r) {
    XPUPROF__BEGIN(b, XPUPROF_TAG_RETIRED);
    xpuprof__key_var(b, 1, r->pid);
    xpuprof__key_corr(b, 2, &r->correlation);
    xpuprof__key_var(b, 3, r->time);
    xpuprof__key_var(b, 4, r->clock);
    return xpuprof__end_record(b, at_);
}

static inline int xpuprof_write_window(xpuprof_batch *b, const xpuprof_capture_window *r) {
    XPUPROF__BEGIN(b, XPUPROF_TAG_WINDOW);
    xpuprof__key_var(b, 1, r->start);
    xpuprof__key_var(b, 2, r->end);
    xpuprof__key_var(b, 3, r->opener);
    xpuprof__key_var(b, 4, r->pid);
    xpuprof__key_var(b, 5, r->clock);
    return xpuprof__end_record(b, at_);
}

static inline int xpuprof_write_device_sample(xpuprof_batch *b, const xpuprof_device_sample *r) {
    XPUPROF__BEGIN(b, XPUPROF_TAG_DEVICE_SAMPLE);
    xpuprof__key_var(b, 1, r->pid);
    xpuprof__key_var(b, 2, r->device);
    xpuprof__key_var(b, 3, r->start);
    xpuprof__key_var(b, 4, r->end);
    xpuprof__key_var(b, 5, r->clock);
    xpuprof__key_var(b, 6, r->kernel);
    xpuprof__key_corr(b, 7, &r->correlation);
    xpuprof__key_var(b, 8, r->code);
    xpuprof__key_var(b, 9, r->pc_offset);
    xpuprof__key_var(b, 10, r->stall);
    xpuprof__key_var(b, 11, r->count);
    xpuprof__key_var(b, 12, r->file);
    xpuprof__key_var(b, 13, r->line);
    xpuprof__key_var(b, 14, r->instruction);
    xpuprof__key_var(b, 15, r->call_file);
    xpuprof__key_var(b, 16, r->call_line);
    return xpuprof__end_record(b, at_);
}

/* Writes any decoded record back (what a filter or a test round trip needs). */
static inline int xpuprof_write_record(xpuprof_batch *b, const xpuprof_record *r) {
    switch (r->tag) {
    case XPUPROF_TAG_STR: return xpuprof_write_str_def(b, &r->u.str);
    case XPUPROF_TAG_PROCESS: return xpuprof_write_process_def(b, &r->u.process);
    case XPUPROF_TAG_THREAD: return xpuprof_write_thread_def(b, &r->u.thread);
    case XPUPROF_TAG_DEVICE: return xpuprof_write_device_def(b, &r->u.device);
    case XPUPROF_TAG_STREAM: return xpuprof_write_stream_def(b, &r->u.stream);
    case XPUPROF_TAG_MODULE: return xpuprof_write_module_def(b, &r->u.module);
    case XPUPROF_TAG_FRAME: return xpuprof_write_frame_def(b, &r->u.frame);
    case XPUPROF_TAG_STACK: return xpuprof_write_stack_def(b, &r->u.stack);
    case XPUPROF_TAG_CLOCK_DOMAIN: return xpuprof_write_clock_domain_def(b, &r->u.clock_domain);
    case XPUPROF_TAG_API_CALL: return xpuprof_write_api_call(b, &r->u.api_call);
    case XPUPROF_TAG_DEVICE_OP: return xpuprof_write_device_op(b, &r->u.device_op);
    case XPUPROF_TAG_LAUNCH_SITE: return xpuprof_write_launch_site(b, &r->u.launch_site);
    case XPUPROF_TAG_CPU_SAMPLE: return xpuprof_write_cpu_sample(b, &r->u.cpu_sample);
    case XPUPROF_TAG_MARKER:
    case XPUPROF_TAG_RANGE: return xpuprof_write_annotation(b, r->tag, &r->u.annotation);
    case XPUPROF_TAG_COUNTER: return xpuprof_write_counter(b, &r->u.counter);
    case XPUPROF_TAG_LOSS: return xpuprof_write_loss(b, &r->u.loss);
    case XPUPROF_TAG_CLOCK_SYNC: return xpuprof_write_clock_sync(b, &r->u.clock_sync);
    case XPUPROF_TAG_OVERHEAD: return xpuprof_write_overhead(b, &r->u.overhead);
    case XPUPROF_TAG_RETIRED: return xpuprof_write_retired(b, &r->u.retired);
    case XPUPROF_TAG_WINDOW: return xpuprof_write_window(b, &r->u.window);
    case XPUPROF_TAG_DEVICE_SAMPLE: return xpuprof_write_device_sample(b, &r->u.device_sample);
    default: return -1;
    }
}

/* ---- reading ---- */

typedef struct xpuprof__cur {
    const uint8_t *p, *end;
    const char *bad;
} xpuprof__cur;

static inline uint64_t xpuprof__rvar(xpuprof__cur *c) {
    uint64_t v = 0;
    unsigned shift = 0;
    while (c->p < c->end) {
        uint8_t b = *c->p++;
        if (shift >= 64) {
            if (!c->bad) c->bad = "overlong varint";
            return 0;
        }
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            return v;
        }
        shift += 7;
    }
    if (shift > 0 && !c->bad) {
        c->bad = "varint runs past the end of the record";
    }
    return v;
}

static inline uint32_t xpuprof__ru32(xpuprof__cur *c) {
    uint64_t v = xpuprof__rvar(c);
    if (v > 0xffffffffu) {
        if (!c->bad) c->bad = "value too large for a 32-bit field";
        return 0;
    }
    return (uint32_t)v;
}

static inline uint8_t xpuprof__ru8(xpuprof__cur *c) {
    return c->p < c->end ? *c->p++ : 0;
}

static inline xpuprof_bytes xpuprof__rbytes(xpuprof__cur *c) {
    xpuprof_bytes r = {NULL, 0};
    uint64_t n = xpuprof__rvar(c);
    if (n > (uint64_t)(c->end - c->p)) {
        if (!c->bad) c->bad = "byte string runs past the end of the record";
        c->p = c->end;
        return r;
    }
    r.ptr = c->p;
    r.len = (size_t)n;
    c->p += n;
    return r;
}

static inline xpuprof_text xpuprof__rtext(xpuprof__cur *c) {
    xpuprof_bytes b = xpuprof__rbytes(c);
    xpuprof_text t;
    t.ptr = (const char *)b.ptr;
    t.len = b.len;
    return t;
}

static inline double xpuprof__rf64(xpuprof__cur *c) {
    uint64_t bits = 0;
    double v;
    int i;
    for (i = 0; i < 8; i++) {
        bits |= (uint64_t)xpuprof__ru8(c) << (8 * i);
    }
    memcpy(&v, &bits, 8);
    return v;
}

static inline xpuprof_ids xpuprof__rids(xpuprof__cur *c) {
    xpuprof_ids l = {NULL, 0, NULL, 0};
    uint64_t n = xpuprof__rvar(c);
    const uint8_t *start;
    uint64_t i;
    if (n > (uint64_t)(c->end - c->p)) {
        if (!c->bad) c->bad = "id list longer than its record";
        return l;
    }
    start = c->p;
    for (i = 0; i < n; i++) {
        xpuprof__ru32(c);
    }
    l.count = (uint32_t)n;
    l.packed = start;
    l.packed_len = (size_t)(c->p - start);
    return l;
}

static inline xpuprof_correlation xpuprof__ropt_corr(xpuprof__cur *c) {
    xpuprof_correlation r = {0, 0, 0};
    uint64_t b = xpuprof__rvar(c);
    if (b != 0) {
        r.present = 1;
        r.backend = (uint32_t)(b - 1);
        r.id = xpuprof__rvar(c);
    }
    return r;
}

static inline void xpuprof__skip(xpuprof__cur *c, unsigned ty) {
    switch (ty) {
    case 0: xpuprof__rvar(c); break;
    case 1: c->p = (c->end - c->p) < 8 ? c->end : c->p + 8; break;
    case 2: xpuprof__rbytes(c); break;
    default:
        if (!c->bad) c->bad = "unknown wire type in a keyed field";
        c->p = c->end;
    }
}

/* Reads the next keyed field's key; 0 at the end of the part. */
static inline int xpuprof__key(xpuprof__cur *c, uint32_t *number, unsigned *ty) {
    uint64_t k;
    if (c->p >= c->end || c->bad) {
        return 0;
    }
    k = xpuprof__rvar(c);
    *number = (uint32_t)(k >> 3);
    *ty = (unsigned)(k & 7);
    return 1;
}

/* A keyed varint value of the expected wire type 0; other types are skipped (value 0). */
static inline uint64_t xpuprof__kvar(xpuprof__cur *c, unsigned ty) {
    if (ty != 0) {
        xpuprof__skip(c, ty);
        return 0;
    }
    return xpuprof__rvar(c);
}

static inline uint32_t xpuprof__ku32(xpuprof__cur *c, unsigned ty) {
    if (ty != 0) {
        xpuprof__skip(c, ty);
        return 0;
    }
    return xpuprof__ru32(c);
}

/* Opens a nested wire-type-2 value as a sub-cursor; NULL-range when the type is wrong. */
static inline xpuprof__cur xpuprof__sub(xpuprof__cur *c, unsigned ty) {
    xpuprof__cur s = {NULL, NULL, NULL};
    xpuprof_bytes b;
    if (ty != 2) {
        xpuprof__skip(c, ty);
        return s;
    }
    b = xpuprof__rbytes(c);
    s.p = b.ptr;
    s.end = b.ptr + b.len;
    return s;
}

static inline void xpuprof__merge_bad(xpuprof__cur *c, const xpuprof__cur *s) {
    if (s->bad && !c->bad) {
        c->bad = s->bad;
    }
}

static inline void xpuprof__read_launch_ref(xpuprof__cur *c, xpuprof_launch_ref *l) {
    l->tid = xpuprof__ru32(c);
    l->stack = xpuprof__ru32(c);
    l->api = xpuprof__ru32(c);
    l->time = xpuprof__rvar(c);
}

static inline void xpuprof__read_device_op(xpuprof__cur *c, xpuprof_device_op *r) {
    uint8_t flags;
    uint32_t n;
    unsigned ty;
    int i;
    r->kind = xpuprof__ru8(c);
    r->pid = xpuprof__ru32(c);
    r->device = xpuprof__ru32(c);
    r->stream = xpuprof__ru32(c);
    r->start = xpuprof__rvar(c);
    r->end = r->start + xpuprof__rvar(c);
    r->clock = xpuprof__ru32(c);
    r->name = xpuprof__ru32(c);
    r->bytes = xpuprof__rvar(c);
    r->copy = xpuprof__ru8(c);
    r->correlation = xpuprof__ropt_corr(c);
    flags = xpuprof__ru8(c);
    r->has_kernel = flags & 1;
    r->has_graph = (flags >> 1) & 1;
    r->has_launch = (flags >> 2) & 1;
    if (r->has_kernel) {
        for (i = 0; i < 3; i++) r->kernel.grid[i] = xpuprof__ru32(c);
        for (i = 0; i < 3; i++) r->kernel.block[i] = xpuprof__ru32(c);
        r->kernel.shared_memory = xpuprof__ru32(c);
        r->kernel.registers = xpuprof__ru32(c);
    }
    if (r->has_graph) {
        r->graph.graph = xpuprof__rvar(c);
        r->graph.node = xpuprof__rvar(c);
    }
    if (r->has_launch) {
        xpuprof__read_launch_ref(c, &r->launch);
    }
    while (xpuprof__key(c, &n, &ty)) {
        if (n == 1) {
            xpuprof__cur s = xpuprof__sub(c, ty);
            uint32_t m;
            unsigned t2;
            while (xpuprof__key(&s, &m, &t2)) {
                if (m == 1) r->kernel.unit = xpuprof__ku32(&s, t2);
                else if (m == 2) r->kernel.vgprs = xpuprof__ku32(&s, t2);
                else if (m == 3) r->kernel.sgprs = xpuprof__ku32(&s, t2);
                else if (m == 4) r->kernel.scratch_bytes = xpuprof__ku32(&s, t2);
                else xpuprof__skip(&s, t2);
            }
            xpuprof__merge_bad(c, &s);
        } else if (n == 2) {
            r->src_device = xpuprof__ku32(c, ty);
        } else if (n == 3) {
            r->dst_device = xpuprof__ku32(c, ty);
        } else if (n == 4) {
            xpuprof__cur s = xpuprof__sub(c, ty);
            uint32_t m;
            unsigned t2;
            if (ty == 2) r->has_submission = 1;
            while (xpuprof__key(&s, &m, &t2)) {
                if (m == 1) {
                    r->submission.list = xpuprof__kvar(&s, t2);
                } else if (m == 2) {
                    xpuprof__cur s2 = xpuprof__sub(&s, t2);
                    if (t2 == 2) {
                        r->submission.record.present = 1;
                        r->submission.record.backend = xpuprof__ru32(&s2);
                        r->submission.record.id = xpuprof__rvar(&s2);
                    }
                    xpuprof__merge_bad(&s, &s2);
                } else if (m == 3) {
                    r->submission.execution = xpuprof__kvar(&s, t2);
                } else {
                    xpuprof__skip(&s, t2);
                }
            }
            xpuprof__merge_bad(c, &s);
        } else if (n == 7 && ty == 2) {
            xpuprof__cur s = xpuprof__sub(c, ty);
            r->has_recorded = 1;
            xpuprof__read_launch_ref(&s, &r->recorded);
            xpuprof__merge_bad(c, &s);
        } else if (n == 8) {
            r->collective = (uint8_t)xpuprof__ku32(c, ty);
        } else if (n == 9) {
            r->communicator = xpuprof__kvar(c, ty);
        } else {
            /* 5 and 6: keyed parts of the graph and launch groups (none defined yet). */
            xpuprof__skip(c, ty);
        }
    }
}

/* Decodes the payload of a record with tag `tag` into `r`; 0 when the tag is unknown. */
static inline int xpuprof__read_payload(xpuprof__cur *c, uint8_t tag, xpuprof_record *r) {
    uint32_t n;
    unsigned ty;
    memset(r, 0, sizeof *r);
    r->tag = tag;
    switch (tag) {
    case XPUPROF_TAG_STR:
        r->u.str.id = xpuprof__ru32(c);
        r->u.str.text = xpuprof__rtext(c);
        while (xpuprof__key(c, &n, &ty)) {
            if (n == 1 && ty == 2) r->u.str.display = xpuprof__rtext(c);
            else xpuprof__skip(c, ty);
        }
        break;
    case XPUPROF_TAG_PROCESS:
        r->u.process.pid = xpuprof__ru32(c);
        r->u.process.ppid = xpuprof__ru32(c);
        r->u.process.command = xpuprof__ru32(c);
        while (xpuprof__key(c, &n, &ty)) {
            xpuprof_process_def *p = &r->u.process;
            if (n == 1 && ty == 0) {
                p->has_rank = 1;
                p->rank = xpuprof__ru32(c);
            } else if (n == 2 && ty == 0) {
                p->has_local_rank = 1;
                p->local_rank = xpuprof__ru32(c);
            } else if (n == 3 && ty == 0) {
                p->has_world_size = 1;
                p->world_size = xpuprof__ru32(c);
            } else if (n == 4) {
                p->host = xpuprof__ku32(c, ty);
            } else if (n == 5) {
                p->name = xpuprof__ku32(c, ty);
            } else {
                xpuprof__skip(c, ty);
            }
        }
        break;
    case XPUPROF_TAG_THREAD:
        r->u.thread.pid = xpuprof__ru32(c);
        r->u.thread.tid = xpuprof__ru32(c);
        r->u.thread.name = xpuprof__ru32(c);
        break;
    case XPUPROF_TAG_DEVICE: {
        xpuprof_device_def *d = &r->u.device;
        xpuprof_bytes uuid;
        d->id = xpuprof__ru32(c);
        d->vendor = xpuprof__ru8(c);
        d->index = xpuprof__ru32(c);
        d->name = xpuprof__ru32(c);
        uuid = xpuprof__rbytes(c);
        if (uuid.len > 0) memcpy(d->uuid, uuid.ptr, uuid.len < 16 ? uuid.len : 16);
        d->compute_units = xpuprof__ru32(c);
        d->memory_bytes = xpuprof__rvar(c);
        while (xpuprof__key(c, &n, &ty)) {
            if (n == 1) d->kind = xpuprof__ku32(c, ty);
            else if (n == 2) d->native_id = xpuprof__kvar(c, ty);
            else if (n == 3) d->parent = xpuprof__ku32(c, ty);
            else if (n == 4) d->arch = xpuprof__ku32(c, ty);
            else if (n == 5) d->vendor_name = xpuprof__ku32(c, ty);
            else xpuprof__skip(c, ty);
        }
        break;
    }
    case XPUPROF_TAG_STREAM: {
        xpuprof_stream_def *s = &r->u.stream;
        s->id = xpuprof__ru32(c);
        s->device = xpuprof__ru32(c);
        s->pid = xpuprof__ru32(c);
        s->native_id = xpuprof__rvar(c);
        s->name = xpuprof__ru32(c);
        while (xpuprof__key(c, &n, &ty)) {
            if (n == 1) s->kind = xpuprof__ku32(c, ty);
            else if (n == 2) s->parent = xpuprof__ku32(c, ty);
            else xpuprof__skip(c, ty);
        }
        break;
    }
    case XPUPROF_TAG_MODULE:
        r->u.module.id = xpuprof__ru32(c);
        r->u.module.path = xpuprof__ru32(c);
        r->u.module.build_id = xpuprof__rbytes(c);
        break;
    case XPUPROF_TAG_FRAME: {
        xpuprof_frame_def *f = &r->u.frame;
        f->id = xpuprof__ru32(c);
        f->kind = xpuprof__ru8(c);
        f->module = xpuprof__ru32(c);
        f->address = xpuprof__rvar(c);
        f->pid = xpuprof__ru32(c);
        f->name = xpuprof__ru32(c);
        f->inlined = xpuprof__rids(c);
        while (xpuprof__key(c, &n, &ty)) {
            if (n == 1) f->file = xpuprof__ku32(c, ty);
            else if (n == 2) f->line = xpuprof__ku32(c, ty);
            else if (n == 3) f->start_line = xpuprof__ku32(c, ty);
            else xpuprof__skip(c, ty);
        }
        break;
    }
    case XPUPROF_TAG_STACK:
        r->u.stack.id = xpuprof__ru32(c);
        r->u.stack.frames = xpuprof__rids(c);
        break;
    case XPUPROF_TAG_CLOCK_DOMAIN: {
        xpuprof_clock_domain_def *d = &r->u.clock_domain;
        while (xpuprof__key(c, &n, &ty)) {
            if (n == 1) d->domain = xpuprof__ku32(c, ty);
            else if (n == 2) d->ticks_per_second = xpuprof__kvar(c, ty);
            else if (n == 3) d->valid_bits = (uint8_t)xpuprof__ku32(c, ty);
            else if (n == 4) d->name = xpuprof__ku32(c, ty);
            else xpuprof__skip(c, ty);
        }
        break;
    }
    case XPUPROF_TAG_API_CALL: {
        xpuprof_api_call *a = &r->u.api_call;
        uint64_t k;
        a->pid = xpuprof__ru32(c);
        a->tid = xpuprof__ru32(c);
        a->start = xpuprof__rvar(c);
        a->end = a->start + xpuprof__rvar(c);
        a->name = xpuprof__ru32(c);
        a->correlation = xpuprof__ropt_corr(c);
        k = xpuprof__rvar(c);
        a->result = (int64_t)(k >> 1) ^ -(int64_t)(k & 1);
        k = xpuprof__rvar(c);
        if (k != 0) {
            a->external.present = 1;
            a->external.kind = (uint32_t)(k - 1);
            a->external.id = xpuprof__rvar(c);
        }
        while (xpuprof__key(c, &n, &ty)) {
            if (n == 1) a->kind = xpuprof__ku32(c, ty);
            else if (n == 2) a->clock = xpuprof__ku32(c, ty);
            else xpuprof__skip(c, ty);
        }
        break;
    }
    case XPUPROF_TAG_DEVICE_OP:
        xpuprof__read_device_op(c, &r->u.device_op);
        break;
    case XPUPROF_TAG_LAUNCH_SITE: {
        xpuprof_launch_site *l = &r->u.launch_site;
        l->pid = xpuprof__ru32(c);
        l->tid = xpuprof__ru32(c);
        l->time = xpuprof__rvar(c);
        l->correlation = xpuprof__ropt_corr(c);
        if (!l->correlation.present && !c->bad) c->bad = "record without its required correlation id";
        l->api = xpuprof__ru32(c);
        l->stack = xpuprof__ru32(c);
        while (xpuprof__key(c, &n, &ty)) {
            if (n == 1) l->clock = xpuprof__ku32(c, ty);
            else if (n == 2) l->recording = xpuprof__kvar(c, ty) != 0;
            else xpuprof__skip(c, ty);
        }
        break;
    }
    case XPUPROF_TAG_CPU_SAMPLE: {
        xpuprof_cpu_sample *s = &r->u.cpu_sample;
        s->pid = xpuprof__ru32(c);
        s->tid = xpuprof__ru32(c);
        s->time = xpuprof__rvar(c);
        s->kind = xpuprof__ru8(c);
        s->weight = xpuprof__rvar(c);
        s->stack = xpuprof__ru32(c);
        while (xpuprof__key(c, &n, &ty)) {
            if (n == 1) s->clock = xpuprof__ku32(c, ty);
            else xpuprof__skip(c, ty);
        }
        break;
    }
    case XPUPROF_TAG_MARKER:
    case XPUPROF_TAG_RANGE: {
        xpuprof_annotation *a = &r->u.annotation;
        a->pid = xpuprof__ru32(c);
        a->tid = xpuprof__ru32(c);
        a->start = xpuprof__rvar(c);
        a->end = a->start + xpuprof__rvar(c);
        a->name = xpuprof__ru32(c);
        a->domain = xpuprof__ru32(c);
        while (xpuprof__key(c, &n, &ty)) {
            if (n == 1) a->clock = xpuprof__ku32(c, ty);
            else xpuprof__skip(c, ty);
        }
        break;
    }
    case XPUPROF_TAG_COUNTER: {
        xpuprof_counter *k = &r->u.counter;
        k->pid = xpuprof__ru32(c);
        k->device = xpuprof__ru32(c);
        k->time = xpuprof__rvar(c);
        k->name = xpuprof__ru32(c);
        k->value = xpuprof__rf64(c);
        while (xpuprof__key(c, &n, &ty)) {
            if (n == 1) k->clock = xpuprof__ku32(c, ty);
            else xpuprof__skip(c, ty);
        }
        break;
    }
    case XPUPROF_TAG_LOSS: {
        xpuprof_loss *l = &r->u.loss;
        l->pid = xpuprof__ru32(c);
        l->time = xpuprof__rvar(c);
        l->cause = xpuprof__ru32(c);
        l->count = xpuprof__rvar(c);
        while (xpuprof__key(c, &n, &ty)) {
            if (n == 1) l->clock = xpuprof__ku32(c, ty);
            else xpuprof__skip(c, ty);
        }
        break;
    }
    case XPUPROF_TAG_CLOCK_SYNC:
        r->u.clock_sync.domain = xpuprof__ru32(c);
        r->u.clock_sync.source_time = xpuprof__rvar(c);
        r->u.clock_sync.session_time = xpuprof__rvar(c);
        break;
    case XPUPROF_TAG_OVERHEAD: {
        xpuprof_overhead *o = &r->u.overhead;
        while (xpuprof__key(c, &n, &ty)) {
            if (n == 1) o->pid = xpuprof__ku32(c, ty);
            else if (n == 2) o->tid = xpuprof__ku32(c, ty);
            else if (n == 3) o->start = xpuprof__kvar(c, ty);
            else if (n == 4) o->end = xpuprof__kvar(c, ty);
            else if (n == 5) o->kind = xpuprof__ku32(c, ty);
            else if (n == 6) o->name = xpuprof__ku32(c, ty);
            else if (n == 7) o->device = xpuprof__ku32(c, ty);
            else if (n == 8) o->clock = xpuprof__ku32(c, ty);
            else xpuprof__skip(c, ty);
        }
        break;
    }
    case XPUPROF_TAG_WINDOW: {
        xpuprof_capture_window *w = &r->u.window;
        while (xpuprof__key(c, &n, &ty)) {
            if (n == 1) w->start = xpuprof__kvar(c, ty);
            else if (n == 2) w->end = xpuprof__kvar(c, ty);
            else if (n == 3) w->opener = xpuprof__ku32(c, ty);
            else if (n == 4) w->pid = xpuprof__ku32(c, ty);
            else if (n == 5) w->clock = xpuprof__ku32(c, ty);
            else xpuprof__skip(c, ty);
        }
        break;
    }
    case XPUPROF_TAG_DEVICE_SAMPLE: {
        xpuprof_device_sample *d = &r->u.device_sample;
        while (xpuprof__key(c, &n, &ty)) {
            if (n == 7) {
                xpuprof__cur s2 = xpuprof__sub(c, ty);
                if (ty == 2) {
                    d->correlation.present = 1;
                    d->correlation.backend = xpuprof__ru32(&s2);
                    d->correlation.id = xpuprof__rvar(&s2);
                }
                xpuprof__merge_bad(c, &s2);
            }
            else if (n == 1) d->pid = xpuprof__ku32(c, ty);
            else if (n == 2) d->device = xpuprof__ku32(c, ty);
            else if (n == 3) d->start = xpuprof__kvar(c, ty);
            else if (n == 4) d->end = xpuprof__kvar(c, ty);
            else if (n == 5) d->clock = xpuprof__ku32(c, ty);
            else if (n == 6) d->kernel = xpuprof__ku32(c, ty);
            else if (n == 8) d->code = xpuprof__kvar(c, ty);
            else if (n == 9) d->pc_offset = xpuprof__kvar(c, ty);
            else if (n == 10) d->stall = xpuprof__ku32(c, ty);
            else if (n == 11) d->count = xpuprof__kvar(c, ty);
            else if (n == 12) d->file = xpuprof__ku32(c, ty);
            else if (n == 13) d->line = xpuprof__ku32(c, ty);
            else if (n == 14) d->instruction = xpuprof__ku32(c, ty);
            else if (n == 15) d->call_file = xpuprof__ku32(c, ty);
            else if (n == 16) d->call_line = xpuprof__ku32(c, ty);
            else xpuprof__skip(c, ty);
        }
        break;
    }
    case XPUPROF_TAG_RETIRED: {
        xpuprof_retirement *t = &r->u.retired;
        while (xpuprof__key(c, &n, &ty)) {
            if (n == 1) {
                t->pid = xpuprof__ku32(c, ty);
            } else if (n == 2) {
                xpuprof__cur s2 = xpuprof__sub(c, ty);
                if (ty == 2) {
                    t->correlation.present = 1;
                    t->correlation.backend = xpuprof__ru32(&s2);
                    t->correlation.id = xpuprof__rvar(&s2);
                }
                xpuprof__merge_bad(c, &s2);
            } else if (n == 3) {
                t->time = xpuprof__kvar(c, ty);
            } else if (n == 4) {
                t->clock = xpuprof__ku32(c, ty);
            } else {
                xpuprof__skip(c, ty);
            }
        }
        break;
    }
    default:
        return 0;
    }
    return 1;
}

/* Iterates over the records of a batch. */
typedef struct xpuprof_reader {
    const uint8_t *data;
    size_t len, pos;
    uint64_t skipped;   /* records of kinds this header does not know (skipped, as the rules say) */
    const char *error;  /* set when a malformed record stopped the reader */
    size_t error_offset;
} xpuprof_reader;

static inline void xpuprof_reader_init(xpuprof_reader *r, const uint8_t *data, size_t len) {
    r->data = data;
    r->len = len;
    r->pos = 0;
    r->skipped = 0;
    r->error = NULL;
    r->error_offset = 0;
}

/* Decodes the next record into *out: 1 when one was read, 0 at the end, -1 on a malformed
 * record (r->error says why, r->error_offset where; the rest of the batch is not read). */
static inline int xpuprof_reader_next(xpuprof_reader *r, xpuprof_record *out) {
    while (r->pos < r->len && r->error == NULL) {
        size_t start = r->pos;
        uint8_t tag = r->data[start];
        xpuprof__cur c, p;
        uint64_t len;
        c.p = r->data + start + 1;
        c.end = r->data + r->len;
        c.bad = NULL;
        len = xpuprof__rvar(&c);
        if (c.bad || len > (uint64_t)(c.end - c.p)) {
            r->error = c.bad ? "truncated record length" : "record runs past the end of the batch";
            r->error_offset = start;
            return -1;
        }
        p.p = c.p;
        p.end = c.p + len;
        p.bad = NULL;
        r->pos = (size_t)(p.end - r->data);
        if (!xpuprof__read_payload(&p, tag, out)) {
            r->skipped++;
            continue;
        }
        if (p.bad) {
            r->error = p.bad;
            r->error_offset = start;
            return -1;
        }
        return 1;
    }
    return r->error ? -1 : 0;
}

#ifdef __cplusplus
}
#endif

#endif /* XPUPROF_RECORDS_H */
