/* The dense and gemma per-layer tensor table and the dims, conditions and per-layer rules
 * every table shares; see layout.h. */
#include "model/layout.h"

#include "model/model_internal.h"

#define F(x) offsetof(hr_layer_weights, x)
const hr_layer_tensor hr_dense_layer_tensors[] = {
    {"input_layernorm.weight", F(attn_norm), HR_DIM_HIDDEN, HR_DIM_NONE, HR_WHEN_ALWAYS,
     HR_INIT_NORM, HR_AT_ANY, 0, 0},
    {"self_attn.q_proj.weight", F(wq), HR_DIM_Q_PROJ, HR_DIM_HIDDEN, HR_WHEN_ALWAYS, HR_INIT_LINEAR,
     HR_AT_ATTN, 0, 0},
    {"self_attn.k_proj.weight", F(wk), HR_DIM_KV, HR_DIM_HIDDEN, HR_WHEN_OWN_KV, HR_INIT_LINEAR,
     HR_AT_ATTN, 0, 0},
    {"self_attn.v_proj.weight", F(wv), HR_DIM_KV, HR_DIM_HIDDEN, HR_WHEN_OWN_KV, HR_INIT_LINEAR,
     HR_AT_ATTN, 0, 0},
    {"self_attn.o_proj.weight", F(wo), HR_DIM_HIDDEN, HR_DIM_Q, HR_WHEN_ALWAYS, HR_INIT_LINEAR,
     HR_AT_ATTN, 0, 0},
    {"self_attn.q_proj.bias", F(bq), HR_DIM_Q, HR_DIM_NONE, HR_WHEN_QKV_BIAS, HR_INIT_BIAS,
     HR_AT_ATTN, 0, 0},
    {"self_attn.k_proj.bias", F(bk), HR_DIM_KV, HR_DIM_NONE, HR_WHEN_QKV_BIAS, HR_INIT_BIAS,
     HR_AT_ATTN, 0, 0},
    {"self_attn.v_proj.bias", F(bv), HR_DIM_KV, HR_DIM_NONE, HR_WHEN_QKV_BIAS, HR_INIT_BIAS,
     HR_AT_ATTN, 0, 0},
    {"self_attn.o_proj.bias", F(bo), HR_DIM_HIDDEN, HR_DIM_NONE, HR_WHEN_O_BIAS, HR_INIT_BIAS,
     HR_AT_ATTN, 0, 0},
    {"self_attn.q_norm.weight", F(q_norm), HR_DIM_HEAD, HR_DIM_NONE, HR_WHEN_QK_NORM, HR_INIT_NORM,
     HR_AT_ATTN, 0, 0},
    {"self_attn.k_norm.weight", F(k_norm), HR_DIM_HEAD, HR_DIM_NONE, HR_WHEN_K_NORM, HR_INIT_NORM,
     HR_AT_ATTN, 0, 0},
    {"post_attention_layernorm.weight", F(mlp_norm), HR_DIM_HIDDEN, HR_DIM_NONE,
     HR_WHEN_NOT_SANDWICH, HR_INIT_NORM, HR_AT_ANY, 0, 0},
    {"mlp.gate_proj.weight", F(w_gate), HR_DIM_INTER, HR_DIM_HIDDEN, HR_WHEN_ALWAYS, HR_INIT_LINEAR,
     HR_AT_DENSE_MLP, 0, 0},
    {"mlp.up_proj.weight", F(w_up), HR_DIM_INTER, HR_DIM_HIDDEN, HR_WHEN_ALWAYS, HR_INIT_LINEAR,
     HR_AT_DENSE_MLP, 0, 0},
    {"mlp.down_proj.weight", F(w_down), HR_DIM_HIDDEN, HR_DIM_INTER, HR_WHEN_ALWAYS, HR_INIT_LINEAR,
     HR_AT_DENSE_MLP, 0, 0},
    {"mlp.gate_proj.bias", F(b_gate), HR_DIM_INTER, HR_DIM_NONE, HR_WHEN_MLP_BIAS, HR_INIT_BIAS,
     HR_AT_DENSE_MLP, 0, 0},
    {"mlp.up_proj.bias", F(b_up), HR_DIM_INTER, HR_DIM_NONE, HR_WHEN_MLP_BIAS, HR_INIT_BIAS,
     HR_AT_DENSE_MLP, 0, 0},
    {"mlp.down_proj.bias", F(b_down), HR_DIM_HIDDEN, HR_DIM_NONE, HR_WHEN_MLP_BIAS, HR_INIT_BIAS,
     HR_AT_DENSE_MLP, 0, 0},
    /* gemma: norms after attention and the MLP; "post_attention_layernorm" is then the former */
    {"post_attention_layernorm.weight", F(post_attn_norm), HR_DIM_HIDDEN, HR_DIM_NONE,
     HR_WHEN_SANDWICH, HR_INIT_NORM, HR_AT_ANY, 0, 0},
    {"pre_feedforward_layernorm.weight", F(mlp_norm), HR_DIM_HIDDEN, HR_DIM_NONE, HR_WHEN_SANDWICH,
     HR_INIT_NORM, HR_AT_ANY, 0, 0},
    {"post_feedforward_layernorm.weight", F(post_mlp_norm), HR_DIM_HIDDEN, HR_DIM_NONE,
     HR_WHEN_SANDWICH, HR_INIT_NORM, HR_AT_ANY, 0, 0},
    {"layer_scalar", F(layer_scalar), HR_DIM_ONE, HR_DIM_NONE, HR_WHEN_LAYER_SCALAR, HR_INIT_NORM,
     HR_AT_ANY, 0, 0},
    /* gemma4 per-layer input embeddings */
    {"per_layer_input_gate.weight", F(ple_gate), HR_DIM_PLE, HR_DIM_HIDDEN, HR_WHEN_PLE,
     HR_INIT_LINEAR, HR_AT_ANY, 0, 0},
    {"per_layer_projection.weight", F(ple_proj), HR_DIM_HIDDEN, HR_DIM_PLE, HR_WHEN_PLE,
     HR_INIT_LINEAR, HR_AT_ANY, 0, 0},
    {"post_per_layer_input_norm.weight", F(ple_norm), HR_DIM_HIDDEN, HR_DIM_NONE, HR_WHEN_PLE,
     HR_INIT_NORM, HR_AT_ANY, 0, 0},
    /* gemma4 MoE block */
    {"router.proj.weight", F(router), HR_DIM_EXPERTS, HR_DIM_HIDDEN, HR_WHEN_MOE, HR_INIT_LINEAR,
     HR_AT_ANY, 0, 0},
    {"router.scale", F(router_scale), HR_DIM_HIDDEN, HR_DIM_NONE, HR_WHEN_MOE, HR_INIT_NORM,
     HR_AT_ANY, 0, 0},
    {"router.per_expert_scale", F(expert_scale), HR_DIM_EXPERTS, HR_DIM_NONE, HR_WHEN_MOE,
     HR_INIT_NORM, HR_AT_ANY, 0, 0},
    {"experts.gate_up_proj", F(experts_gate_up), HR_DIM_EXPERTS_MOE_INTER2, HR_DIM_HIDDEN,
     HR_WHEN_MOE, HR_INIT_LINEAR, HR_AT_ANY, 0, 0},
    {"experts.down_proj", F(experts_down), HR_DIM_EXPERTS_HIDDEN, HR_DIM_MOE_INTER, HR_WHEN_MOE,
     HR_INIT_LINEAR, HR_AT_ANY, 0, 0},
    {"pre_feedforward_layernorm_2.weight", F(moe_norm), HR_DIM_HIDDEN, HR_DIM_NONE, HR_WHEN_MOE,
     HR_INIT_NORM, HR_AT_ANY, 0, 0},
    {"post_feedforward_layernorm_1.weight", F(post_mlp_norm1), HR_DIM_HIDDEN, HR_DIM_NONE,
     HR_WHEN_MOE, HR_INIT_NORM, HR_AT_ANY, 0, 0},
    {"post_feedforward_layernorm_2.weight", F(post_moe_norm), HR_DIM_HIDDEN, HR_DIM_NONE,
     HR_WHEN_MOE, HR_INIT_NORM, HR_AT_ANY, 0, 0},
};
#undef F
const int hr_dense_layer_tensor_count =
    sizeof hr_dense_layer_tensors / sizeof *hr_dense_layer_tensors;

