/* config.json fields of the MoE and hybrid (gated DeltaNet) families: qwen3_moe, qwen3_next,
 * qwen3_5_text and qwen3_5_moe_text. Which layers are routed (decoder_sparse_step,
 * mlp_only_layers), the linear-attention geometry, and the family's norm and gate flavours. */
#include <stdio.h>
#include <string.h>

#include "base/json.h"
#include "model/config.h"

int hr_arch_is_hybrid(hr_arch a) {
    return a == HR_ARCH_QWEN3_NEXT || a == HR_ARCH_QWEN3_5 || a == HR_ARCH_QWEN3_5_MOE;
}

const void *hr_config_text_part(const void *json, hr_model_config *c) {
    const json_t *j = json, *tc = json_object_get(j, "text_config");
    const char *mt = json_string_value(json_object_get(j, "model_type"));
    if (!json_is_object(tc) || !mt ||
        (strcmp(mt, "qwen3_5") != 0 && strcmp(mt, "qwen3_5_moe") != 0))
        return j;
    snprintf(c->prefix, sizeof c->prefix, "model.language_model.");
    return tc;
}

static hr_err *pos_int(const json_t *j, const char *k, int64_t def, int *out) {
    int64_t v;
    HR_TRY(hr_json_int(j, k, def, "config.json", &v));
    if (v <= 0 || v > (1 << 24))
        return hr_errf("config.json: \"%s\" must be a positive integer", k);
    *out = (int)v;
    return NULL;
}

/* Routed layers: every decoder_sparse_step-th layer that is not in mlp_only_layers. */
static hr_err *parse_moe_layers(const json_t *j, hr_model_config *c) {
    int step = 1;
    if (c->arch != HR_ARCH_QWEN3_5_MOE) HR_TRY(pos_int(j, "decoder_sparse_step", 1, &step));
    for (int i = 0; i < c->n_layers; i++)
        c->moe_layer[i] = (i + 1) % step == 0;
    const json_t *only = json_object_get(j, "mlp_only_layers");
    if (only && !json_is_null(only) && c->arch != HR_ARCH_QWEN3_5_MOE) {
        if (!json_is_array(only)) return hr_errf("config.json: \"mlp_only_layers\" must be a list");
        for (size_t i = 0; i < json_array_size(only); i++) {
            const json_t *e = json_array_get(only, i);
            if (!json_is_integer(e))
                return hr_errf("config.json: \"mlp_only_layers\" must list integers");
            json_int_t l = json_integer_value(e);
            if (l >= 0 && l < c->n_layers) c->moe_layer[l] = 0;
        }
    }
    return NULL;
}

static hr_err *parse_moe(const json_t *j, hr_model_config *c) {
    if (c->arch == HR_ARCH_QWEN3_5) return NULL;
    int64_t n;
    HR_TRY(hr_json_int(j, "num_experts", -1, "config.json", &n));
    if (n < 0) HR_TRY(hr_json_int(j, "num_local_experts", 0, "config.json", &n));
    if (n < 0 || n > 4096) return hr_errf("config.json: \"num_experts\" out of range");
    c->n_experts = (int)n;
    if (c->n_experts == 0) return NULL; /* transformers builds dense MLPs then */
    HR_TRY(pos_int(j, "num_experts_per_tok", 8, &c->n_experts_per_tok));
    if (c->n_experts_per_tok > c->n_experts)
        return hr_errf("config.json: num_experts_per_tok (%d) exceeds num_experts (%d)",
                       c->n_experts_per_tok, c->n_experts);
    HR_TRY(pos_int(j, "moe_intermediate_size", 512, &c->moe_intermediate));
    /* Qwen3.5-MoE's router always renormalises (its config has no norm_topk_prob). */
    c->norm_topk_prob = 1;
    if (c->arch != HR_ARCH_QWEN3_5_MOE)
        HR_TRY(hr_json_bool(j, "norm_topk_prob", c->arch == HR_ARCH_QWEN3_NEXT, "config.json",
                            &c->norm_topk_prob));
    if (c->arch != HR_ARCH_QWEN3_MOE)
        HR_TRY(pos_int(j, "shared_expert_intermediate_size", 512, &c->shared_expert_intermediate));
    return parse_moe_layers(j, c);
}

/* Without layer_types, every full_attention_interval-th layer is full attention. */
static hr_err *default_layer_types(const json_t *j, hr_model_config *c) {
    if (json_object_get(j, "layer_types")) return NULL;
    int interval = 4;
    HR_TRY(pos_int(j, "full_attention_interval", 4, &interval));
    for (int i = 0; i < c->n_layers; i++)
        c->layer_kind[i] = (i + 1) % interval == 0 ? HR_LAYER_FULL : HR_LAYER_LINEAR;
    return NULL;
}

static hr_err *parse_linear(const json_t *j, hr_model_config *c) {
    HR_TRY(default_layer_types(j, c));
    HR_TRY(pos_int(j, "linear_conv_kernel_dim", 4, &c->lin_conv_kernel));
    HR_TRY(pos_int(j, "linear_num_key_heads", 16, &c->lin_k_heads));
    HR_TRY(pos_int(j, "linear_num_value_heads", 32, &c->lin_v_heads));
    HR_TRY(pos_int(j, "linear_key_head_dim", 128, &c->lin_k_dim));
    HR_TRY(pos_int(j, "linear_value_head_dim", 128, &c->lin_v_dim));
    if (c->lin_v_heads % c->lin_k_heads)
        return hr_errf(
            "config.json: linear_num_key_heads (%d) does not divide linear_num_value_heads (%d)",
            c->lin_k_heads, c->lin_v_heads);
    if (c->lin_conv_kernel > 16)
        return hr_errf("config.json: linear_conv_kernel_dim %d is not supported (max 16)",
                       c->lin_conv_kernel);
    c->lin_fused_proj = c->arch == HR_ARCH_QWEN3_NEXT;
    c->norm_one_plus = 1;
    c->attn_out_gate = 1;
    const char *act;
    HR_TRY(hr_json_str(j, "hidden_act", "silu", "config.json", &act));
    if (c->act != HR_ACT_SILU)
        return hr_errf("config.json: hidden_act \"%s\" is not supported by %s", act, c->model_type);
    return NULL;
}

hr_err *hr_config_parse_hybrid(const void *json, hr_model_config *c) {
    const json_t *j = json;
    if (c->arch < HR_ARCH_QWEN3_MOE) return NULL;
    if (c->sliding_window > 0)
        return hr_errf("config.json: use_sliding_window is not supported by %s", c->model_type);
    HR_TRY(parse_moe(j, c));
    for (int i = 0; i < c->n_layers; i++)
        if ((c->n_experts == 0 || !c->moe_layer[i]) && c->intermediate <= 0)
            return hr_errf(
                "config.json: layer %d has a dense MLP but \"intermediate_size\" is missing", i);
    if (hr_arch_is_hybrid(c->arch)) HR_TRY(parse_linear(j, c));
    return NULL;
}
