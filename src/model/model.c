/* Loading the decoder families (llama, mistral, qwen2, qwen3, and the MoE / hybrid ones with
 * load_hybrid.c): checks every tensor's presence and shape against the config, uploads
 * weights to the backend in their file dtype, and owns the per-step scratch buffers. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "model/layout.h"
#include "model/model_internal.h"

static hr_err *upload(hr_model *m, const hr_tensor *host, const hr_tensor **out) {
    if (m->n_dev == m->cap_dev) return hr_errf("internal: too many tensors");
    hr_tensor *d = &m->dev[m->n_dev];
    HR_TRY(m->be->vt->upload(m->be, host, d));
    m->n_dev++;
    *out = d;
    return NULL;
}

/* Finds `name`, checks its shape (ndim dims from dims[]) and dtype, uploads it. */
static hr_err *weight(hr_model *m, const char *name, int ndim, const int64_t *dims,
                      const hr_tensor **out) {
    *out = NULL;
    const hr_tensor *t = hr_st_get(m->st, name);
    if (!t) return hr_errf("missing tensor \"%s\"", name);
    int ok = t->ndim == ndim;
    for (int i = 0; ok && i < ndim; i++) ok = t->shape[i] == dims[i];
    if (!ok) {
        char got[64], want[64];
        hr_tensor w = {.ndim = ndim};
        for (int i = 0; i < ndim; i++) w.shape[i] = dims[i];
        return hr_errf("tensor \"%s\" has shape %s, expected %s", name,
                       hr_tensor_shape_str(t, got, sizeof got), hr_tensor_shape_str(&w, want, sizeof want));
    }
    if (t->dtype != HR_F32 && t->dtype != HR_BF16 && t->dtype != HR_F16)
        return hr_errf("tensor \"%s\": dtype %s is not a float type", name, hr_dtype_name(t->dtype));
    return upload(m, t, out);
}

static hr_err *w1(hr_model *m, const char *name, int64_t a, const hr_tensor **out) {
    return weight(m, name, 1, (int64_t[]){a}, out);
}
static hr_err *w2(hr_model *m, const char *name, int64_t a, int64_t b, const hr_tensor **out) {
    return weight(m, name, 2, (int64_t[]){a, b}, out);
}

/* Stores tensor t of layer i (each expert's, for a per-expert tensor). */
static hr_err *load_tensor(hr_model *m, int i, const hr_layer_tensor *lt) {
    const hr_model_config *c = &m->cfg;
    char name[224], suffix[128];
    char *base = (char *)&m->layers[i] + lt->field;
    int n = lt->per_expert ? c->n_experts : 1;
    int64_t rows = hr_dim_value(c, lt->rows), cols = hr_dim_value(c, lt->cols);
    for (int e = 0; e < n; e++) {
        snprintf(suffix, sizeof suffix, lt->suffix, e);
        snprintf(name, sizeof name, "%slayers.%d.%s", c->prefix, i, suffix);
        const hr_tensor **slot = lt->per_expert ? &(*(const hr_tensor ***)base)[e] : (const hr_tensor **)base;
        if (lt->conv) HR_TRY(weight(m, name, 3, (int64_t[]){rows, 1, cols}, slot));
        else if (lt->cols == HR_DIM_NONE) HR_TRY(w1(m, name, rows, slot));
        else HR_TRY(w2(m, name, rows, cols, slot));
    }
    return NULL;
}

static hr_err *load_layer(hr_model *m, int i) {
    for (int k = 0; k < hr_layout_count(); k++) {
        const hr_layer_tensor *lt = hr_layout_tensor(k);
        /* a tensor the config turns off (e.g. a bias) is left NULL: transformers ignores it too */
        if (hr_layer_has(&m->cfg, lt, i)) HR_TRY(load_tensor(m, i, lt));
    }
    return NULL;
}

