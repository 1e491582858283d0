/* Decodes the batch on stdin and writes every record back to stdout; exit 1 on a malformed
 * record, 2 on an unknown one (every kind of the model must be known to the header). */
#include <stdio.h>

#include <xpuprof/plugin.h>

int main(void) {
    static uint8_t in[1 << 20];
    size_t len = fread(in, 1, sizeof in, stdin);
    xpuprof_reader r;
    xpuprof_record rec;
    xpuprof_batch out = {0};
    int rc;
    xpuprof_reader_init(&r, in, len);
    while ((rc = xpuprof_reader_next(&r, &rec)) == 1) {
        if (xpuprof_write_record(&out, &rec) != 0) {
            fprintf(stderr, "failed to write back a record of tag %u\n", rec.tag);
            return 1;
        }
    }
    if (rc < 0) {
        fprintf(stderr, "bad record at byte %zu: %s\n", r.error_offset, r.error);
        return 1;
    }
    if (r.skipped > 0) {
        fprintf(stderr, "%llu records of unknown kinds\n", (unsigned long long)r.skipped);
        return 2;
    }
    fwrite(out.data, 1, out.len, stdout);
    xpuprof_batch_free(&out);
    return 0;
}
