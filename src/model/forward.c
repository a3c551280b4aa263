/* The batched forward pass of the dense decoder family, read top to bottom:
 * embed -> per layer [rmsnorm -> q/k/v (+bias) -> q/k norm -> rope -> paged KV write ->
 * attention -> o_proj -> residual -> rmsnorm -> gated MLP -> residual] -> final norm on
 * the rows that want logits -> lm_head. Rows of many sequences share every matmul. Hybrid
 * and MoE layers (forward_hybrid.c) replace the token mixer or the MLP per layer. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model/model_internal.h"

static hr_err *grow(hr_model *m, float **buf, size_t floats) {
    if (*buf) m->be->vt->free(m->be, *buf);
    *buf = NULL;
    return m->be->vt->alloc(m->be, floats * sizeof(float), (void **)buf);
}

static hr_err *ensure_scratch(hr_model *m, int T, int R) {
    const hr_model_config *c = &m->cfg;
    hr_scratch *s = &m->s;
    if (T > s->cap_tokens) {
        size_t t = (size_t)T, qd = (size_t)c->n_heads * c->head_dim, kd = (size_t)c->n_kv_heads * c->head_dim;
        HR_TRY(grow(m, &s->x, t * c->hidden));
        HR_TRY(grow(m, &s->h, t * c->hidden));
        HR_TRY(grow(m, &s->q, t * qd));
        HR_TRY(grow(m, &s->k, t * kd));
        HR_TRY(grow(m, &s->v, t * kd));
        HR_TRY(grow(m, &s->attn, t * qd));
        size_t inter = (size_t)(c->intermediate > c->shared_expert_intermediate ? c->intermediate
                                                                              : c->shared_expert_intermediate);
        HR_TRY(grow(m, &s->gate, t * inter));
        HR_TRY(grow(m, &s->up, t * inter));
        HR_TRY(hr_hybrid_scratch(m, T));
        int32_t *pos = realloc(m->meta_pos, sizeof(int32_t) * t);
        if (pos) m->meta_pos = pos;
        int32_t *row = realloc(m->meta_row, sizeof(int32_t) * t);
        if (row) m->meta_row = row;
        if (!pos || !row) return hr_err_oom();
        s->cap_tokens = T;
    }
    if (R > s->cap_logit_rows) {
        HR_TRY(grow(m, &s->sel, (size_t)R * c->hidden));
        HR_TRY(grow(m, &s->logits, (size_t)R * c->vocab));
        s->cap_logit_rows = R;
    }
    return NULL;
}

/* Validates rows and fills the step metadata; returns total tokens and logit rows. */
static hr_err *plan_step(hr_model *m, const hr_row *rows, int n_rows, int *T, int *R) {
    int t = 0, r = 0;
    for (int i = 0; i < n_rows; i++) {
        if (rows[i].n_tokens <= 0 || rows[i].pos0 < 0) return hr_errf("forward: row %d is empty", i);
        for (int j = 0; j < rows[i].n_tokens; j++)
            if (rows[i].tokens[j] < 0 || rows[i].tokens[j] >= m->cfg.vocab)
                return hr_errf("token id %d out of range (vocab %d)", rows[i].tokens[j], m->cfg.vocab);
        t += rows[i].n_tokens;
        r += rows[i].logits == HR_LOGITS_ALL ? rows[i].n_tokens : rows[i].logits == HR_LOGITS_LAST;
    }
    HR_TRY(ensure_scratch(m, t, r > 0 ? r : 1));
    if (n_rows > m->cap_rows) {
        const int32_t **bt = realloc(m->meta_tables, sizeof *bt * (size_t)n_rows);
        if (bt) m->meta_tables = bt;
        int32_t *sl = realloc(m->meta_slots, sizeof *sl * (size_t)n_rows);
        if (sl) m->meta_slots = sl;
        if (!bt || !sl) return hr_err_oom();
        m->cap_rows = n_rows;
    }
    for (int i = 0, k = 0; i < n_rows; i++) {
        m->meta_tables[i] = rows[i].block_table;
        m->meta_slots[i] = rows[i].state_slot;
        for (int j = 0; j < rows[i].n_tokens; j++, k++) {
            m->meta_pos[k] = rows[i].pos0 + j;
            m->meta_row[k] = i;
        }
    }
    *T = t;
    *R = r;
    return NULL;
}

