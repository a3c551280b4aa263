/* hr_weights over a GGUF file: every tensor is indexed under the HF name the loader asks
 * for (gguf_names.c), stacked experts as per-expert slab views, and llama q/k projections
 * un-permuted into host copies (whole rows, so quantized rows move as they are). Tensors
 * with no HF counterpart stay reachable under their GGUF name. */
#include <stdlib.h>
#include <string.h>

#include "model/gguf.h"
#include "model/gguf_names.h"
#include "model/weights.h"
#include "tensor/view.h"

typedef struct {
    char *name;
    hr_tensor t;
} entry;

typedef struct {
    hr_gguf *g;
    entry *e;
    int n, cap;
    void **owned; /* un-permuted copies */
    int n_owned;
} gguf_src;

static hr_err *add(gguf_src *s, const char *name, const hr_tensor *t) {
    if (s->n == s->cap) {
        int cap = s->cap ? 2 * s->cap : 256;
        entry *e = realloc(s->e, sizeof *e * (size_t)cap);
        if (!e) return hr_err_oom();
        s->e = e;
        s->cap = cap;
    }
    char *copy = strdup(name);
    if (!copy) return hr_err_oom();
    s->e[s->n++] = (entry){copy, *t};
    return NULL;
}

/* The q/k rows back in HF order (the converter interleaved each head's two rotary halves). */
static hr_err *unpermute(gguf_src *s, const char *name, const hr_tensor *t, int n_head,
                         hr_tensor *out) {
    int64_t rows = t->shape[0];
    if (n_head <= 0 || rows % n_head || (rows / n_head) % 2)
        return hr_errf("tensor \"%s\": %lld rows do not split into %d heads of even size", name,
                       (long long)rows, n_head);
    size_t bytes = hr_tensor_bytes(t);
    void **owned = realloc(s->owned, sizeof *owned * (size_t)(s->n_owned + 1));
    if (!owned) return hr_err_oom();
    s->owned = owned;
    void *dst = malloc(bytes ? bytes : 1);
    if (!dst) return hr_err_oom();
    s->owned[s->n_owned++] = dst;
    hr_gguf_permute_rows(t->data, dst, rows, bytes / (size_t)rows, n_head, 1);
    *out = *t;
    out->data = dst;
    return NULL;
}

static hr_err *add_stacked(gguf_src *s, const char *pattern, const char *gname,
                           const hr_tensor *t) {
    if (t->ndim != 3) return hr_errf("tensor \"%s\" must be 3-D [experts, rows, cols]", gname);
    char name[256];
    for (int64_t e = 0; e < t->shape[0]; e++) {
        hr_tensor v;
        HR_TRY(hr_tensor_slab_rows(t, e, 0, t->shape[1], &v));
        snprintf(name, sizeof name, pattern, (int)e);
        HR_TRY(add(s, name, &v));
    }
    return NULL;
}

static hr_err *index_tensor(gguf_src *s, const char *arch, const hr_model_config *c, int i) {
    const char *gname = hr_gguf_tensor_name(s->g, i);
    const hr_tensor *t = hr_gguf_tensor_at(s->g, i);
    char hf[256];
    int stacked;
    if (!hr_gguf_to_hf(arch, gname, hf, sizeof hf, &stacked)) return add(s, gname, t);
    if (stacked) return add_stacked(s, hf, gname, t);
    char kind = hr_gguf_permutes(arch) ? hr_gguf_qk_kind(hf) : 0;
    if (!kind) return add(s, hf, t);
    hr_tensor u;
    HR_TRY(unpermute(s, gname, t, kind == 'q' ? c->n_heads : c->n_kv_heads, &u));
    return add(s, hf, &u);
}

static int cmp_entry(const void *a, const void *b) {
    return strcmp(((const entry *)a)->name, ((const entry *)b)->name);
}

static const hr_tensor *src_get(const void *impl, const char *name) {
    const gguf_src *s = impl;
    entry key = {(char *)name, {0}};
    const entry *e = bsearch(&key, s->e, (size_t)s->n, sizeof *s->e, cmp_entry);
    return e ? &e->t : NULL;
}

static size_t src_bytes(const void *impl) {
    return hr_gguf_data_bytes(((const gguf_src *)impl)->g);
}

static hr_dtype src_main(const void *impl) {
    const gguf_src *s = impl;
    size_t bytes[HR_DTYPE_COUNT] = {0};
    for (int i = 0; i < s->n; i++)
        bytes[s->e[i].t.dtype] += hr_tensor_bytes(&s->e[i].t);
    int best = HR_F32;
    for (int d = 0; d < HR_DTYPE_COUNT; d++)
        if (bytes[d] > bytes[best]) best = d;
    return (hr_dtype)best;
}

static void src_close(void *impl) {
    gguf_src *s = impl;
    if (!s) return;
    for (int i = 0; i < s->n; i++)
        free(s->e[i].name);
    for (int i = 0; i < s->n_owned; i++)
        free(s->owned[i]);
    free(s->e);
    free(s->owned);
    hr_gguf_close(s->g);
    free(s);
}

static const hr_weights_vt gguf_vt = {src_get, src_bytes, src_main, src_close};

static hr_err *build(gguf_src *s, hr_model_config *cfg) {
    HR_TRY(hr_config_from_gguf(s->g, cfg));
    const char *arch;
    HR_TRY(hr_gguf_get_str(s->g, "general.architecture", &arch));
    for (int i = 0; i < hr_gguf_tensor_count(s->g); i++)
        HR_TRY(index_tensor(s, arch, cfg, i));
    qsort(s->e, (size_t)s->n, sizeof *s->e, cmp_entry);
    for (int i = 1; i < s->n; i++)
        if (!strcmp(s->e[i - 1].name, s->e[i].name))
            return hr_errf("tensor \"%s\" appears twice", s->e[i].name);
    return NULL;
}

hr_err *hr_gguf_weights_open(const char *path, hr_model_config *cfg, hr_weights **out) {
    *out = NULL;
    gguf_src *s = calloc(1, sizeof *s);
    hr_weights *w = malloc(sizeof *w);
    hr_err *e = s && w ? hr_gguf_open(path, &s->g) : hr_err_oom();
    if (!e) e = hr_err_wrap(build(s, cfg), "%s: ", path);
    if (e) {
        src_close(s);
        free(w);
        return e;
    }
    *w = (hr_weights){&gguf_vt, s};
    *out = w;
    return NULL;
}
