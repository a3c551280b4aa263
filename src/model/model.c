/* Loading the decoder families (llama, mistral, qwen2, qwen3, gemma3, gemma4, and the MoE /
 * hybrid ones with load_hybrid.c): checks every tensor's presence and shape against the
 * config, uploads weights to the backend in their file dtype, and owns the per-step scratch
 * buffers. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "model/gguf.h"
#include "model/layout.h"
#include "model/model_internal.h"
#include "tensor/mlx_quant.h"
#include "tensor/view.h"

static hr_err *upload(hr_model *m, const hr_tensor *host, const hr_tensor **out) {
    if (m->n_dev == m->cap_dev) return hr_errf("internal: too many tensors");
    hr_tensor *d = &m->dev[m->n_dev];
    HR_TRY(m->be->vt->upload(m->be, host, d));
    m->n_dev++;
    *out = d;
    return NULL;
}

/* An MLX-quantized matrix: its scales and biases are uploaded first and the weight's
 * companions point at those copies, so any backend sees one self-describing tensor. */
static hr_err *upload_mlx(hr_model *m, hr_mlx_parts *p, const hr_tensor **out) {
    HR_TRY(upload(m, p->scales, &p->w.scales));
    HR_TRY(upload(m, p->biases, &p->w.biases));
    return upload(m, &p->w, out);
}

/* Uploads a file tensor as is, remembering its name (hr_model_weight_dev). */
static hr_err *upload_named(hr_model *m, const char *name, const hr_tensor *t,
                            const hr_tensor **out) {
    HR_TRY(upload(m, t, out));
    m->dev_name[m->n_dev - 1] = strdup(name);
    return m->dev_name[m->n_dev - 1] ? NULL : hr_err_oom();
}

hr_tensor *hr_model_weight_dev(hr_model *m, const char *name) {
    for (int i = 0; i < m->n_dev; i++)
        if (m->dev_name[i] && strcmp(m->dev_name[i], name) == 0) return &m->dev[i];
    return NULL;
}

/* Finds `name`, checks its shape (ndim dims from dims[]) and dtype, uploads it. A float
 * type always does; a GGUF block type (tensor/quant.h) or an MLX-quantized weight
 * (mlx_load.h) only for a matrix (`matrix`: a 2-D weight that matmul or embed reads; not MoE
 * experts, whose kernels are float only). */
static hr_err *weight(hr_model *m, const char *name, int ndim, const int64_t *dims, int matrix,
                      const hr_tensor **out) {
    *out = NULL;
    const hr_tensor *t = hr_weights_get(m->w, name);
    if (!t) return hr_errf("missing tensor \"%s\"", name);
    if (matrix) {
        hr_mlx_parts p;
        int q;
        HR_TRY(hr_mlx_weight(&m->mlx, m->w, name, dims[0], dims[1], &p, &q));
        if (q) {
            HR_TRY(upload_mlx(m, &p, out));
            m->dev_name[m->n_dev - 1] = strdup(name);
            return m->dev_name[m->n_dev - 1] ? NULL : hr_err_oom();
        }
    } else if (hr_mlx_has_scales(m->w, name)) {
        return hr_errf("tensor \"%s\": MLX-quantized here is not supported (quantized weights must "
                       "be 2-D matrices outside MoE experts)",
                       name);
    }
    int ok = t->ndim == ndim;
    for (int i = 0; ok && i < ndim; i++)
        ok = t->shape[i] == dims[i];
    if (!ok) {
        char got[64], want[64];
        hr_tensor w = {.ndim = ndim};
        for (int i = 0; i < ndim; i++)
            w.shape[i] = dims[i];
        return hr_errf("tensor \"%s\" has shape %s, expected %s", name,
                       hr_tensor_shape_str(t, got, sizeof got),
                       hr_tensor_shape_str(&w, want, sizeof want));
    }
    if (t->dtype == HR_F32 || t->dtype == HR_BF16 || t->dtype == HR_F16)
        return upload_named(m, name, t, out);
    if (!hr_dtype_get(t->dtype)->quantized || hr_mlx_bits(t->dtype))
        return hr_errf("tensor \"%s\": dtype %s is not a float or GGUF quantized type", name,
                       hr_dtype_name(t->dtype));
    if (!matrix)
        return hr_errf(
            "tensor \"%s\": a %s tensor here is not supported (quantized weights must be "
            "2-D matrices outside MoE experts)",
            name, hr_dtype_name(t->dtype));
    if (dims[ndim - 1] % hr_dtype_get(t->dtype)->block)
        return hr_errf(
            "tensor \"%s\": rows of %lld elements are not a multiple of the %s block (%d)", name,
            (long long)dims[ndim - 1], hr_dtype_name(t->dtype), hr_dtype_get(t->dtype)->block);
    return upload_named(m, name, t, out);
}

