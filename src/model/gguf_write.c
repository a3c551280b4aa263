/* The GGUF builder: metadata and tensor infos serialised as they are added, tensor data
 * appended at 32-byte aligned offsets, the file assembled by hr_gguf_writer_bytes. */
#include "model/gguf_write.h"

#include <stdlib.h>
#include <string.h>

#include "base/file.h"

enum { ALIGN = 32 };

typedef struct {
    uint8_t *p;
    size_t len, cap;
} wbuf;

struct hr_gguf_writer {
    wbuf kv, info, data;
    uint64_t n_kv, n_tensors;
};

static const size_t elem_size[HR_GGUF_TYPE_COUNT] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};

static hr_err *put(wbuf *b, const void *p, size_t n) {
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->len + n)
            cap *= 2;
        uint8_t *q = realloc(b->p, cap);
        if (!q) return hr_err_oom();
        b->p = q;
        b->cap = cap;
    }
    if (n) memcpy(b->p + b->len, p, n);
    b->len += n;
    return NULL;
}

static hr_err *put_u32(wbuf *b, uint32_t v) { return put(b, &v, 4); }
static hr_err *put_u64(wbuf *b, uint64_t v) { return put(b, &v, 8); }

static hr_err *put_string(wbuf *b, const char *s) {
    HR_TRY(put_u64(b, strlen(s)));
    return put(b, s, strlen(s));
}

hr_err *hr_gguf_writer_new(hr_gguf_writer **out) {
    *out = calloc(1, sizeof **out);
    return *out ? NULL : hr_err_oom();
}

void hr_gguf_writer_free(hr_gguf_writer *w) {
    if (!w) return;
    free(w->kv.p);
    free(w->info.p);
    free(w->data.p);
    free(w);
}

static hr_err *key(hr_gguf_writer *w, const char *k, hr_gguf_type t) {
    w->n_kv++;
    HR_TRY(put_string(&w->kv, k));
    return put_u32(&w->kv, t);
}

hr_err *hr_gguf_put_str(hr_gguf_writer *w, const char *k, const char *v) {
    HR_TRY(key(w, k, HR_GGUF_STRING));
    return put_string(&w->kv, v);
}

hr_err *hr_gguf_put(hr_gguf_writer *w, const char *k, hr_gguf_type t, const void *v) {
    if (t >= HR_GGUF_TYPE_COUNT || !elem_size[t])
        return hr_errf("hr_gguf_put: %s is not a scalar type", k);
    HR_TRY(key(w, k, t));
    return put(&w->kv, v, elem_size[t]);
}

hr_err *hr_gguf_put_u32(hr_gguf_writer *w, const char *k, uint32_t v) {
    return hr_gguf_put(w, k, HR_GGUF_U32, &v);
}
hr_err *hr_gguf_put_f32(hr_gguf_writer *w, const char *k, float v) {
    return hr_gguf_put(w, k, HR_GGUF_F32, &v);
}

hr_err *hr_gguf_put_arr(hr_gguf_writer *w, const char *k, hr_gguf_type t, const void *elems,
                        uint64_t n) {
    if (t >= HR_GGUF_TYPE_COUNT || t == HR_GGUF_ARRAY)
        return hr_errf("hr_gguf_put_arr: bad element type for %s", k);
    HR_TRY(key(w, k, HR_GGUF_ARRAY));
    HR_TRY(put_u32(&w->kv, t));
    HR_TRY(put_u64(&w->kv, n));
    if (t != HR_GGUF_STRING) return put(&w->kv, elems, elem_size[t] * (size_t)n);
    for (uint64_t i = 0; i < n; i++)
        HR_TRY(put_string(&w->kv, ((const char *const *)elems)[i]));
    return NULL;
}

hr_err *hr_gguf_put_tensor(hr_gguf_writer *w, const char *name, hr_dtype dt, int ndim,
                           const int64_t *shape, const void *data) {
    int gt = hr_gguf_ggml_type(dt);
    if (gt < 0) return hr_errf("tensor \"%s\": dtype %s has no ggml type", name, hr_dtype_name(dt));
    int64_t numel = 1;
    HR_TRY(put_string(&w->info, name));
    HR_TRY(put_u32(&w->info, (uint32_t)ndim));
    for (int d = ndim - 1; d >= 0; d--) {
        HR_TRY(put_u64(&w->info, (uint64_t)shape[d]));
        numel *= shape[d];
    }
    HR_TRY(put_u32(&w->info, (uint32_t)gt));
    HR_TRY(put_u64(&w->info, w->data.len));
    HR_TRY(put(&w->data, data, hr_dtype_bytes(dt, numel)));
    static const uint8_t zeros[ALIGN];
    w->n_tensors++;
    return put(&w->data, zeros, (ALIGN - w->data.len % ALIGN) % ALIGN);
}

hr_err *hr_gguf_writer_bytes(const hr_gguf_writer *w, uint8_t **out, size_t *len) {
    wbuf b = {0};
    static const uint8_t zeros[ALIGN];
    hr_err *e = put(&b, "GGUF", 4);
    if (!e) e = put_u32(&b, 3);
    if (!e) e = put_u64(&b, w->n_tensors);
    if (!e) e = put_u64(&b, w->n_kv);
    if (!e) e = put(&b, w->kv.p, w->kv.len);
    if (!e) e = put(&b, w->info.p, w->info.len);
    if (!e) e = put(&b, zeros, (ALIGN - b.len % ALIGN) % ALIGN);
    if (!e) e = put(&b, w->data.p, w->data.len);
    if (e) {
        free(b.p);
        return e;
    }
    *out = b.p;
    *len = b.len;
    return NULL;
}

hr_err *hr_gguf_writer_save(const hr_gguf_writer *w, const char *path) {
    uint8_t *p;
    size_t n;
    HR_TRY(hr_gguf_writer_bytes(w, &p, &n));
    hr_err *e = hr_write_atomic(path, p, n);
    free(p);
    return e;
}
