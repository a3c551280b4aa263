/* The MoE and gated-DeltaNet layers of the decoder forward (see forward.c), read top to bottom:
 *   MoE: rmsnorm -> router logits -> top-k -> routed experts (+ sigmoid-gated shared expert)
 *        -> residual.
 *   DeltaNet: rmsnorm -> in_proj_qkv / z / b / a -> causal conv1d + silu (rolling conv state)
 *        -> gated delta rule (recurrent state) -> gated RMSNorm (w * norm(o) * silu(z)) ->
 *        out_proj -> residual.
 * The recurrent state lives in the KV store; each row names its slot (hr_row.state_slot). */
#include "model/layout.h"
#include "model/model_internal.h"

hr_err *hr_hybrid_scratch(hr_model *m, int T) {
    const hr_model_config *c = &m->cfg;
    hr_scratch *s = &m->s;
    size_t t = (size_t)T, f = sizeof(float);
    if (c->attn_out_gate) {
        HR_TRY(hr_scratch_grow(m, (void **)&s->qg, t * 2 * c->n_heads * c->head_dim * f));
        HR_TRY(hr_scratch_grow(m, (void **)&s->agate, t * c->n_heads * c->head_dim * f));
    }
    if (c->n_experts > 0) {
        HR_TRY(hr_scratch_grow(m, (void **)&s->rlogits, t * c->n_experts * f));
        HR_TRY(hr_scratch_grow(m, (void **)&s->rweight, t * c->n_experts_per_tok * f));
        HR_TRY(hr_scratch_grow(m, (void **)&s->rids, t * c->n_experts_per_tok * sizeof(int32_t)));
        HR_TRY(hr_scratch_grow(m, (void **)&s->y2, t * c->hidden * f));
    }
    if (m->n_state_layers > 0) {
        size_t vd = (size_t)hr_dim_value(c, HR_DIM_LIN_V);
        HR_TRY(
            hr_scratch_grow(m, (void **)&s->mix, t * (size_t)hr_dim_value(c, HR_DIM_LIN_CONV) * f));
        HR_TRY(hr_scratch_grow(m, (void **)&s->z, t * vd * f));
        HR_TRY(hr_scratch_grow(m, (void **)&s->lin, t * vd * f));
        HR_TRY(hr_scratch_grow(m, (void **)&s->ab, t * 2 * c->lin_v_heads * f));
    }
    return NULL;
}

hr_err *hr_check_state_slots(const hr_model *m, const hr_kv_store *kv, const hr_row *rows,
                             int n_rows) {
    if (m->n_state_layers == 0) return NULL;
    if (kv->n_state_slots <= 0 || !kv->conv)
        return hr_errf("forward: this hybrid model needs recurrent-state slots in the KV store");
    for (int i = 0; i < n_rows; i++) {
        if (rows[i].state_slot < 0 || rows[i].state_slot >= kv->n_state_slots)
            return hr_errf("forward: row %d: state slot %d out of range (%d slots)", i,
                           rows[i].state_slot, kv->n_state_slots);
        for (int j = 0; j < i; j++)
            if (rows[j].state_slot == rows[i].state_slot)
                return hr_errf("forward: rows %d and %d share state slot %d", j, i,
                               rows[i].state_slot);
        int want = kv->state_pos ? kv->state_pos[rows[i].state_slot] : rows[i].pos0;
        if (rows[i].pos0 != 0 && rows[i].pos0 != want)
            return hr_errf(
                "forward: row %d starts at position %d but state slot %d holds %d positions "
                "(a recurrent state cannot rewind; start again at 0)",
                i, rows[i].pos0, rows[i].state_slot, want);
    }
    return NULL;
}

void hr_advance_state_slots(const hr_model *m, hr_kv_store *kv, const hr_row *rows, int n_rows) {
    if (m->n_state_layers == 0 || !kv->state_pos) return;
    for (int i = 0; i < n_rows; i++)
        kv->state_pos[rows[i].state_slot] = rows[i].pos0 + rows[i].n_tokens;
}