static hr_err *w1(hr_model *m, const char *name, int64_t a, const hr_tensor **out) {
    return weight(m, name, 1, (int64_t[]){a}, 0, out);
}
static hr_err *w2(hr_model *m, const char *name, int64_t a, int64_t b, const hr_tensor **out) {
    return weight(m, name, 2, (int64_t[]){a, b}, 1, out);
}

/* The value of a one-element tensor as stored (layer_scalar). */
static float host_scalar(const hr_tensor *t) {
    switch (t->dtype) {
    case HR_BF16: return hr_bf16_to_f32(*(const uint16_t *)t->data);
    case HR_F16: return hr_f16_to_f32(*(const uint16_t *)t->data);
    default: return *(const float *)t->data;
    }
}

/* Stores tensor t of layer i (each expert's, for a per-expert tensor). */
static hr_err *load_tensor(hr_model *m, int i, const hr_layer_tensor *lt) {
    const hr_model_config *c = &m->cfg;
    char name[224], suffix[128];
    char *base = (char *)&m->layers[i] + lt->field;
    int n = lt->per_expert ? c->n_experts : 1;
    int64_t rows = hr_layer_dim_value(c, i, lt->rows), cols = hr_layer_dim_value(c, i, lt->cols);
    for (int e = 0; e < n; e++) {
        snprintf(suffix, sizeof suffix, lt->suffix, e);
        snprintf(name, sizeof name, "%slayers.%d.%s", c->prefix, i, suffix);
        const hr_tensor **slot =
            lt->per_expert ? &(*(const hr_tensor ***)base)[e] : (const hr_tensor **)base;
        if (lt->conv)
            HR_TRY(weight(m, name, 3, (int64_t[]){rows, 1, cols}, 0, slot));
        else if (hr_dim_is_experts(lt->rows))
            HR_TRY(
                weight(m, name, 3, (int64_t[]){c->n_experts, rows / c->n_experts, cols}, 0, slot));
        else if (lt->cols == HR_DIM_NONE)
            HR_TRY(w1(m, name, rows, slot));
        else
            HR_TRY(weight(m, name, 2, (int64_t[]){rows, cols}, !lt->per_expert, slot));
    }
    return NULL;
}

static hr_err *load_layer(hr_model *m, int i) {
    for (int k = 0; k < hr_layout_count(); k++) {
        const hr_layer_tensor *lt = hr_layout_tensor(k);
        /* absent: e.g. a bias the config turns off (transformers ignores it too), the k/v
         * projections of a KV-sharing layer, or another layer kind's tensors; the field stays
         * NULL (calloc) */
        if (hr_layer_has(&m->cfg, lt, i)) HR_TRY(load_tensor(m, i, lt));
    }
    m->layer_scale[i] = 1.0f;
    if (m->layers[i].layer_scalar) { /* read from the file: the uploaded copy is device memory */
        char name[160];
        snprintf(name, sizeof name, "%slayers.%d.layer_scalar", m->cfg.prefix, i);
        m->layer_scale[i] = host_scalar(hr_weights_get(m->w, name));
    }
    return NULL;
}

/* gemma4's stacked experts as the per-expert matrices the MoE op takes (zero-copy slab
 * views): gate = rows [0, I) and up = rows [I, 2I) of gate_up[e] (E, 2I, hidden), down =
 * down[e] (E, hidden, I). */
