/* hearth mkmodel: lists the checkpoint's tensors from the layout table, draws each from
 * its own seeded generator (linear weights ~ N(0, 1/fan_in), norms 1 +- 0.1 (0 +- 0.1 for
 * (1 + w) norms), biases and embeddings small), and writes config.json,
 * generation_config.json and the shards. */
#include "model/mkmodel.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/file.h"
#include "base/json.h"
#include "model/layout.h"
#include "model/safetensors.h"

typedef struct {
    hr_st_spec *specs;
    char **names;
    hr_init *init;
    int n, cap;
    hr_dtype dtype;
    int one_plus; /* norms scale by 1 + w: draw w around 0 */
    uint64_t seed;
    uint64_t state; /* generator of the tensor being written */
} mk_list;

/* Adds tensor `name` of shape (a[, b[, c]]): ndim dims. */
static hr_err *add_nd(mk_list *l, const char *name, int ndim, int64_t a, int64_t b, int64_t c,
                      hr_init init) {
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 64;
        hr_st_spec *s = realloc(l->specs, sizeof *s * (size_t)l->cap);
        if (s) l->specs = s;
        char **nm = realloc(l->names, sizeof *nm * (size_t)l->cap);
        if (nm) l->names = nm;
        hr_init *in = realloc(l->init, sizeof *in * (size_t)l->cap);
        if (in) l->init = in;
        if (!s || !nm || !in) return hr_err_oom();
    }
    char *copy = strdup(name);
    if (!copy) return hr_err_oom();
    l->names[l->n] = copy;
    l->init[l->n] = init;
    l->specs[l->n] = (hr_st_spec){copy, l->dtype, ndim, {a, b, c}};
    l->n++;
    return NULL;
}

/* Adds a (rows) vector (cols 0) or a (rows, cols) matrix. */
static hr_err *add(mk_list *l, const char *name, int64_t rows, int64_t cols, hr_init init) {
    return add_nd(l, name, cols ? 2 : 1, rows, cols, 0, init);
}

static hr_err *list_tensors(const hr_model_config *c, mk_list *l) {
    HR_TRY(add(l, "model.embed_tokens.weight", c->vocab, c->hidden, HR_INIT_EMBED));
    char name[160], suffix[128];
    for (int i = 0; i < c->n_layers; i++)
        for (int k = 0; k < hr_layout_count(); k++) {
            const hr_layer_tensor *t = hr_layout_tensor(k);
            if (!hr_layer_has(c, t, i)) continue;
            int64_t rows = hr_layer_dim_value(c, i, t->rows),
                    cols = hr_layer_dim_value(c, i, t->cols);
            for (int e = 0; e < (t->per_expert ? c->n_experts : 1); e++) {
                snprintf(suffix, sizeof suffix, t->suffix, e);
                snprintf(name, sizeof name, "model.layers.%d.%s", i, suffix);
                if (t->conv)
                    HR_TRY(add_nd(l, name, 3, rows, 1, cols, t->init));
                else if (hr_dim_is_experts(t->rows))
                    HR_TRY(add_nd(l, name, 3, c->n_experts, rows / c->n_experts, cols, t->init));
                else
                    HR_TRY(add(l, name, rows, cols, t->init));
            }
        }
    if (c->ple_dim) {
        int64_t all = (int64_t)c->n_layers * c->ple_dim;
        HR_TRY(add(l, "model.embed_tokens_per_layer.weight", c->ple_vocab, all, HR_INIT_EMBED));
        HR_TRY(add(l, "model.per_layer_model_projection.weight", all, c->hidden, HR_INIT_LINEAR));
        HR_TRY(add(l, "model.per_layer_projection_norm.weight", c->ple_dim, 0, HR_INIT_NORM));
    }
    HR_TRY(add(l, "model.norm.weight", c->hidden, 0, HR_INIT_NORM));
    if (!c->tie_embeddings) HR_TRY(add(l, "lm_head.weight", c->vocab, c->hidden, HR_INIT_LINEAR));
    return NULL;
}

static void list_free(mk_list *l) {
    for (int i = 0; i < l->n; i++)
        free(l->names[i]);
    free(l->specs);
    free(l->names);
    free(l->init);
}

