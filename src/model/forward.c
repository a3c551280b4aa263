/* The batched forward pass of the decoder, read top to bottom: embed (x scale) -> per layer
 * [rmsnorm -> q/k/v (+bias) -> q/k(/v) norm -> rope -> paged KV write -> attention (-> output
 * gate) -> o_proj (-> post norm) -> residual -> rmsnorm -> gated MLP (+ MoE) (-> post norm)
 * -> residual (-> per-layer input) (x layer scalar)] -> final norm on the rows that want
 * logits -> lm_head (-> soft-cap). The config says which optional steps run
 * (docs/families.md); hybrid and MoE layers (forward_hybrid.c) replace the token mixer or the
 * MLP per layer. Rows of many sequences share every matmul. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model/model_internal.h"
#include "tensor/view.h"

hr_err *hr_scratch_grow(hr_model *m, void **buf, size_t bytes) {
    if (*buf) m->be->vt->free(m->be, *buf);
    *buf = NULL;
    return m->be->vt->alloc(m->be, bytes, buf);
}

static hr_err *grow(hr_model *m, float **buf, size_t floats) {
    return hr_scratch_grow(m, (void **)buf, floats * sizeof(float));
}

static hr_err *ensure_scratch(hr_model *m, int T, int R) {
    const hr_model_config *c = &m->cfg;
    hr_scratch *s = &m->s;
    if (T > s->cap_tokens) {
        size_t t = (size_t)T, qd = (size_t)c->n_heads * m->max_head_dim,
               kd = (size_t)c->n_kv_heads * m->max_head_dim;
        HR_TRY(grow(m, &s->x, t * c->hidden));
        HR_TRY(grow(m, &s->h, t * c->hidden));
        HR_TRY(grow(m, &s->q, t * qd));
        HR_TRY(grow(m, &s->k, t * kd));
        HR_TRY(grow(m, &s->v, t * kd));
        HR_TRY(grow(m, &s->attn, t * qd));
        size_t inter = (size_t)(c->intermediate > c->shared_expert_intermediate
                                    ? c->intermediate
                                    : c->shared_expert_intermediate);
        HR_TRY(grow(m, &s->gate, t * inter));
        HR_TRY(grow(m, &s->up, t * inter));
        if (c->ple_dim) {
            HR_TRY(grow(m, &s->ple, t * c->n_layers * c->ple_dim));
            HR_TRY(grow(m, &s->ple_g, t * c->ple_dim));
            HR_TRY(grow(m, &s->ple_l, t * c->ple_dim));
        }
        if (c->moe) HR_TRY(grow(m, &s->moe_x, t * c->hidden));
        HR_TRY(hr_hybrid_scratch(m, T));
        int32_t *tok = realloc(m->meta_tokens, sizeof(int32_t) * t);
        if (tok) m->meta_tokens = tok;
        int32_t *pos = realloc(m->meta_pos, sizeof(int32_t) * t);
        if (pos) m->meta_pos = pos;
        int32_t *row = realloc(m->meta_row, sizeof(int32_t) * t);
        if (row) m->meta_row = row;
        if (!tok || !pos || !row) return hr_err_oom();
        s->cap_tokens = T;
    }
    if (R > s->cap_logit_rows) {
        HR_TRY(grow(m, &s->sel, (size_t)R * c->hidden));
        HR_TRY(grow(m, &s->logits, (size_t)R * c->vocab));
        HR_TRY(hr_scratch_grow(m, (void **)&s->ids, (size_t)R * sizeof(int32_t)));
        HR_TRY(hr_scratch_grow(m, (void **)&s->sampled, (size_t)R * sizeof(hr_sample_out)));
        s->cap_logit_rows = R;
    }
    return NULL;
}

/* Grows the step's per-row arrays for n_rows rows and a block table of n_rows x max_blocks. */
static hr_err *ensure_rows(hr_model *m, int n_rows, int max_blocks) {
    if (n_rows > m->cap_rows) {
        int32_t *qs = realloc(m->meta_qstart, sizeof *qs * ((size_t)n_rows + 1));
        if (qs) m->meta_qstart = qs;
        int32_t *sl = realloc(m->meta_slots, sizeof *sl * (size_t)n_rows);
        if (sl) m->meta_slots = sl;
        if (!qs || !sl) return hr_err_oom();
        m->cap_rows = n_rows;
    }
    size_t cells = (size_t)n_rows * (size_t)max_blocks;
    if (cells > m->cap_table) {
        int32_t *bt = realloc(m->meta_table, sizeof *bt * cells);
        if (!bt) return hr_err_oom();
        m->meta_table = bt;
        m->cap_table = cells;
    }
    return NULL;
}

