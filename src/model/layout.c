/* The dense family's per-layer tensor table; see layout.h. */
#include "model/layout.h"

#include "model/model_internal.h"

#define F(x) offsetof(hr_layer_weights, x)
const hr_layer_tensor hr_dense_layer_tensors[] = {
    {"input_layernorm.weight", F(attn_norm), HR_DIM_HIDDEN, HR_DIM_NONE, HR_WHEN_ALWAYS, HR_INIT_NORM, HR_AT_ANY, 0, 0},
    {"self_attn.q_proj.weight", F(wq), HR_DIM_Q_PROJ, HR_DIM_HIDDEN, HR_WHEN_ALWAYS, HR_INIT_LINEAR, HR_AT_ATTN, 0, 0},
    {"self_attn.k_proj.weight", F(wk), HR_DIM_KV, HR_DIM_HIDDEN, HR_WHEN_ALWAYS, HR_INIT_LINEAR, HR_AT_ATTN, 0, 0},
    {"self_attn.v_proj.weight", F(wv), HR_DIM_KV, HR_DIM_HIDDEN, HR_WHEN_ALWAYS, HR_INIT_LINEAR, HR_AT_ATTN, 0, 0},
    {"self_attn.o_proj.weight", F(wo), HR_DIM_HIDDEN, HR_DIM_Q, HR_WHEN_ALWAYS, HR_INIT_LINEAR, HR_AT_ATTN, 0, 0},
    {"self_attn.q_proj.bias", F(bq), HR_DIM_Q, HR_DIM_NONE, HR_WHEN_QKV_BIAS, HR_INIT_BIAS, HR_AT_ATTN, 0, 0},
    {"self_attn.k_proj.bias", F(bk), HR_DIM_KV, HR_DIM_NONE, HR_WHEN_QKV_BIAS, HR_INIT_BIAS, HR_AT_ATTN, 0, 0},
    {"self_attn.v_proj.bias", F(bv), HR_DIM_KV, HR_DIM_NONE, HR_WHEN_QKV_BIAS, HR_INIT_BIAS, HR_AT_ATTN, 0, 0},
    {"self_attn.o_proj.bias", F(bo), HR_DIM_HIDDEN, HR_DIM_NONE, HR_WHEN_O_BIAS, HR_INIT_BIAS, HR_AT_ATTN, 0, 0},
    {"self_attn.q_norm.weight", F(q_norm), HR_DIM_HEAD, HR_DIM_NONE, HR_WHEN_QK_NORM, HR_INIT_NORM, HR_AT_ATTN, 0, 0},
    {"self_attn.k_norm.weight", F(k_norm), HR_DIM_HEAD, HR_DIM_NONE, HR_WHEN_QK_NORM, HR_INIT_NORM, HR_AT_ATTN, 0, 0},
    {"post_attention_layernorm.weight", F(mlp_norm), HR_DIM_HIDDEN, HR_DIM_NONE, HR_WHEN_ALWAYS, HR_INIT_NORM, HR_AT_ANY, 0, 0},
    {"mlp.gate_proj.weight", F(w_gate), HR_DIM_INTER, HR_DIM_HIDDEN, HR_WHEN_ALWAYS, HR_INIT_LINEAR, HR_AT_DENSE_MLP, 0, 0},
    {"mlp.up_proj.weight", F(w_up), HR_DIM_INTER, HR_DIM_HIDDEN, HR_WHEN_ALWAYS, HR_INIT_LINEAR, HR_AT_DENSE_MLP, 0, 0},
    {"mlp.down_proj.weight", F(w_down), HR_DIM_HIDDEN, HR_DIM_INTER, HR_WHEN_ALWAYS, HR_INIT_LINEAR, HR_AT_DENSE_MLP, 0, 0},
    {"mlp.gate_proj.bias", F(b_gate), HR_DIM_INTER, HR_DIM_NONE, HR_WHEN_MLP_BIAS, HR_INIT_BIAS, HR_AT_DENSE_MLP, 0, 0},
    {"mlp.up_proj.bias", F(b_up), HR_DIM_INTER, HR_DIM_NONE, HR_WHEN_MLP_BIAS, HR_INIT_BIAS, HR_AT_DENSE_MLP, 0, 0},
    {"mlp.down_proj.bias", F(b_down), HR_DIM_HIDDEN, HR_DIM_NONE, HR_WHEN_MLP_BIAS, HR_INIT_BIAS, HR_AT_DENSE_MLP, 0, 0},
};
#undef F
const int hr_dense_layer_tensor_count = sizeof hr_dense_layer_tensors / sizeof *hr_dense_layer_tensors;

int64_t hr_dim_value(const hr_model_config *c, hr_dim d) {
    switch (d) {
    case HR_DIM_HIDDEN: return c->hidden;
    case HR_DIM_Q: return (int64_t)c->n_heads * c->head_dim;
    case HR_DIM_KV: return (int64_t)c->n_kv_heads * c->head_dim;
    case HR_DIM_INTER: return c->intermediate;
    case HR_DIM_HEAD: return c->head_dim;
    case HR_DIM_VOCAB: return c->vocab;
    default: return hr_dim_value_hybrid(c, d);
    }
}

int hr_when_holds(const hr_model_config *c, hr_when w) {
    switch (w) {
    case HR_WHEN_QKV_BIAS: return c->qkv_bias;
    case HR_WHEN_O_BIAS: return c->o_bias;
    case HR_WHEN_MLP_BIAS: return c->mlp_bias;
    case HR_WHEN_QK_NORM: return c->qk_norm;
    case HR_WHEN_SHARED_EXPERT: return c->shared_expert_intermediate > 0;
    case HR_WHEN_LIN_FUSED: return c->lin_fused_proj;
    case HR_WHEN_LIN_SPLIT: return !c->lin_fused_proj;
    default: return 1;
    }
}