static inline uint64_t next(uint64_t *s) { /* splitmix64 */
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Approximately standard normal: the sum of four 16-bit uniforms, centred and scaled. */
static inline float normal(uint64_t *s) {
    uint64_t r = next(s);
    float sum = (float)(r & 0xffff) + (float)((r >> 16) & 0xffff) + (float)((r >> 32) & 0xffff) +
                (float)(r >> 48);
    return (sum / 65536.0f - 2.0f) * 1.7320508f;
}

static float draw(mk_list *l, int index) {
    const hr_st_spec *s = &l->specs[index];
    switch (l->init[index]) {
    case HR_INIT_NORM: return (l->one_plus ? 0.0f : 1.0f) + 0.1f * normal(&l->state);
    case HR_INIT_BIAS: return 0.02f * normal(&l->state);
    case HR_INIT_EMBED: return normal(&l->state);
    default: return normal(&l->state) / sqrtf((float)s->shape[s->ndim - 1]);
    }
}

static hr_err *fill(void *ctx, int index, size_t off, void *buf, size_t len) {
    mk_list *l = ctx;
    if (off == 0) l->state = l->seed * 0x100000001b3ull + (uint64_t)index * 0x9e3779b97f4a7c15ull;
    if (l->dtype == HR_BF16)
        for (size_t i = 0; i < len / 2; i++)
            ((uint16_t *)buf)[i] = hr_f32_to_bf16(draw(l, index));
    else
        for (size_t i = 0; i < len / 4; i++)
            ((float *)buf)[i] = draw(l, index);
    return NULL;
}

typedef struct {
    mk_list *all;
    int first;
} shard_ctx;

static hr_err *shard_fill(void *ctx, int index, size_t off, void *buf, size_t len) {
    shard_ctx *s = ctx;
    return fill(s->all, s->first + index, off, buf, len);
}

static size_t spec_bytes(const hr_st_spec *s) {
    int64_t n = 1;
    for (int i = 0; i < s->ndim; i++)
        n *= s->shape[i];
    return hr_dtype_bytes(s->dtype, n);
}

/* Writes shards of at most shard_bytes and, when there are several, the index. */
static hr_err *write_shards(const char *dir, mk_list *l, uint64_t shard_bytes) {
    int starts[4096], n_shards = 0;
    size_t acc = 0, total = 0;
    for (int i = 0; i < l->n; i++) {
        size_t b = spec_bytes(&l->specs[i]);
        if (i == 0 || (acc > 0 && acc + b > shard_bytes)) {
            if (n_shards == 4096) return hr_errf("mkmodel: too many shards");
            starts[n_shards++] = i;
            acc = 0;
        }
        acc += b;
        total += b;
    }
    starts[n_shards] = l->n;
    json_t *wm = json_object();
    hr_err *err = NULL;
    for (int s = 0; s < n_shards && !err; s++) {
        char fname[64];
        if (n_shards == 1)
            snprintf(fname, sizeof fname, "model.safetensors");
        else
            snprintf(fname, sizeof fname, "model-%05d-of-%05d.safetensors", s + 1, n_shards);
        char *path = hr_path_join(dir, fname);
        shard_ctx sc = {l, starts[s]};
        err = path ? hr_st_write(path, l->specs + starts[s], starts[s + 1] - starts[s], shard_fill,
                                 &sc)
                   : hr_err_oom();
        free(path);
        for (int i = starts[s]; i < starts[s + 1]; i++)
            json_object_set_new(wm, l->names[i], json_string(fname));
    }
    if (!err && n_shards > 1) {
        json_t *idx = json_pack("{s:{s:I},s:O}", "metadata", "total_size", (json_int_t)total,
                                "weight_map", wm);
        char *txt = hr_json_dumps(idx, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
        char *path = hr_path_join(dir, "model.safetensors.index.json");
        err = txt && path ? hr_write_atomic(path, txt, strlen(txt)) : hr_err_oom();
        free(txt);
        free(path);
        json_decref(idx);
    }
    json_decref(wm);
    return err;
}

static hr_err *write_text(const char *dir, const char *name, const char *text) {
    char *path = hr_path_join(dir, name);
    if (!path) return hr_err_oom();
    hr_err *err = hr_write_atomic(path, text, strlen(text));
    free(path);
    return err;
}

static hr_err *write_generation_config(const char *dir, const hr_model_config *c) {
    json_t *g = json_object();
    if (c->bos_id >= 0) json_object_set_new(g, "bos_token_id", json_integer(c->bos_id));
    json_t *eos = json_array();
    for (int i = 0; i < c->n_eos; i++)
        json_array_append_new(eos, json_integer(c->eos_ids[i]));
    json_object_set_new(g, "eos_token_id", eos);
    char *txt = hr_json_dumps(g, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    json_decref(g);
    if (!txt) return hr_err_oom();
    hr_err *err = write_text(dir, "generation_config.json", txt);
    free(txt);
    return err;
}

hr_err *hr_mkmodel_write(const char *out_dir, const char *config_json, hr_dtype dtype,
                         uint64_t seed, uint64_t shard_bytes) {
    if (dtype != HR_BF16 && dtype != HR_F32) return hr_errf("mkmodel: dtype must be bf16 or f32");
    hr_model_config c;
    HR_TRY(hr_config_parse("config.json", config_json, &c));
    HR_TRY(hr_mkdir_p(out_dir));
    HR_TRY(write_text(out_dir, "config.json", config_json));
    HR_TRY(write_generation_config(out_dir, &c));
    mk_list l = {.dtype = dtype, .one_plus = c.norm_one_plus, .seed = seed};
    hr_err *err = list_tensors(&c, &l);
    if (!err) err = write_shards(out_dir, &l, shard_bytes);
    list_free(&l);
    return err;
}
