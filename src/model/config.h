/* The model configuration read from config.json (and generation_config.json): one struct
 * for every supported family, with the family's defaults applied, so model code reads
 * plain fields and never the JSON. */
#ifndef HR_MODEL_CONFIG_H
#define HR_MODEL_CONFIG_H

#include "base/err.h"
#include "base/json.h"

enum { HR_MAX_EOS = 8, HR_MAX_LAYERS = 256 };

/* Order matters: hr_config_parse_hybrid skips the archs before HR_ARCH_QWEN3_MOE. */
typedef enum {
    HR_ARCH_LLAMA,
    HR_ARCH_MISTRAL,
    HR_ARCH_QWEN2,
    HR_ARCH_QWEN3,
    HR_ARCH_GEMMA3,
    HR_ARCH_GEMMA4,
    HR_ARCH_QWEN3_MOE,
    HR_ARCH_QWEN3_NEXT,
    HR_ARCH_QWEN3_5,
    HR_ARCH_QWEN3_5_MOE
} hr_arch;
typedef enum { HR_ACT_SILU, HR_ACT_GELU_TANH } hr_act;
typedef enum { HR_ROPE_DEFAULT, HR_ROPE_LINEAR, HR_ROPE_LLAMA3, HR_ROPE_PROPORTIONAL } hr_rope_type;
typedef enum { HR_LAYER_FULL, HR_LAYER_SLIDING, HR_LAYER_LINEAR } hr_layer_kind;

typedef struct {
    hr_rope_type type;
    double theta;
    double factor;           /* linear / llama3 */
    double low_freq_factor;  /* llama3 */
    double high_freq_factor; /* llama3 */
    double original_max_pos; /* llama3 */
    double partial_rotary;   /* fraction of head_dim rotated (1.0 = all) */
} hr_rope_config;

typedef struct {
    double temperature; /* 1.0 when unset */
    double top_p;       /* 1.0 when unset */
    int top_k;          /* 0 = off */
    int do_sample;      /* 0: greedy unless the request says otherwise */
    double typical_p;   /* 1.0 when unset */
    double repetition_penalty;
} hr_gen_defaults;

typedef struct {
    char model_type[32];
    hr_arch arch;
    int vocab;
    int hidden;
    int n_layers;
    int n_heads;
    int n_kv_heads;
    int head_dim;
    int intermediate;
    int max_pos;
    double rms_eps;
    int tie_embeddings;
    int qkv_bias; /* bias on q/k/v projections */
    int o_bias;   /* bias on the output projection */
    int mlp_bias; /* bias on gate/up/down */
    int qk_norm;  /* RMSNorm over head_dim on q and k before rope (qwen3) */
    hr_act act;
    hr_rope_config rope;
    int sliding_window; /* 0 = none */
    hr_layer_kind layer_kind[HR_MAX_LAYERS];
    int bos_id; /* -1 if none */
    int eos_ids[HR_MAX_EOS];
    int n_eos;
    int pad_id; /* -1 if none */
    hr_gen_defaults gen;
    /* Gemma-style extensions (config_gemma.c); the dense defaults make each a no-op. */
    hr_rope_config rope_sliding; /* rope of HR_LAYER_SLIDING layers (= rope if unset) */
    int norm_one_plus;           /* RMSNorm scales by (1 + w) (hybrid: all but the gated one) */
    int sandwich_norm;           /* extra norms after attention and after the MLP */
    double embed_scale;          /* multiplies the token embedding (1.0 = none) */
    double attn_scale;           /* multiplies q.k (0: 1/sqrt(head_dim)) */
    double attn_softcap, final_softcap; /* tanh soft-capping (0 = off) */
    int v_norm;                         /* scale-free RMSNorm over head_dim on v */
    int layer_scalar;                   /* each layer's output times its layer_scalar */
    int layer_head_dim[HR_MAX_LAYERS];  /* per-layer head_dim (= head_dim unless overridden) */
    int kv_source[HR_MAX_LAYERS];       /* layer whose K/V this layer attends over (itself
                                         * unless it shares an earlier layer's KV) */
    int ple_dim, ple_vocab;             /* per-layer input embeddings (0 = none) */
    int moe;                            /* gemma4 MoE block beside the dense MLP */
    /* Mixture of experts: gemma4's block (moe) or, in config_hybrid.c, routed MLPs where
     * moe_layer[l] says layer l's MLP is routed. */
    int n_experts; /* 0: no experts */
    int n_experts_per_tok;
    int moe_intermediate;
    int norm_topk_prob;             /* renormalise the top-k router probabilities */
    int shared_expert_intermediate; /* 0: no shared expert */
    unsigned char moe_layer[HR_MAX_LAYERS];
    /* Hybrid linear attention (qwen3_next, qwen3_5): HR_LAYER_LINEAR layers are gated DeltaNet. */
    int attn_out_gate;   /* q_proj also yields a sigmoid gate on the attention output */
    int lin_conv_kernel; /* causal conv1d kernel width */
    int lin_k_heads, lin_v_heads, lin_k_dim, lin_v_dim;
    int lin_fused_proj; /* checkpoint has in_proj_qkvz/in_proj_ba (qwen3_next) */
    char prefix[32];    /* of the decoder's tensor names: "model." or, for the text
                           model of a vision-language checkpoint, "model.language_model." */
} hr_model_config;

/* Reads dir/config.json and, if present, dir/generation_config.json. */
hr_err *hr_config_load(const char *dir, hr_model_config *cfg);
struct hr_gguf;
/* The config of a GGUF file, from its metadata (gguf_config.c; docs/gguf.md). */
hr_err *hr_config_from_gguf(const struct hr_gguf *g, hr_model_config *cfg);
/* Parses a config.json already in memory (no generation_config). */
hr_err *hr_config_parse(const char *what, const char *json_text, hr_model_config *cfg);
/* Reads one rope parameter object (rope_parameters, rope_scaling or a per-layer-type entry)
 * into r; theta and partial_rotary hold the defaults on entry. */
hr_err *hr_config_rope_obj(const json_t *src, hr_rope_config *r);
/* Applies the gemma3/gemma4 keys (config_gemma.c) after the generic parse. */
hr_err *hr_config_gemma(const json_t *j, hr_model_config *c);
/* The MoE and hybrid fields of the qwen3_moe / qwen3_next / qwen3_5 families (config_hybrid.c). */
hr_err *hr_config_parse_hybrid(const void *json, hr_model_config *cfg);
/* The config to parse: j itself, or the text_config of a Qwen3.5 vision-language checkpoint
 * (which also sets cfg->prefix). */
const void *hr_config_text_part(const void *json, hr_model_config *cfg);
/* 1 if the arch has DeltaNet layers. */
int hr_arch_is_hybrid(hr_arch a);

#endif
