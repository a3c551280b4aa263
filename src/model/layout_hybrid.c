/* The per-layer tensors of the MoE and hybrid families as data (see layout.h): routed experts
 * (one tensor per expert, as the checkpoints store them), the shared expert, and the gated
 * DeltaNet projections of qwen3_next (fused) and qwen3_5 (split). */
#include "model/layout.h"

#include "model/model_internal.h"

#define F(x) offsetof(hr_layer_weights, x)
const hr_layer_tensor hr_hybrid_layer_tensors[] = {
    {"mlp.gate.weight", F(router), HR_DIM_EXPERTS, HR_DIM_HIDDEN, HR_WHEN_ALWAYS, HR_INIT_LINEAR,
     HR_AT_MOE, 0, 0},
    {"mlp.experts.%d.gate_proj.weight", F(exp_gate), HR_DIM_MOE_INTER, HR_DIM_HIDDEN,
     HR_WHEN_ALWAYS, HR_INIT_LINEAR, HR_AT_MOE, 1, 0},
    {"mlp.experts.%d.up_proj.weight", F(exp_up), HR_DIM_MOE_INTER, HR_DIM_HIDDEN, HR_WHEN_ALWAYS,
     HR_INIT_LINEAR, HR_AT_MOE, 1, 0},
    {"mlp.experts.%d.down_proj.weight", F(exp_down), HR_DIM_HIDDEN, HR_DIM_MOE_INTER,
     HR_WHEN_ALWAYS, HR_INIT_LINEAR, HR_AT_MOE, 1, 0},
    {"mlp.shared_expert.gate_proj.weight", F(sh_gate), HR_DIM_SHARED_INTER, HR_DIM_HIDDEN,
     HR_WHEN_SHARED_EXPERT, HR_INIT_LINEAR, HR_AT_MOE, 0, 0},
    {"mlp.shared_expert.up_proj.weight", F(sh_up), HR_DIM_SHARED_INTER, HR_DIM_HIDDEN,
     HR_WHEN_SHARED_EXPERT, HR_INIT_LINEAR, HR_AT_MOE, 0, 0},
    {"mlp.shared_expert.down_proj.weight", F(sh_down), HR_DIM_HIDDEN, HR_DIM_SHARED_INTER,
     HR_WHEN_SHARED_EXPERT, HR_INIT_LINEAR, HR_AT_MOE, 0, 0},
    {"mlp.shared_expert_gate.weight", F(sh_router), HR_DIM_ONE, HR_DIM_HIDDEN,
     HR_WHEN_SHARED_EXPERT, HR_INIT_LINEAR, HR_AT_MOE, 0, 0},
    {"linear_attn.in_proj_qkvz.weight", F(lin_qkvz), HR_DIM_LIN_QKVZ, HR_DIM_HIDDEN,
     HR_WHEN_LIN_FUSED, HR_INIT_LINEAR, HR_AT_LINEAR, 0, 0},
    {"linear_attn.in_proj_ba.weight", F(lin_ba), HR_DIM_LIN_BA, HR_DIM_HIDDEN, HR_WHEN_LIN_FUSED,
     HR_INIT_LINEAR, HR_AT_LINEAR, 0, 0},
    {"linear_attn.in_proj_qkv.weight", F(lin_qkv), HR_DIM_LIN_CONV, HR_DIM_HIDDEN,
     HR_WHEN_LIN_SPLIT, HR_INIT_LINEAR, HR_AT_LINEAR, 0, 0},
    {"linear_attn.in_proj_z.weight", F(lin_z), HR_DIM_LIN_V, HR_DIM_HIDDEN, HR_WHEN_LIN_SPLIT,
     HR_INIT_LINEAR, HR_AT_LINEAR, 0, 0},
    {"linear_attn.in_proj_b.weight", F(lin_b), HR_DIM_LIN_VH, HR_DIM_HIDDEN, HR_WHEN_LIN_SPLIT,
     HR_INIT_LINEAR, HR_AT_LINEAR, 0, 0},
    {"linear_attn.in_proj_a.weight", F(lin_a), HR_DIM_LIN_VH, HR_DIM_HIDDEN, HR_WHEN_LIN_SPLIT,
     HR_INIT_LINEAR, HR_AT_LINEAR, 0, 0},
    {"linear_attn.conv1d.weight", F(conv_w), HR_DIM_LIN_CONV, HR_DIM_CONV_K, HR_WHEN_ALWAYS,
     HR_INIT_LINEAR, HR_AT_LINEAR, 0, 1},
    {"linear_attn.A_log", F(a_log), HR_DIM_LIN_VH, HR_DIM_NONE, HR_WHEN_ALWAYS, HR_INIT_NORM,
     HR_AT_LINEAR, 0, 0},
    {"linear_attn.dt_bias", F(dt_bias), HR_DIM_LIN_VH, HR_DIM_NONE, HR_WHEN_ALWAYS, HR_INIT_NORM,
     HR_AT_LINEAR, 0, 0},
    {"linear_attn.norm.weight", F(lin_norm), HR_DIM_LIN_VHD, HR_DIM_NONE, HR_WHEN_ALWAYS,
     HR_INIT_NORM, HR_AT_LINEAR, 0, 0},
    {"linear_attn.out_proj.weight", F(lin_out), HR_DIM_HIDDEN, HR_DIM_LIN_V, HR_WHEN_ALWAYS,
     HR_INIT_LINEAR, HR_AT_LINEAR, 0, 0},
};
#undef F
const int hr_hybrid_layer_tensor_count =
    sizeof hr_hybrid_layer_tensors / sizeof *hr_hybrid_layer_tensors;

int hr_layout_count(void) { return hr_dense_layer_tensor_count + hr_hybrid_layer_tensor_count; }

const hr_layer_tensor *hr_layout_tensor(int i) {
    return i < hr_dense_layer_tensor_count
               ? &hr_dense_layer_tensors[i]
               : &hr_hybrid_layer_tensors[i - hr_dense_layer_tensor_count];
}

int64_t hr_dim_value_hybrid(const hr_model_config *c, hr_dim d) {
    int64_t kd = (int64_t)c->lin_k_heads * c->lin_k_dim,
            vd = (int64_t)c->lin_v_heads * c->lin_v_dim;
    switch (d) {
    case HR_DIM_Q_PROJ: return (int64_t)c->n_heads * c->head_dim * (c->attn_out_gate ? 2 : 1);
    case HR_DIM_EXPERTS: return c->n_experts;
    case HR_DIM_MOE_INTER: return c->moe_intermediate;
    case HR_DIM_SHARED_INTER: return c->shared_expert_intermediate;
    case HR_DIM_ONE: return 1;
    case HR_DIM_LIN_QKVZ: return 2 * kd + 2 * vd;
    case HR_DIM_LIN_BA: return 2 * (int64_t)c->lin_v_heads;
    case HR_DIM_LIN_CONV: return 2 * kd + vd;
    case HR_DIM_LIN_V: return vd;
    case HR_DIM_LIN_VH: return c->lin_v_heads;
    case HR_DIM_LIN_VHD: return c->lin_v_dim;
    case HR_DIM_CONV_K: return c->lin_conv_kernel;
    default: return 0;
    }
}
