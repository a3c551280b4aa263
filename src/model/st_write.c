/* safetensors writer: builds the header from tensor specs (offsets in order, header
 * padded with spaces to 8 bytes), then streams each tensor's bytes from a fill callback
 * through an atomic file. */
#include <stdlib.h>
#include <string.h>

#include "base/file.h"
#include "base/json.h"
#include "model/safetensors.h"

static hr_err *build_header(const hr_st_spec *specs, int n, char **out, size_t *out_len) {
    json_t *h = json_object();
    if (!h) return hr_err_oom();
    json_object_set_new(h, "__metadata__", json_pack("{s:s}", "format", "pt"));
    uint64_t off = 0;
    for (int i = 0; i < n; i++) {
        const hr_st_spec *s = &specs[i];
        const char *dt = hr_st_dtype_name(s->dtype);
        if (!dt) {
            json_decref(h);
            return hr_errf("safetensors: cannot write dtype %s", hr_dtype_name(s->dtype));
        }
        json_t *shape = json_array();
        int64_t numel = 1;
        for (int d = 0; d < s->ndim; d++) {
            json_array_append_new(shape, json_integer(s->shape[d]));
            numel *= s->shape[d];
        }
        uint64_t bytes = hr_dtype_bytes(s->dtype, numel);
        json_object_set_new(h, s->name,
                            json_pack("{s:s,s:o,s:[I,I]}", "dtype", dt, "shape", shape,
                                      "data_offsets", (json_int_t)off, (json_int_t)(off + bytes)));
        off += bytes;
    }
    char *txt = hr_json_dumps(h, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(h);
    if (!txt) return hr_err_oom();
    size_t len = strlen(txt), padded = (len + 7) / 8 * 8;
    char *buf = malloc(8 + padded);
    if (!buf) {
        free(txt);
        return hr_err_oom();
    }
    uint64_t hl = padded;
    memcpy(buf, &hl, 8);
    memcpy(buf + 8, txt, len);
    memset(buf + 8 + len, ' ', padded - len);
    free(txt);
    *out = buf;
    *out_len = 8 + padded;
    return NULL;
}

static hr_err *write_tensor(hr_atomic_file *f, const hr_st_spec *s, int index, hr_st_fill_fn fill,
                            void *ctx, void *chunk, size_t chunk_len) {
    int64_t numel = 1;
    for (int d = 0; d < s->ndim; d++)
        numel *= s->shape[d];
    size_t bytes = hr_dtype_bytes(s->dtype, numel);
    for (size_t off = 0; off < bytes; off += chunk_len) {
        size_t len = bytes - off < chunk_len ? bytes - off : chunk_len;
        HR_TRY(fill(ctx, index, off, chunk, len));
        HR_TRY(hr_atomic_write(f, chunk, len));
    }
    return NULL;
}

hr_err *hr_st_write(const char *path, const hr_st_spec *specs, int n, hr_st_fill_fn fill,
                    void *ctx) {
    char *header = NULL;
    size_t hlen = 0;
    HR_TRY(build_header(specs, n, &header, &hlen));
    enum { CHUNK = 8 << 20 };
    void *chunk = malloc(CHUNK);
    hr_atomic_file f;
    hr_err *err = chunk ? hr_atomic_open(path, &f) : hr_err_oom();
    if (!err) {
        err = hr_atomic_write(&f, header, hlen);
        for (int i = 0; i < n && !err; i++)
            err = write_tensor(&f, &specs[i], i, fill, ctx, chunk, CHUNK);
        if (err)
            hr_atomic_abort(&f);
        else
            err = hr_atomic_commit(&f);
    }
    free(chunk);
    free(header);
    return err;
}