int64_t hr_dim_value(const hr_model_config *c, hr_dim d) {
    switch (d) {
    case HR_DIM_HIDDEN: return c->hidden;
    case HR_DIM_Q: return (int64_t)c->n_heads * c->head_dim;
    case HR_DIM_KV: return (int64_t)c->n_kv_heads * c->head_dim;
    case HR_DIM_INTER: return c->intermediate;
    case HR_DIM_HEAD: return c->head_dim;
    case HR_DIM_VOCAB: return c->vocab;
    case HR_DIM_PLE: return c->ple_dim;
    case HR_DIM_EXPERTS_MOE_INTER2: return (int64_t)c->n_experts * 2 * c->moe_intermediate;
    case HR_DIM_EXPERTS_HIDDEN: return (int64_t)c->n_experts * c->hidden;
    default: return hr_dim_value_hybrid(c, d);
    }
}

int hr_when_holds(const hr_model_config *c, hr_when w) {
    switch (w) {
    case HR_WHEN_QKV_BIAS: return c->qkv_bias;
    case HR_WHEN_O_BIAS: return c->o_bias;
    case HR_WHEN_MLP_BIAS: return c->mlp_bias;
    case HR_WHEN_QK_NORM:
    case HR_WHEN_K_NORM: return c->qk_norm;
    case HR_WHEN_SANDWICH: return c->sandwich_norm;
    case HR_WHEN_NOT_SANDWICH: return !c->sandwich_norm;
    case HR_WHEN_PLE: return c->ple_dim > 0;
    case HR_WHEN_LAYER_SCALAR: return c->layer_scalar;
    case HR_WHEN_MOE: return c->moe;
    case HR_WHEN_SHARED_EXPERT: return c->shared_expert_intermediate > 0;
    case HR_WHEN_LIN_FUSED: return c->lin_fused_proj;
    case HR_WHEN_LIN_SPLIT: return !c->lin_fused_proj;
    default: return 1;
    }
}

