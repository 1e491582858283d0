/* Uses every part of the C plugin header, to compile it with all warnings as errors. */
#include <xpuprof/plugin.h>

static int create(const xpuprof_host *host, const xpuprof_create_info *info, void **instance) {
    (void)info;
    *instance = NULL;
    return host == NULL ? XPUPROF_ERROR : XPUPROF_OK;
}

static int consume(void *instance, const uint8_t *batch, size_t len) {
    xpuprof_reader r;
    xpuprof_record rec;
    xpuprof_batch out;
    (void)instance;
    xpuprof_batch_init(&out);
    xpuprof_reader_init(&r, batch, len);
    while (xpuprof_reader_next(&r, &rec) == 1) {
        xpuprof_write_record(&out, &rec);
    }
    xpuprof_batch_free(&out);
    return XPUPROF_OK;
}

static int finish(void *instance, const xpuprof_files *files) {
    (void)instance;
    files->add(files->ctx, "x");
    return XPUPROF_OK;
}

static void destroy(void *instance) {
    (void)instance;
}

#ifdef __cplusplus
static xpuprof_plugin make_plugin() {
    xpuprof_plugin p;
    memset(&p, 0, sizeof p);
    p.size = sizeof p;
    p.abi_version = XPUPROF_C_ABI_VERSION;
    p.kind = XPUPROF_KIND_SINK;
    p.header_version = XPUPROF_HEADER_VERSION;
    p.name = "compile-check";
    p.create = create;
    p.consume = consume;
    p.finish = finish;
    p.destroy = destroy;
    return p;
}
static const xpuprof_plugin plugin = make_plugin();
#else
static const xpuprof_plugin plugin = {
    XPUPROF_PLUGIN_INIT(XPUPROF_KIND_SINK),
    .name = "compile-check",
    .create = create,
    .consume = consume,
    .finish = finish,
    .destroy = destroy,
};
#endif

XPUPROF_EXPORT_PLUGIN(plugin)

int main(void) {
    const xpuprof_plugin *p = xpuprof_plugin_v1();
    return p->size == sizeof(xpuprof_plugin) && XPUPROF_HAS(p, xpuprof_plugin, destroy) ? 0 : 1;
}