static hr_err *expert_views(hr_model *m, int l) {
    const hr_layer_weights *L = &m->layers[l];
    int E = m->cfg.n_experts;
    int64_t I = m->cfg.moe_intermediate, H = m->cfg.hidden;
    hr_tensor *v = m->expert_views + (size_t)l * 3 * E;
    const hr_tensor **p = m->expert_ptrs + (size_t)l * 3 * E;
    for (int e = 0; e < E; e++) {
        HR_TRY(hr_tensor_slab_rows(L->experts_gate_up, e, 0, I, &v[e]));
        HR_TRY(hr_tensor_slab_rows(L->experts_gate_up, e, I, I, &v[E + e]));
        HR_TRY(hr_tensor_slab_rows(L->experts_down, e, 0, H, &v[2 * E + e]));
        for (int w = 0; w < 3; w++)
            p[w * E + e] = &v[w * E + e];
    }
    m->moe[l] = (hr_moe_weights){E, (int)H, (int)I, p, p + E, p + 2 * E, HR_ACT_FN_GELU_TANH};
    return NULL;
}

/* KV store layout: one slot per attention layer that stores KV, at that layer's head dim
 * (KV-sharing layers read their source's slot; linear-attention layers keep recurrent state
 * instead, see load_hybrid.c). Fills slot_of (n_layers, -1 for linear layers) and
 * slot_head_dim (per slot); returns the slot count. */
static int kv_slots(const hr_model_config *c, int *slot_of, int *slot_head_dim) {
    int n = 0;
    for (int l = 0; l < c->n_layers; l++) {
        slot_of[l] = -1;
        if (c->kv_source[l] != l || c->layer_kind[l] == HR_LAYER_LINEAR) continue;
        slot_head_dim[n] = c->layer_head_dim[l];
        slot_of[l] = n++;
    }
    for (int l = 0; l < c->n_layers; l++)
        if (c->layer_kind[l] != HR_LAYER_LINEAR) slot_of[l] = slot_of[c->kv_source[l]];
    return n;
}

static void plan_kv(hr_model *m) {
    const hr_model_config *c = &m->cfg;
    m->max_head_dim = 0;
    for (int l = 0; l < c->n_layers; l++)
        if (c->layer_head_dim[l] > m->max_head_dim) m->max_head_dim = c->layer_head_dim[l];
    m->n_kv_slots = kv_slots(c, m->kv_slot, m->kv_slot_head_dim);
}

static hr_err *load_ple(hr_model *m) {
    const hr_model_config *c = &m->cfg;
    if (!c->ple_dim) return NULL;
    int64_t all = (int64_t)c->n_layers * c->ple_dim;
    HR_TRY(w2(m, "model.embed_tokens_per_layer.weight", c->ple_vocab, all, &m->ple_embed));
    HR_TRY(w2(m, "model.per_layer_model_projection.weight", all, c->hidden, &m->ple_model_proj));
    return w1(m, "model.per_layer_projection_norm.weight", c->ple_dim, &m->ple_proj_norm);
}

static hr_err *load_weights(hr_model *m) {
    const hr_model_config *c = &m->cfg;
    /* every layout entry, one per expert for per-expert ones, plus qwen3_next's 4 split
     * projections per layer and the model-wide tensors, each with room for MLX companions */
    m->cap_dev = 3 * (c->n_layers * (hr_layout_count() + 3 * c->n_experts + 4) + 16);
    m->dev = calloc((size_t)m->cap_dev, sizeof *m->dev);
    m->dev_name = calloc((size_t)m->cap_dev, sizeof *m->dev_name);
    m->layers = calloc((size_t)c->n_layers, sizeof *m->layers);
    if (!m->dev || !m->dev_name || !m->layers) return hr_err_oom();
    HR_TRY(hr_load_hybrid_prepare(m));
    char name[64];
    snprintf(name, sizeof name, "%sembed_tokens.weight", c->prefix);
    HR_TRY(w2(m, name, c->vocab, c->hidden, &m->embed));
    snprintf(name, sizeof name, "%snorm.weight", c->prefix);
    HR_TRY(w1(m, name, c->hidden, &m->final_norm));
    if (c->tie_embeddings)
        m->lm_head = m->embed;
    else
        HR_TRY(w2(m, "lm_head.weight", c->vocab, c->hidden, &m->lm_head));
    for (int i = 0; i < c->n_layers; i++)
        HR_TRY(load_layer(m, i));
    HR_TRY(load_ple(m));
    if (c->moe) {
        size_t n = (size_t)c->n_layers * 3 * c->n_experts;
        m->expert_views = calloc(n, sizeof *m->expert_views);
        m->expert_ptrs = calloc(n, sizeof *m->expert_ptrs);
        m->moe = calloc((size_t)c->n_layers, sizeof *m->moe);
        if (!m->expert_views || !m->expert_ptrs || !m->moe) return hr_err_oom();
        for (int i = 0; i < c->n_layers; i++)
            HR_TRY(expert_views(m, i));
    }
    plan_kv(m);
    HR_TRY(hr_load_hybrid_finish(m));
    HR_TRY(hr_rope_init(m));
    hr_tensor f = {.data = m->inv_freq_host, .dtype = HR_F32, .ndim = 1, .shape = {m->rot_dim / 2}};
    HR_TRY(upload(m, &f, &m->inv_freq));
    f.data = m->inv_freq_sliding_host;
    f.shape[0] = m->rot_dim_sliding / 2;
    return upload(m, &f, &m->inv_freq_sliding);
}