int64_t hr_layer_dim_value(const hr_model_config *c, int l, hr_dim d) {
    switch (d) {
    case HR_DIM_Q: return (int64_t)c->n_heads * c->layer_head_dim[l];
    case HR_DIM_KV: return (int64_t)c->n_kv_heads * c->layer_head_dim[l];
    case HR_DIM_HEAD: return c->layer_head_dim[l];
    case HR_DIM_Q_PROJ:
        return (int64_t)c->n_heads * c->layer_head_dim[l] * (c->attn_out_gate ? 2 : 1);
    default: return hr_dim_value(c, d);
    }
}

int hr_dim_is_experts(hr_dim d) {
    return d == HR_DIM_EXPERTS_MOE_INTER2 || d == HR_DIM_EXPERTS_HIDDEN;
}

int hr_layer_has(const hr_model_config *c, const hr_layer_tensor *t, int layer) {
    if (!hr_when_holds(c, t->when)) return 0;
    /* a KV-sharing layer reads its source layer's K/V: no k/v projections or k norm */
    if ((t->when == HR_WHEN_OWN_KV || t->when == HR_WHEN_K_NORM) && c->kv_source[layer] != layer)
        return 0;
    int linear = c->layer_kind[layer] == HR_LAYER_LINEAR,
        moe = c->n_experts > 0 && c->moe_layer[layer];
    switch (t->at) {
    case HR_AT_ATTN: return !linear;
    case HR_AT_LINEAR: return linear;
    case HR_AT_DENSE_MLP: return !moe;
    case HR_AT_MOE: return moe;
    default: return 1;
    }
}