static hr_err *load_weights(hr_model *m) {
    const hr_model_config *c = &m->cfg;
    m->cap_dev = c->n_layers * (40 + 3 * c->n_experts) + 8;
    m->dev = calloc((size_t)m->cap_dev, sizeof *m->dev);
    m->layers = calloc((size_t)c->n_layers, sizeof *m->layers);
    if (!m->dev || !m->layers) return hr_err_oom();
    HR_TRY(hr_load_hybrid_prepare(m));
    char name[64];
    snprintf(name, sizeof name, "%sembed_tokens.weight", c->prefix);
    HR_TRY(w2(m, name, c->vocab, c->hidden, &m->embed));
    snprintf(name, sizeof name, "%snorm.weight", c->prefix);
    HR_TRY(w1(m, name, c->hidden, &m->final_norm));
    if (c->tie_embeddings) m->lm_head = m->embed;
    else HR_TRY(w2(m, "lm_head.weight", c->vocab, c->hidden, &m->lm_head));
    for (int i = 0; i < c->n_layers; i++) HR_TRY(load_layer(m, i));
    HR_TRY(hr_load_hybrid_finish(m));
    HR_TRY(hr_rope_init(m));
    hr_tensor f = {.data = m->inv_freq_host, .dtype = HR_F32, .ndim = 1, .shape = {m->rot_dim / 2}};
    return upload(m, &f, &m->inv_freq);
}

hr_err *hr_model_load(const char *dir, hr_backend *be, hr_model **out) {
    *out = NULL;
    hr_model *m = calloc(1, sizeof *m);
    if (!m) return hr_err_oom();
    m->be = be;
    hr_err *err = hr_config_load(dir, &m->cfg);
    if (!err) err = hr_st_open(dir, &m->st);
    if (!err) err = hr_err_wrap(load_weights(m), "%s: ", dir);
    if (err) {
        hr_model_free(m);
        return err;
    }
    HR_INFO("loaded %s: %s, %d layers, hidden %d, %zu MiB of weights", dir, m->cfg.model_type,
            m->cfg.n_layers, m->cfg.hidden, hr_st_data_bytes(m->st) >> 20);
    *out = m;
    return NULL;
}

static void free_scratch(hr_model *m) {
    float **bufs[] = {&m->s.x, &m->s.h, &m->s.q, &m->s.k, &m->s.v, &m->s.attn,
                      &m->s.gate, &m->s.up, &m->s.sel, &m->s.logits};
    for (size_t i = 0; i < sizeof bufs / sizeof *bufs; i++) {
        if (*bufs[i]) m->be->vt->free(m->be, *bufs[i]);
        *bufs[i] = NULL;
    }
}

void hr_model_free(hr_model *m) {
    if (!m) return;
    free_scratch(m);
    for (int i = 0; i < m->n_dev; i++) m->be->vt->release(m->be, &m->dev[i]);
    hr_st_close(m->st);
    free(m->dev);
    free(m->layers);
    free(m->inv_freq_host);
    free(m->meta_pos);
    free(m->meta_row);
    free(m->meta_tables);
    hr_free_hybrid(m);
    free(m);
}

const hr_model_config *hr_model_cfg(const hr_model *m) { return &m->cfg; }
hr_backend *hr_model_backend(const hr_model *m) { return m->be; }
size_t hr_model_weight_bytes(const hr_model *m) { return hr_st_data_bytes(m->st); }

void hr_model_kv_shape(const hr_model *m, hr_kv_store *kv) {
    kv->dtype = HR_F32;
    kv->n_layers = m->n_kv_layers;
    kv->n_state_layers = m->n_state_layers;
    kv->conv_floats = (long)(m->cfg.lin_conv_kernel - 1) * hr_dim_value(&m->cfg, HR_DIM_LIN_CONV);
    kv->delta_floats = (long)m->cfg.lin_v_heads * m->cfg.lin_k_dim * m->cfg.lin_v_dim;
    kv->n_kv_heads = m->cfg.n_kv_heads;
    kv->head_dim = m->cfg.head_dim;
}