void hr_moe_block(hr_model *m, int l, int T) {
    const hr_model_config *c = &m->cfg;
    const hr_layer_weights *L = &m->layers[l];
    hr_backend *be = m->be;
    hr_scratch *s = &m->s;
    be->vt->rmsnorm(be, s->h, s->x, L->mlp_norm, T, c->hidden, (float)c->rms_eps, c->norm_one_plus);
    be->vt->matmul(be, s->rlogits, s->h, L->router, NULL, T);
    be->vt->moe_route(be, s->rids, s->rweight, s->rlogits, T, c->n_experts, c->n_experts_per_tok,
                      c->norm_topk_prob);
    hr_moe_weights w = {c->n_experts,
                        c->hidden,
                        c->moe_intermediate,
                        L->exp_gate,
                        L->exp_up,
                        L->exp_down,
                        c->act == HR_ACT_SILU ? HR_ACT_FN_SILU : HR_ACT_FN_GELU_TANH};
    be->vt->moe_experts(be, s->y2, s->h, s->rids, s->rweight, T, c->n_experts_per_tok, &w);
    if (L->sh_gate) {
        long n = (long)T * c->shared_expert_intermediate;
        be->vt->matmul(be, s->gate, s->h, L->sh_gate, NULL, T);
        be->vt->matmul(be, s->up, s->h, L->sh_up, NULL, T);
        be->vt->matmul(be, s->rlogits, s->h, L->sh_router, NULL, T); /* (T, 1) */
        be->vt->act_mul(be, s->gate, s->gate, s->up, n, w.act);
        be->vt->matmul(be, s->h, s->gate, L->sh_down, NULL, T);
        be->vt->sigmoid_mul(be, s->h, s->rlogits, T, c->hidden, 1);
        be->vt->add(be, s->y2, s->h, (long)T * c->hidden);
    }
    be->vt->add(be, s->x, s->y2, (long)T * c->hidden);
}

void hr_linear_attn_block(hr_model *m, hr_kv_store *kv, int l, int T) {
    const hr_model_config *c = &m->cfg;
    const hr_layer_weights *L = &m->layers[l];
    hr_backend *be = m->be;
    hr_scratch *s = &m->s;
    int conv = (int)hr_dim_value(c, HR_DIM_LIN_CONV), kd = c->lin_k_heads * c->lin_k_dim;
    int nv = c->lin_v_heads, vd = nv * c->lin_v_dim, sl = m->state_layer[l];
    be->vt->rmsnorm(be, s->h, s->x, L->attn_norm, T, c->hidden, (float)c->rms_eps,
                    c->norm_one_plus);
    be->vt->matmul(be, s->mix, s->h, L->lin_qkv, NULL, T);
    be->vt->matmul(be, s->z, s->h, L->lin_z, NULL, T);
    be->vt->matmul(be, s->ab, s->h, L->lin_a, NULL, T);
    be->vt->matmul(be, s->ab + (long)T * nv, s->h, L->lin_b, NULL, T);
    be->vt->conv1d(be, s->mix, L->conv_w, conv, kv, sl);
    hr_delta_params p = {
        .state_layer = sl,
        .n_k_heads = c->lin_k_heads,
        .n_v_heads = nv,
        .k_dim = c->lin_k_dim,
        .v_dim = c->lin_v_dim,
        .q = s->mix,
        .k = s->mix + kd,
        .v = s->mix + 2 * kd,
        .ld = conv,
        .a = s->ab,
        .b = s->ab + (long)T * nv,
        .a_log = L->a_log,
        .dt_bias = L->dt_bias,
    };
    be->vt->gated_delta(be, s->lin, kv, &p);
    be->vt->rmsnorm(be, s->lin, s->lin, L->lin_norm, T * nv, c->lin_v_dim, (float)c->rms_eps, 0);
    be->vt->act_mul(be, s->lin, s->z, s->lin, (long)T * vd, HR_ACT_FN_SILU);
    be->vt->matmul(be, s->h, s->lin, L->lin_out, NULL, T);
    be->vt->add(be, s->x, s->h, (long)T * c->hidden);
}
