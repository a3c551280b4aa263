/* Rotary embedding frequencies as transformers computes them (float32 inv_freq, then the
 * rope type's rescaling): default, linear, llama3, and gemma4's "proportional" (the first
 * partial_rotary * head_dim / 2 frequencies over the whole head, the rest zero, so the
 * rotation spans the whole head and leaves the tail unrotated). One table per layer kind.
 * A GGUF file's rope_freqs.weight (llama.cpp's form of llama3 scaling) divides the table. */
#include <math.h>
#include <stdlib.h>

#include "model/model_internal.h"

static void llama3_scale(float *f, int n, const hr_rope_config *r) {
    double low_wl = r->original_max_pos / r->low_freq_factor;
    double high_wl = r->original_max_pos / r->high_freq_factor;
    for (int i = 0; i < n; i++) {
        double wl = 2 * M_PI / f[i];
        if (wl < high_wl) continue;
        if (wl > low_wl) {
            f[i] = (float)(f[i] / r->factor);
            continue;
        }
        double smooth = (r->original_max_pos / wl - r->low_freq_factor) /
                        (r->high_freq_factor - r->low_freq_factor);
        f[i] = (float)((1 - smooth) * f[i] / r->factor + smooth * f[i]);
    }
}

static hr_err *rope_table(const hr_rope_config *r, int head_dim, float **out, int *rot_dim) {
    int rot = r->type == HR_ROPE_PROPORTIONAL ? head_dim : (int)(head_dim * r->partial_rotary);
    rot -= rot % 2;
    if (rot <= 0) return hr_errf("config.json: rotary dimension is zero");
    int n = rot / 2, live = n;
    if (r->type == HR_ROPE_PROPORTIONAL) live = (int)floor(r->partial_rotary * head_dim / 2);
    float *f = malloc(sizeof(float) * (size_t)n);
    if (!f) return hr_err_oom();
    for (int i = 0; i < n; i++) {
        float expo = (float)(2 * i) / (float)rot;
        f[i] = i < live ? 1.0f / powf((float)r->theta, expo) : 0.0f;
    }
    if (r->type == HR_ROPE_LINEAR || r->type == HR_ROPE_PROPORTIONAL)
        for (int i = 0; i < n; i++)
            f[i] /= (float)r->factor;
    if (r->type == HR_ROPE_LLAMA3) llama3_scale(f, n, r);
    *out = f;
    *rot_dim = rot;
    return NULL;
}

/* The head_dim of layers of kind k (all of them must agree; config_gemma.c sets them). */
static hr_err *kind_head_dim(const hr_model_config *c, hr_layer_kind k, int *hd) {
    *hd = c->head_dim;
    int seen = 0;
    for (int l = 0; l < c->n_layers; l++) {
        if (c->layer_kind[l] != k) continue;
        if (seen && c->layer_head_dim[l] != *hd)
            return hr_errf("config.json: layers of one attention type with different head_dim");
        *hd = c->layer_head_dim[l];
        seen = 1;
    }
    return NULL;
}

/* inv_freq[i] / factors[i], as llama.cpp applies rope_freqs.weight (F32, rot_dim / 2). */
static hr_err *freq_factors(hr_model *m, const hr_tensor *t) {
    if (!t) return NULL;
    if (t->dtype != HR_F32 || t->ndim != 1 || t->shape[0] != m->rot_dim / 2)
        return hr_errf("tensor rope_freqs.weight must be F32 of %d elements", m->rot_dim / 2);
    const float *f = t->data;
    for (int i = 0; i < m->rot_dim / 2; i++) {
        if (!(f[i] > 0)) return hr_errf("tensor rope_freqs.weight: factor %d is not positive", i);
        m->inv_freq_host[i] /= f[i];
    }
    return NULL;
}

hr_err *hr_rope_init(hr_model *m) {
    int hd;
    HR_TRY(kind_head_dim(&m->cfg, HR_LAYER_FULL, &hd));
    HR_TRY(rope_table(&m->cfg.rope, hd, &m->inv_freq_host, &m->rot_dim));
    HR_TRY(freq_factors(m, hr_weights_get(m->w, "rope_freqs.weight")));
    HR_TRY(kind_head_dim(&m->cfg, HR_LAYER_SLIDING, &hd));
    return rope_table(&m->cfg.rope_sliding, hd, &m->inv_freq_sliding_host, &m->rot_dim_sliding);
}