static void attention_block(hr_model *m, hr_kv_store *kv, int l, int T) {
    const hr_model_config *c = &m->cfg;
    const hr_layer_weights *L = &m->layers[l];
    hr_backend *be = m->be;
    hr_scratch *s = &m->s;
    be->vt->rmsnorm(be, s->h, s->x, L->attn_norm, T, c->hidden, (float)c->rms_eps, c->norm_one_plus);
    if (c->attn_out_gate) { /* q_proj rows: per head, hd of query then hd of gate */
        be->vt->matmul(be, s->qg, s->h, L->wq, L->bq, T);
        be->vt->split(be, s->q, s->agate, s->qg, (long)T * c->n_heads, c->head_dim, c->head_dim);
    } else {
        be->vt->matmul(be, s->q, s->h, L->wq, L->bq, T);
    }
    be->vt->matmul(be, s->k, s->h, L->wk, L->bk, T);
    be->vt->matmul(be, s->v, s->h, L->wv, L->bv, T);
    if (L->q_norm) {
        be->vt->rmsnorm(be, s->q, s->q, L->q_norm, T * c->n_heads, c->head_dim, (float)c->rms_eps, c->norm_one_plus);
        be->vt->rmsnorm(be, s->k, s->k, L->k_norm, T * c->n_kv_heads, c->head_dim, (float)c->rms_eps, c->norm_one_plus);
    }
    be->vt->rope(be, s->q, c->n_heads, c->head_dim, m->rot_dim, m->inv_freq);
    be->vt->rope(be, s->k, c->n_kv_heads, c->head_dim, m->rot_dim, m->inv_freq);
    be->vt->kv_write(be, kv, m->kv_layer[l], s->k, s->v);
    hr_attn_params p = {
        .layer = m->kv_layer[l], .n_heads = c->n_heads, .n_kv_heads = c->n_kv_heads, .head_dim = c->head_dim,
        .scale = 1.0f / sqrtf((float)c->head_dim),
        .window = c->layer_kind[l] == HR_LAYER_SLIDING ? c->sliding_window : 0,
    };
    be->vt->attention(be, s->attn, s->q, kv, &p);
    if (c->attn_out_gate) be->vt->sigmoid_mul(be, s->attn, s->agate, T, c->n_heads * c->head_dim, c->n_heads * c->head_dim);
    be->vt->matmul(be, s->h, s->attn, L->wo, L->bo, T);
    be->vt->add(be, s->x, s->h, (long)T * c->hidden);
}

static void mlp_block(hr_model *m, int l, int T) {
    const hr_model_config *c = &m->cfg;
    const hr_layer_weights *L = &m->layers[l];
    hr_backend *be = m->be;
    hr_scratch *s = &m->s;
    be->vt->rmsnorm(be, s->h, s->x, L->mlp_norm, T, c->hidden, (float)c->rms_eps, c->norm_one_plus);
    be->vt->matmul(be, s->gate, s->h, L->w_gate, L->b_gate, T);
    be->vt->matmul(be, s->up, s->h, L->w_up, L->b_up, T);
    be->vt->act_mul(be, s->gate, s->gate, s->up, (long)T * c->intermediate,
                    c->act == HR_ACT_SILU ? HR_ACT_FN_SILU : HR_ACT_FN_GELU_TANH);
    be->vt->matmul(be, s->h, s->gate, L->w_down, L->b_down, T);
    be->vt->add(be, s->x, s->h, (long)T * c->hidden);
}

/* Copies the residual rows that want logits into s->sel, normed, then applies lm_head. */
static hr_err *head(hr_model *m, const hr_row *rows, int n_rows, int R, float *logits) {
    const hr_model_config *c = &m->cfg;
    hr_backend *be = m->be;
    hr_scratch *s = &m->s;
    int r = 0;
    for (int i = 0, t0 = 0; i < n_rows; t0 += rows[i].n_tokens, i++) {
        int n = rows[i].logits == HR_LOGITS_ALL ? rows[i].n_tokens : rows[i].logits == HR_LOGITS_LAST;
        int first = t0 + rows[i].n_tokens - n;
        be->vt->copy(be, s->sel + (long)r * c->hidden, s->x + (long)first * c->hidden, (long)n * c->hidden);
        r += n;
    }
    be->vt->rmsnorm(be, s->sel, s->sel, m->final_norm, R, c->hidden, (float)c->rms_eps, c->norm_one_plus);
    be->vt->matmul(be, s->logits, s->sel, m->lm_head, NULL, R);
    return be->vt->read(be, s->logits, logits, sizeof(float) * (size_t)R * c->vocab);
}

hr_err *hr_model_forward(hr_model *m, hr_kv_store *kv, const hr_row *rows, int n_rows, float *logits) {
    int T = 0, R = 0;
    HR_TRY(plan_step(m, rows, n_rows, &T, &R));
    if (R > 0 && !logits) return hr_errf("forward: logits requested but no output buffer");
    HR_TRY(hr_check_state_slots(m, kv, rows, n_rows));
    hr_step_meta meta = {T, m->meta_pos, m->meta_row, n_rows, m->meta_tables, m->meta_slots};
    hr_backend *be = m->be;
    HR_TRY(be->vt->step_begin(be, &meta));
    for (int i = 0, t0 = 0; i < n_rows; t0 += rows[i].n_tokens, i++)
        be->vt->embed(be, m->s.x + (long)t0 * m->cfg.hidden, m->embed, rows[i].tokens, rows[i].n_tokens, 1.0f);
    for (int l = 0; l < m->cfg.n_layers; l++) {
        if (m->cfg.layer_kind[l] == HR_LAYER_LINEAR) hr_linear_attn_block(m, kv, l, T);
        else attention_block(m, kv, l, T);
        if (m->cfg.n_experts > 0 && m->cfg.moe_layer[l]) hr_moe_block(m, l, T);
        else mlp_block(m, l, T);
    }
    hr_advance_state_slots(m, kv, rows, n_rows);
    return R > 0 ? head(m, rows, n_rows, R, logits) : NULL;
}