/* Validates rows and fills the step metadata as flat arrays: token ids, positions and the
 * row of each token, each row's first token, and one [n_rows, max_blocks] block table (the
 * rows' tables copied side by side, -1 past a row's last block). Returns total tokens and
 * logit rows. */
static hr_err *plan_step(hr_model *m, const hr_kv_store *kv, const hr_row *rows, int n_rows,
                         hr_step_meta *meta, int *R) {
    int t = 0, r = 0, bs = kv->block_size, max_blocks = 1;
    for (int i = 0; i < n_rows; i++) {
        if (rows[i].n_tokens <= 0 || rows[i].pos0 < 0)
            return hr_errf("forward: row %d is empty", i);
        for (int j = 0; j < rows[i].n_tokens; j++)
            if (rows[i].tokens[j] < 0 || rows[i].tokens[j] >= m->cfg.vocab)
                return hr_errf("token id %d out of range (vocab %d)", rows[i].tokens[j],
                               m->cfg.vocab);
        t += rows[i].n_tokens;
        r += rows[i].logits == HR_LOGITS_ALL ? rows[i].n_tokens : rows[i].logits == HR_LOGITS_LAST;
        int nb = (rows[i].pos0 + rows[i].n_tokens + bs - 1) / bs;
        if (nb > max_blocks) max_blocks = nb;
    }
    HR_TRY(ensure_scratch(m, t, r > 0 ? r : 1));
    HR_TRY(ensure_rows(m, n_rows, max_blocks));
    for (int i = 0, k = 0; i < n_rows; i++) {
        int nb = (rows[i].pos0 + rows[i].n_tokens + bs - 1) / bs;
        int32_t *bt = m->meta_table + (size_t)i * max_blocks;
        memcpy(bt, rows[i].block_table, sizeof *bt * (size_t)nb);
        for (int b = nb; b < max_blocks; b++)
            bt[b] = -1;
        m->meta_slots[i] = rows[i].state_slot;
        m->meta_qstart[i] = k;
        memcpy(m->meta_tokens + k, rows[i].tokens, sizeof(int32_t) * (size_t)rows[i].n_tokens);
        for (int j = 0; j < rows[i].n_tokens; j++, k++) {
            m->meta_pos[k] = rows[i].pos0 + j;
            m->meta_row[k] = i;
        }
    }
    m->meta_qstart[n_rows] = t;
    *meta = (hr_step_meta){.n_tokens = t,
                           .n_rows = n_rows,
                           .tokens = m->meta_tokens,
                           .pos = m->meta_pos,
                           .row = m->meta_row,
                           .q_start = m->meta_qstart,
                           .max_blocks = max_blocks,
                           .block_table = m->meta_table,
                           .state_slots = m->meta_slots};
    *R = r;
    return NULL;
}

static void norm(hr_model *m, float *y, const float *x, const hr_tensor *w, int rows, int dim) {
    m->be->vt->rmsnorm(m->be, y, x, w, rows, dim, (float)m->cfg.rms_eps, m->cfg.norm_one_plus);
}