hr_err *hr_model_load(const char *dir, hr_backend *be, hr_model **out) {
    *out = NULL;
    hr_model *m = calloc(1, sizeof *m);
    if (!m) return hr_err_oom();
    m->be = be;
    hr_err *err = hr_weights_open(dir, &m->cfg, &m->w);
    if (!err && !hr_is_gguf(dir)) err = hr_mlx_qconfig_load(dir, &m->mlx);
    if (!err) err = hr_err_wrap(load_weights(m), "%s: ", dir);
    if (err) {
        hr_model_free(m);
        return err;
    }
    HR_INFO("loaded %s: %s, %d layers, hidden %d, %zu MiB of weights", dir, m->cfg.model_type,
            m->cfg.n_layers, m->cfg.hidden, hr_weights_data_bytes(m->w) >> 20);
    *out = m;
    return NULL;
}

static void free_scratch(hr_model *m) {
    float **bufs[] = {&m->s.x,    &m->s.h,     &m->s.q,     &m->s.k,    &m->s.v,
                      &m->s.attn, &m->s.gate,  &m->s.up,    &m->s.sel,  &m->s.logits,
                      &m->s.ple,  &m->s.ple_g, &m->s.ple_l, &m->s.moe_x};
    for (size_t i = 0; i < sizeof bufs / sizeof *bufs; i++) {
        if (*bufs[i]) m->be->vt->free(m->be, *bufs[i]);
        *bufs[i] = NULL;
    }
    if (m->s.ids) m->be->vt->free(m->be, m->s.ids);
    m->s.ids = NULL;
    if (m->s.sampled) m->be->vt->free(m->be, m->s.sampled);
    m->s.sampled = NULL;
}

void hr_model_free(hr_model *m) {
    if (!m) return;
    free_scratch(m);
    if (m->no_token) m->be->vt->free(m->be, m->no_token);
    for (int i = 0; i < m->n_dev; i++) {
        m->be->vt->release(m->be, &m->dev[i]);
        if (m->dev_name) free(m->dev_name[i]);
    }
    free(m->dev_name);
    hr_weights_close(m->w);
    hr_mlx_qconfig_free(&m->mlx);
    free(m->dev);
    free(m->layers);
    free(m->inv_freq_host);
    free(m->inv_freq_sliding_host);
    free(m->expert_views);
    free(m->expert_ptrs);
    free(m->moe);
    free(m->meta_tokens);
    free(m->meta_pos);
    free(m->meta_row);
    free(m->meta_qstart);
    free(m->meta_table);
    hr_free_hybrid(m);
    free(m);
}

const hr_model_config *hr_model_cfg(const hr_model *m) { return &m->cfg; }
hr_backend *hr_model_backend(const hr_model *m) { return m->be; }
size_t hr_model_weight_bytes(const hr_model *m) { return hr_weights_data_bytes(m->w); }

static uint64_t mix_bytes(uint64_t h, const void *p, size_t n) {
    const uint8_t *b = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 1099511628211ull;
    return h;
}

