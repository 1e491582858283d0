/*
 * kernel-csv: an xpuprof sink in C that writes one CSV line per kernel name, with how many times
 * it ran and its total, mean, min and max device time.
 *
 *   make                      # builds libxpuprof_plugin_kernel_csv.so
 *   xpuprof --plugin-dir . --source cupti --sink kernel-csv -- ./app
 *   xpuprof check-plugin ./libxpuprof_plugin_kernel_csv.so
 *
 * Config ([sink.kernel-csv] in xpuprof.toml): `file` (default "kernels.csv").
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <xpuprof/plugin.h>

/* Per kernel name (a string id: the host gives each distinct name one id). */
typedef struct kernel_stats {
    uint64_t count, total_ns, min_ns, max_ns;
} kernel_stats;

typedef struct csv_sink {
    const xpuprof_host *host;
    FILE *out;
    char path[4096];
    char **strings; /* text of each string id, NULL when not defined */
    size_t n_strings;
    kernel_stats *kernels; /* indexed by the kernel name's string id */
    size_t n_kernels;
    uint64_t unnamed;
} csv_sink;

/* Grows `*arr` (of `*n` elements of `size` bytes, zeroed) to hold index `i`. */
static int grow(void **arr, size_t *n, size_t size, size_t i) {
    size_t want = *n ? *n : 64;
    void *p;
    if (i < *n) {
        return 0;
    }
    while (want <= i) {
        want *= 2;
    }
    p = realloc(*arr, want * size);
    if (p == NULL) {
        return -1;
    }
    memset((char *)p + *n * size, 0, (want - *n) * size);
    *arr = p;
    *n = want;
    return 0;
}

static const char schema[] =
    "[[key]]\n"
    "name = \"file\"\n"
    "type = \"string\"\n"
    "default = \"kernels.csv\"\n"
    "doc = \"file name inside the output directory\"\n";

/* Creates the file the way xpuprof's own sinks do: whatever had the name is removed, and a
 * planted symbolic link is never followed. */
static int create(const xpuprof_host *host, const xpuprof_create_info *info, void **instance) {
    char file[256];
    int fd;
    csv_sink *s = (csv_sink *)calloc(1, sizeof *s);
    if (s == NULL) {
        return xpuprof_fail(host, "failed to allocate the kernel-csv sink");
    }
    s->host = host;
    xpuprof_config_str(info, "file", file, sizeof file);
    if (strchr(file, '/') != NULL || file[0] == '\0' || file[0] == '.') {
        free(s);
        return xpuprof_fail(host, "invalid `file` %s: give a plain file name, written inside the output directory",
                            file);
    }
    snprintf(s->path, sizeof s->path, "%.*s/%s", (int)info->output_dir.len, info->output_dir.ptr, file);
    unlink(s->path);
    fd = open(s->path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0 || (s->out = fdopen(fd, "w")) == NULL) {
        int rc = xpuprof_fail(host, "failed to create %.4000s: %s", s->path, strerror(errno));
        free(s);
        return rc;
    }
    *instance = s;
    return XPUPROF_OK;
}

static int remember_string(csv_sink *s, const xpuprof_str_def *d) {
    char *copy;
    if (grow((void **)&s->strings, &s->n_strings, sizeof(char *), d->id) != 0) {
        return -1;
    }
    copy = (char *)malloc(d->text.len + 1);
    if (copy == NULL) {
        return -1;
    }
    memcpy(copy, d->text.ptr, d->text.len);
    copy[d->text.len] = '\0';
    free(s->strings[d->id]);
    s->strings[d->id] = copy;
    return 0;
}

static int count_kernel(csv_sink *s, const xpuprof_device_op *op) {
    kernel_stats *k;
    uint64_t ns = op->end - op->start;
    if (op->name == 0) {
        s->unnamed++;
        return 0;
    }
    if (grow((void **)&s->kernels, &s->n_kernels, sizeof(kernel_stats), op->name) != 0) {
        return -1;
    }
    k = &s->kernels[op->name];
    if (k->count == 0 || ns < k->min_ns) {
        k->min_ns = ns;
    }
    if (ns > k->max_ns) {
        k->max_ns = ns;
    }
    k->count++;
    k->total_ns += ns;
    return 0;
}

static int consume(void *instance, const uint8_t *batch, size_t len) {
    csv_sink *s = (csv_sink *)instance;
    xpuprof_reader r;
    xpuprof_record rec;
    int rc;
    xpuprof_reader_init(&r, batch, len);
    while ((rc = xpuprof_reader_next(&r, &rec)) == 1) {
        int err = 0;
        if (rec.tag == XPUPROF_TAG_STR) {
            err = remember_string(s, &rec.u.str);
        } else if (rec.tag == XPUPROF_TAG_DEVICE_OP && rec.u.device_op.kind == XPUPROF_OP_KERNEL) {
            err = count_kernel(s, &rec.u.device_op);
        }
        if (err != 0) {
            return xpuprof_fail(s->host, "failed to grow the kernel-csv tables: out of memory");
        }
    }
    if (rc < 0) {
        return xpuprof_fail(s->host, "failed to decode a batch at byte %zu: %s", r.error_offset, r.error);
    }
    return XPUPROF_OK;
}

/* Writes `text` as one CSV field (quoted, quotes doubled). */
static void csv_field(FILE *f, const char *text) {
    fputc('"', f);
    for (; *text; text++) {
        if (*text == '"') {
            fputc('"', f);
        }
        fputc(*text, f);
    }
    fputc('"', f);
}

static int finish(void *instance, const xpuprof_files *files) {
    csv_sink *s = (csv_sink *)instance;
    size_t i;
    fprintf(s->out, "kernel,count,total_ns,mean_ns,min_ns,max_ns\n");
    for (i = 0; i < s->n_kernels; i++) {
        const kernel_stats *k = &s->kernels[i];
        const char *name = i < s->n_strings && s->strings[i] ? s->strings[i] : "[unnamed]";
        if (k->count == 0) {
            continue;
        }
        csv_field(s->out, name);
        fprintf(s->out, ",%llu,%llu,%llu,%llu,%llu\n", (unsigned long long)k->count,
                (unsigned long long)k->total_ns, (unsigned long long)(k->total_ns / k->count),
                (unsigned long long)k->min_ns, (unsigned long long)k->max_ns);
    }
    if (s->unnamed > 0) {
        xpuprof_log(s->host, XPUPROF_LOG_WARN, "%llu kernels without a name were left out",
                    (unsigned long long)s->unnamed);
    }
    if (fclose(s->out) != 0) {
        s->out = NULL;
        return xpuprof_fail(s->host, "failed to write %.4000s: %s", s->path, strerror(errno));
    }
    s->out = NULL;
    files->add(files->ctx, s->path);
    return XPUPROF_OK;
}

static void destroy(void *instance) {
    csv_sink *s = (csv_sink *)instance;
    size_t i;
    if (s->out != NULL) {
        fclose(s->out);
    }
    for (i = 0; i < s->n_strings; i++) {
        free(s->strings[i]);
    }
    free(s->strings);
    free(s->kernels);
    free(s);
}

static const xpuprof_plugin plugin = {
    XPUPROF_PLUGIN_INIT(XPUPROF_KIND_SINK),
    .name = "kernel-csv",
    .version = "1.0.0",
    .description = "per-kernel CSV: count, total, mean, min and max device time",
    .config_schema = schema,
    .create = create,
    .consume = consume,
    .finish = finish,
    .destroy = destroy,
};

XPUPROF_EXPORT_PLUGIN(plugin)