static void attention_block(hr_model *m, hr_kv_store *kv, int l, int T) {
    const hr_model_config *c = &m->cfg;
    const hr_layer_weights *L = &m->layers[l];
    hr_backend *be = m->be;
    hr_scratch *s = &m->s;
    int hd = c->layer_head_dim[l], own_kv = c->kv_source[l] == l;
    int sliding = c->layer_kind[l] == HR_LAYER_SLIDING;
    const hr_tensor *inv_freq = sliding ? m->inv_freq_sliding : m->inv_freq;
    int rot = sliding ? m->rot_dim_sliding : m->rot_dim;
    norm(m, s->h, s->x, L->attn_norm, T, c->hidden);
    /* the products of h back to back: a backend may run them as one launch (CUDA's GEMV) */
    be->vt->matmul(be, c->attn_out_gate ? s->qg : s->q, s->h, L->wq, L->bq, T);
    if (own_kv) { /* a KV-sharing layer reads the KV its source layer stored */
        be->vt->matmul(be, s->k, s->h, L->wk, L->bk, T);
        be->vt->matmul(be, s->v, s->h, L->wv, L->bv, T);
    }
    if (c->attn_out_gate) { /* q_proj rows: per head, hd of query then hd of gate */
        long rows = (long)T * c->n_heads;
        be->vt->copy2d(be, s->q, hd, s->qg, 2L * hd, (int)rows, hd);
        be->vt->copy2d(be, s->agate, hd, s->qg + hd, 2L * hd, (int)rows, hd);
    }
    if (L->q_norm) norm(m, s->q, s->q, L->q_norm, T * c->n_heads, hd);
    if (own_kv && L->k_norm) norm(m, s->k, s->k, L->k_norm, T * c->n_kv_heads, hd);
    if (own_kv && c->v_norm)
        be->vt->rmsnorm(be, s->v, s->v, NULL, T * c->n_kv_heads, hd, (float)c->rms_eps, 0);
    /* rope of q and k, then the KV write, back to back: a backend may run them as one launch */
    be->vt->rope(be, s->q, c->n_heads, hd, rot, inv_freq);
    if (own_kv) {
        be->vt->rope(be, s->k, c->n_kv_heads, hd, rot, inv_freq);
        be->vt->kv_write(be, kv, m->kv_slot[l], s->k, s->v);
    }
    hr_attn_params p = {
        .layer = m->kv_slot[l],
        .n_heads = c->n_heads,
        .n_kv_heads = c->n_kv_heads,
        .head_dim = hd,
        .scale = c->attn_scale > 0 ? (float)c->attn_scale : 1.0f / sqrtf((float)hd),
        .window = sliding ? c->sliding_window : 0,
        .softcap = (float)c->attn_softcap,
    };
    be->vt->attention(be, s->attn, s->q, kv, &p);
    if (c->attn_out_gate)
        be->vt->sigmoid_mul(be, s->attn, s->agate, T, c->n_heads * hd, c->n_heads * hd);
    be->vt->matmul(be, s->h, s->attn, L->wo, L->bo, T);
    if (L->post_attn_norm) norm(m, s->h, s->h, L->post_attn_norm, T, c->hidden);
    be->vt->add(be, s->x, s->h, (long)T * c->hidden);
}

/* gemma4's MoE block beside the dense MLP (whose output is in s->h): routed on the
 * residual stream x, experts on their own pre-norm, each output post-normed, summed. */
static void moe_block(hr_model *m, int l, int T) {
    const hr_model_config *c = &m->cfg;
    const hr_layer_weights *L = &m->layers[l];
    hr_backend *be = m->be;
    hr_scratch *s = &m->s;
    norm(m, s->h, s->h, L->post_mlp_norm1, T, c->hidden);
    be->vt->rmsnorm(be, s->moe_x, s->x, L->router_scale, T, c->hidden, (float)c->rms_eps, 0);
    be->vt->scale(be, s->moe_x, 1.0f / sqrtf((float)c->hidden), (long)T * c->hidden);
    be->vt->matmul(be, s->rlogits, s->moe_x, L->router, NULL, T);
    be->vt->moe_route(be, s->rids, s->rweight, s->rlogits, T, c->n_experts, c->n_experts_per_tok,
                      1);
    be->vt->mul_gather(be, s->rweight, s->rids, L->expert_scale, (long)T * c->n_experts_per_tok);
    norm(m, s->moe_x, s->x, L->moe_norm, T, c->hidden);
    be->vt->moe_experts(be, s->y2, s->moe_x, s->rids, s->rweight, T, c->n_experts_per_tok,
                        &m->moe[l]);
    norm(m, s->y2, s->y2, L->post_moe_norm, T, c->hidden);
    be->vt->add(be, s->h, s->y2, (long)T * c->hidden);
}

/* gemma4's per-layer input: x += norm(proj(act(gate(x)) * ple[:, l])). */
static void ple_block(hr_model *m, int l, int T) {
    const hr_model_config *c = &m->cfg;
    const hr_layer_weights *L = &m->layers[l];
    hr_backend *be = m->be;
    hr_scratch *s = &m->s;
    int P = c->ple_dim;
    be->vt->matmul(be, s->ple_g, s->x, L->ple_gate, NULL, T);
    be->vt->copy2d(be, s->ple_l, P, s->ple + (long)l * P, (long)c->n_layers * P, T, P);
    be->vt->act_mul(be, s->ple_g, s->ple_g, s->ple_l, (long)T * P, HR_ACT_FN_GELU_TANH);
    be->vt->matmul(be, s->h, s->ple_g, L->ple_proj, NULL, T);
    norm(m, s->h, s->h, L->ple_norm, T, c->hidden);
    be->vt->add(be, s->x, s->h, (long)T * c->hidden);
}

