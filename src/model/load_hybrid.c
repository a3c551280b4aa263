/* Loader pieces of the MoE and hybrid families: the per-expert tensor arrays, the maps from
 * linear-attention layer to recurrent-state layer, and qwen3_next's fused DeltaNet projections
 * (in_proj_qkvz, in_proj_ba: grouped per key head) rearranged at load into the qwen3_5 split
 * layout (in_proj_qkv, z, b, a), so one forward serves both families. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/layout.h"
#include "model/model_internal.h"

hr_err *hr_load_hybrid_prepare(hr_model *m) {
    const hr_model_config *c = &m->cfg;
    for (int l = 0; l < c->n_layers; l++)
        if (c->layer_kind[l] == HR_LAYER_LINEAR) m->state_layer[l] = m->n_state_layers++;
    if (c->n_experts == 0 || c->moe) return NULL; /* gemma4 stacks its experts: model.c views */
    m->expert_slots = calloc((size_t)c->n_layers * 3 * c->n_experts, sizeof *m->expert_slots);
    if (!m->expert_slots) return hr_err_oom();
    for (int l = 0; l < c->n_layers; l++) {
        const hr_tensor **base = m->expert_slots + (size_t)l * 3 * c->n_experts;
        m->layers[l].exp_gate = base;
        m->layers[l].exp_up = base + c->n_experts;
        m->layers[l].exp_down = base + 2 * c->n_experts;
    }
    return NULL;
}

/* host: `rows` rows of src picked by row_of, in a new host buffer the model owns. */
static hr_err *pick_rows(hr_model *m, const hr_tensor *src, int rows, const int *row_of,
                         hr_tensor *host) {
    size_t row_bytes = hr_dtype_bytes(src->dtype, src->shape[1]);
    void **owned = realloc(m->owned_host, sizeof *owned * (size_t)(m->n_owned + 1));
    if (!owned) return hr_err_oom();
    m->owned_host = owned;
    char *data = malloc(row_bytes * (size_t)rows);
    if (!data) return hr_err_oom();
    m->owned_host[m->n_owned++] = data;
    for (int r = 0; r < rows; r++)
        memcpy(data + r * row_bytes, (const char *)src->data + row_of[r] * row_bytes, row_bytes);
    *host = *src;
    host->data = data;
    host->shape[0] = rows;
    return NULL;
}

static hr_err *upload_host(hr_model *m, const hr_tensor *host, const hr_tensor **out) {
    if (m->n_dev == m->cap_dev) return hr_errf("internal: too many tensors");
    hr_tensor *d = &m->dev[m->n_dev];
    HR_TRY(m->be->vt->upload(m->be, host, d));
    m->n_dev++;
    *out = d;
    return NULL;
}

/* Uploads the (rows, cols) tensor made of `rows` rows of file tensor `name` picked by row_of;
 * an MLX-quantized one keeps its format (its scales and biases rows picked alike). */
static hr_err *gather_rows(hr_model *m, const char *name, int64_t cols, int rows, const int *row_of,
                           const hr_tensor **out) {
    const hr_tensor *src = hr_weights_get(m->w, name);
    hr_mlx_parts p;
    int q;
    HR_TRY(hr_mlx_weight(&m->mlx, m->w, name, src->shape[0], cols, &p, &q));
    hr_tensor w, s, b;
    if (!q) {
        HR_TRY(pick_rows(m, src, rows, row_of, &w));
        return upload_host(m, &w, out);
    }
    HR_TRY(pick_rows(m, &p.w, rows, row_of, &w));
    HR_TRY(pick_rows(m, p.scales, rows, row_of, &s));
    HR_TRY(pick_rows(m, p.biases, rows, row_of, &b));
    HR_TRY(upload_host(m, &s, &w.scales));
    HR_TRY(upload_host(m, &b, &w.biases));
    return upload_host(m, &w, out);
}

/* qwen3_next: per key head g, qkvz rows are [q_g (dk), k_g (dk), v_g (r dv), z_g (r dv)] and ba
 * rows [b_g (r), a_g (r)], r = value heads per key head. */
static hr_err *split_fused(hr_model *m, int l, int *map) {
    const hr_model_config *c = &m->cfg;
    char qkvz[160], ba[160];
    int nk = c->lin_k_heads, dk = c->lin_k_dim, dv = c->lin_v_dim, r = c->lin_v_heads / nk;
    int group = 2 * dk + 2 * r * dv, kd = nk * dk, vd = c->lin_v_heads * dv;
    snprintf(qkvz, sizeof qkvz, "%slayers.%d.linear_attn.in_proj_qkvz.weight", c->prefix, l);
    snprintf(ba, sizeof ba, "%slayers.%d.linear_attn.in_proj_ba.weight", c->prefix, l);
    for (int g = 0; g < nk; g++)
        for (int i = 0; i < dk; i++) {
            map[g * dk + i] = g * group + i;           /* q */
            map[kd + g * dk + i] = g * group + dk + i; /* k */
        }
    for (int g = 0; g < nk; g++)
        for (int i = 0; i < r * dv; i++) {
            map[2 * kd + g * r * dv + i] = g * group + 2 * dk + i;               /* v */
            map[2 * kd + vd + g * r * dv + i] = g * group + 2 * dk + r * dv + i; /* z */
        }
    hr_layer_weights *L = &m->layers[l];
    HR_TRY(gather_rows(m, qkvz, c->hidden, 2 * kd + vd, map, &L->lin_qkv));
    HR_TRY(gather_rows(m, qkvz, c->hidden, vd, map + 2 * kd + vd, &L->lin_z));
    for (int g = 0; g < nk; g++)
        for (int i = 0; i < r; i++) {
            map[g * r + i] = g * 2 * r + i;                      /* b */
            map[c->lin_v_heads + g * r + i] = g * 2 * r + r + i; /* a */
        }
    HR_TRY(gather_rows(m, ba, c->hidden, c->lin_v_heads, map, &L->lin_b));
    return gather_rows(m, ba, c->hidden, c->lin_v_heads, map + c->lin_v_heads, &L->lin_a);
}

hr_err *hr_load_hybrid_finish(hr_model *m) {
    const hr_model_config *c = &m->cfg;
    if (!c->lin_fused_proj || m->n_state_layers == 0) return NULL;
    int *map = malloc(sizeof(int) * (size_t)hr_dim_value(c, HR_DIM_LIN_QKVZ));
    if (!map) return hr_err_oom();
    hr_err *err = NULL;
    for (int l = 0; l < c->n_layers && !err; l++)
        if (c->layer_kind[l] == HR_LAYER_LINEAR) err = split_fused(m, l, map);
    free(map);
    return err;
}

void hr_free_hybrid(hr_model *m) {
    float *bufs[] = {m->s.qg, m->s.agate, m->s.rlogits, m->s.rweight, m->s.mix,
                     m->s.z,  m->s.ab,    m->s.lin,     m->s.y2};
    for (size_t i = 0; i < sizeof bufs / sizeof *bufs; i++)
        if (bufs[i]) m->be->vt->free(m->be, bufs[i]);
    if (m->s.rids) m->be->vt->free(m->be, m->s.rids);
    for (int i = 0; i < m->n_owned; i++)
        free(m->owned_host[i]);
    free(m->owned_host);
    free(m->expert_slots);
    free(m->meta_slots);
}
