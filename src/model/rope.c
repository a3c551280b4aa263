/* Rotary embedding frequencies as transformers computes them (float32 inv_freq, then the
 * rope type's rescaling): default, linear, llama3. */
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

hr_err *hr_rope_init(hr_model *m) {
    const hr_rope_config *r = &m->cfg.rope;
    int rot = (int)(m->cfg.head_dim * r->partial_rotary);
    rot -= rot % 2;
    if (rot <= 0) return hr_errf("config.json: rotary dimension is zero");
    m->rot_dim = rot;
    int n = rot / 2;
    m->inv_freq_host = malloc(sizeof(float) * (size_t)n);
    if (!m->inv_freq_host) return hr_err_oom();
    for (int i = 0; i < n; i++) {
        float expo = (float)(2 * i) / (float)rot;
        m->inv_freq_host[i] = 1.0f / powf((float)r->theta, expo);
    }
    if (r->type == HR_ROPE_LINEAR)
        for (int i = 0; i < n; i++) m->inv_freq_host[i] /= (float)r->factor;
    if (r->type == HR_ROPE_LLAMA3) llama3_scale(m->inv_freq_host, n, r);
    return NULL;
}