static void mlp_block(hr_model *m, int l, int T) {
    const hr_model_config *c = &m->cfg;
    const hr_layer_weights *L = &m->layers[l];
    hr_backend *be = m->be;
    hr_scratch *s = &m->s;
    norm(m, s->h, s->x, L->mlp_norm, T, c->hidden);
    be->vt->matmul(be, s->gate, s->h, L->w_gate, L->b_gate, T);
    be->vt->matmul(be, s->up, s->h, L->w_up, L->b_up, T);
    be->vt->act_mul(be, s->gate, s->gate, s->up, (long)T * c->intermediate,
                    c->act == HR_ACT_SILU ? HR_ACT_FN_SILU : HR_ACT_FN_GELU_TANH);
    be->vt->matmul(be, s->h, s->gate, L->w_down, L->b_down, T);
    if (L->router) moe_block(m, l, T);
    if (L->post_mlp_norm) norm(m, s->h, s->h, L->post_mlp_norm, T, c->hidden);
    be->vt->add(be, s->x, s->h, (long)T * c->hidden);
    if (L->ple_gate) ple_block(m, l, T);
    if (m->layer_scale[l] != 1.0f) be->vt->scale(be, s->x, m->layer_scale[l], (long)T * c->hidden);
}

/* gemma4's per-layer inputs of every layer, [T, n_layers * ple]: (norm(x W / sqrt(hidden))
 * + embed_per_layer(ids) * sqrt(ple)) / sqrt(2), from the scaled token embedding x. */
static void ple_inputs(hr_model *m, int T) {
    const hr_model_config *c = &m->cfg;
    hr_backend *be = m->be;
    hr_scratch *s = &m->s;
    long all = (long)c->n_layers * c->ple_dim;
    be->vt->embed(be, s->ple, m->ple_embed, sqrtf((float)c->ple_dim));
    /* projected one layer at a time (a row slice of the weight): [T, ple] scratch only */
    for (int l = 0; l < c->n_layers; l++) {
        hr_tensor w, ws, wb;
        hr_tensor_rows(m->ple_model_proj, (int64_t)l * c->ple_dim, c->ple_dim, &w, &ws, &wb);
        be->vt->matmul(be, s->ple_l, s->x, &w, NULL, T);
        be->vt->scale(be, s->ple_l, 1.0f / sqrtf((float)c->hidden), (long)T * c->ple_dim);
        norm(m, s->ple_l, s->ple_l, m->ple_proj_norm, T, c->ple_dim);
        be->vt->copy2d(be, s->ple_g, c->ple_dim, s->ple + l * c->ple_dim, all, T, c->ple_dim);
        be->vt->add(be, s->ple_l, s->ple_g, (long)T * c->ple_dim);
        be->vt->scale(be, s->ple_l, 1.0f / sqrtf(2.0f), (long)T * c->ple_dim);
        be->vt->copy2d(be, s->ple + l * c->ple_dim, all, s->ple_l, c->ple_dim, T, c->ple_dim);
    }
}

/* Where a step's logits go: read back whole (logits), as each row's argmax (ids), or through
 * the sample op with sample's parameters (out). */
typedef struct {
    hr_step_head head;
    float *logits;
    int32_t *ids;
    const hr_sample_step *sample;
    hr_sample_out *out;
} step_out;

/* Copies the residual rows that want logits into s->sel, normed, then applies lm_head; the
 * logits, each row's argmax or the sample op's results come back as o says. */
static hr_err *head(hr_model *m, const hr_row *rows, int n_rows, int R, const step_out *o) {
    const hr_model_config *c = &m->cfg;
    hr_backend *be = m->be;
    hr_scratch *s = &m->s;
    int r = 0;
    for (int i = 0, t0 = 0; i < n_rows; t0 += rows[i].n_tokens, i++) {
        int n =
            rows[i].logits == HR_LOGITS_ALL ? rows[i].n_tokens : rows[i].logits == HR_LOGITS_LAST;
        int first = t0 + rows[i].n_tokens - n;
        be->vt->copy(be, s->sel + (long)r * c->hidden, s->x + (long)first * c->hidden,
                     (long)n * c->hidden);
        r += n;
    }
    norm(m, s->sel, s->sel, m->final_norm, R, c->hidden);
    be->vt->matmul(be, s->logits, s->sel, m->lm_head, NULL, R);
    if (c->final_softcap > 0)
        be->vt->softcap(be, s->logits, (float)c->final_softcap, (long)R * c->vocab);
    if (m->no_token) /* ids without a token: -inf in every row (source stride 0) */
        be->vt->copy2d(be, s->logits + m->n_token_ids, c->vocab, m->no_token, 0, R,
                       c->vocab - m->n_token_ids);
    s->logit_rows = R;
    switch (o->head) {
    case HR_HEAD_ARGMAX:
        be->vt->argmax(be, s->ids, s->logits, R, c->vocab);
        return be->vt->read(be, s->ids, o->ids, sizeof(int32_t) * (size_t)R);
    case HR_HEAD_SAMPLE:
        be->vt->sample(be, s->sampled, s->logits, R, c->vocab);
        return be->vt->read(be, s->sampled, o->out, sizeof(hr_sample_out) * (size_t)R);
    default: return be->vt->read(be, s->logits, o->logits, sizeof(float) * (size_t)R * c->vocab);
    }
}