/* Samples, not the whole file: hashing every byte of a 10 GB checkpoint would take seconds
 * at each start. Each uploaded file tensor adds its name, dtype, shape and up to 4 KiB from
 * its start, middle and end. */
uint64_t hr_model_weight_hash(const hr_model *m) {
    enum { SAMPLE = 4096 };
    uint64_t h = 1469598103934665603ull;
    for (int i = 0; i < m->n_dev; i++) {
        const hr_tensor *t = m->dev_name[i] ? hr_weights_get(m->w, m->dev_name[i]) : NULL;
        if (!t) continue;
        h = mix_bytes(h, m->dev_name[i], strlen(m->dev_name[i]) + 1);
        int64_t dims[HR_MAX_DIMS + 2] = {t->dtype, t->ndim};
        for (int d = 0; d < t->ndim && d < HR_MAX_DIMS; d++)
            dims[d + 2] = t->shape[d];
        h = mix_bytes(h, dims, sizeof dims);
        size_t n = hr_tensor_bytes(t), k = n < SAMPLE ? n : SAMPLE;
        if (!t->data || n == 0) continue;
        const uint8_t *d = t->data;
        h = mix_bytes(h, d, k);
        h = mix_bytes(h, d + (n - k) / 2, k);
        h = mix_bytes(h, d + n - k, k);
    }
    return h;
}

void hr_config_kv_shape(const hr_model_config *c, hr_dtype dtype, hr_kv_store *kv,
                        int *slot_head_dim) {
    int slot_of[HR_MAX_LAYERS];
    *kv =
        (hr_kv_store){.dtype = dtype, .n_kv_heads = c->n_kv_heads, .layer_head_dim = slot_head_dim};
    kv->n_layers = kv_slots(c, slot_of, slot_head_dim);
    for (int l = 0; l < c->n_layers; l++) {
        if (c->layer_head_dim[l] > kv->head_dim) kv->head_dim = c->layer_head_dim[l];
        kv->n_state_layers += c->layer_kind[l] == HR_LAYER_LINEAR;
    }
    if (kv->n_state_layers == 0) return;
    kv->conv_floats = (long)(c->lin_conv_kernel - 1) * hr_dim_value(c, HR_DIM_LIN_CONV);
    kv->delta_floats = (long)c->lin_v_heads * c->lin_k_dim * c->lin_v_dim;
}

void hr_model_kv_shape(const hr_model *m, hr_kv_store *kv) {
    int head_dims[HR_MAX_LAYERS];
    hr_config_kv_shape(&m->cfg, m->kv_dtype, kv, head_dims);
    kv->layer_head_dim = m->kv_slot_head_dim; /* plan_kv's copy of the same dims, kept */
}

void hr_model_set_kv_dtype(hr_model *m, hr_dtype dtype) { m->kv_dtype = dtype; }

hr_err *hr_model_set_token_ids(hr_model *m, int n) {
    int V = m->cfg.vocab;
    if (m->no_token) m->be->vt->free(m->be, m->no_token);
    m->no_token = NULL;
    m->n_token_ids = n < V ? n : V;
    if (n >= V) return NULL;
    if (n < 1) return hr_errf("a model needs at least one token id (got %d)", n);
    size_t bytes = sizeof(float) * (size_t)(V - n);
    float *host = malloc(bytes);
    if (!host) return hr_err_oom();
    for (int i = 0; i < V - n; i++)
        host[i] = -INFINITY;
    hr_err *err = m->be->vt->alloc(m->be, bytes, (void **)&m->no_token);
    if (!err) err = m->be->vt->write(m->be, m->no_token, host, bytes);
    if (!err) err = m->be->vt->sync(m->be);
    free(host);
    if (err) {
        if (m->no_token) m->be->vt->free(m->be, m->no_token);
        m->no_token = NULL;
        m->n_token_ids = V;
    }
    return err;
}

int hr_model_kv_window(const hr_model *m, int slot) {
    for (int l = 0; l < m->cfg.n_layers; l++)
        if (m->kv_slot[l] == slot && m->cfg.kv_source[l] == l &&
            m->cfg.layer_kind[l] != HR_LAYER_LINEAR)
            return m->cfg.layer_kind[l] == HR_LAYER_SLIDING ? m->cfg.sliding_window : 0;
    return 0;
}