/* The step's output checks: a buffer where logits are asked, the sample op and one sample
 * row per logit row for HR_HEAD_SAMPLE. */
static hr_err *check_out(const hr_model *m, const step_out *o, int R) {
    if (R > 0 && !o->logits && !o->ids && !o->out)
        return hr_errf("forward: logits requested but no output buffer");
    if (o->head != HR_HEAD_SAMPLE) return NULL;
    if (!m->be->vt->sample)
        return hr_errf("forward: the %s backend has no sample op", m->be->vt->name);
    if (!o->sample || o->sample->n_rows != R)
        return hr_errf("forward: %d sample rows for %d logit rows",
                       o->sample ? o->sample->n_rows : 0, R);
    return NULL;
}

static hr_err *forward(hr_model *m, hr_kv_store *kv, const hr_row *rows, int n_rows,
                       const step_out *o) {
    int R = 0;
    hr_step_meta meta;
    m->s.logit_rows = 0;
    HR_TRY(plan_step(m, kv, rows, n_rows, &meta, &R));
    HR_TRY(check_out(m, o, R));
    HR_TRY(hr_check_state_slots(m, kv, rows, n_rows));
    meta.head = o->head;
    meta.n_logit_rows = R;
    meta.sample = o->head == HR_HEAD_SAMPLE ? o->sample : NULL;
    hr_backend *be = m->be;
    HR_TRY(be->vt->step_begin(be, &meta));
    int T = meta.n_tokens;
    be->vt->embed(be, m->s.x, m->embed, (float)m->cfg.embed_scale);
    if (m->cfg.ple_dim) ple_inputs(m, T);
    for (int l = 0; l < m->cfg.n_layers; l++) {
        if (m->cfg.layer_kind[l] == HR_LAYER_LINEAR)
            hr_linear_attn_block(m, kv, l, T);
        else
            attention_block(m, kv, l, T);
        if (m->cfg.n_experts > 0 && m->cfg.moe_layer[l])
            hr_moe_block(m, l, T);
        else
            mlp_block(m, l, T);
    }
    hr_advance_state_slots(m, kv, rows, n_rows);
    return R > 0 ? head(m, rows, n_rows, R, o) : NULL;
}

hr_err *hr_model_forward(hr_model *m, hr_kv_store *kv, const hr_row *rows, int n_rows,
                         float *logits) {
    return forward(m, kv, rows, n_rows, &(step_out){.head = HR_HEAD_LOGITS, .logits = logits});
}

hr_err *hr_model_forward_greedy(hr_model *m, hr_kv_store *kv, const hr_row *rows, int n_rows,
                                int32_t *ids) {
    return forward(m, kv, rows, n_rows, &(step_out){.head = HR_HEAD_ARGMAX, .ids = ids});
}

hr_err *hr_model_forward_sample(hr_model *m, hr_kv_store *kv, const hr_row *rows, int n_rows,
                                const hr_sample_step *sample, hr_sample_out *out) {
    return forward(m, kv, rows, n_rows,
                   &(step_out){.head = HR_HEAD_SAMPLE, .sample = sample, .out = out});
}

int hr_model_can_sample(const hr_model *m) { return m->be->vt->sample != NULL; }

hr_err *hr_model_logits_row(hr_model *m, int r, float *dst) {
    if (r < 0 || r >= m->s.logit_rows)
        return hr_errf("logits row %d: the last step has %d", r, m->s.logit_rows);
    size_t V = (size_t)m->cfg.vocab;
    return m->be->vt->read(m->be, m->s.logits + (size_t)r * V, dst, sizeof(float) * V);
}
