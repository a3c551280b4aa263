/* mkmodel presets: config.json of real model shapes (values from the published configs). */
#include <stddef.h>
#include <string.h>

#include "model/mkmodel.h"

#define LT                                                                                         \
    "\"sliding_attention\", \"sliding_attention\", \"sliding_attention\", \"sliding_attention\", " \
    "\"sliding_attention\", \"full_attention\""

static const struct {
    const char *name, *json;
} presets[] = {
    {"llama3-8b",
     "{\"architectures\": [\"LlamaForCausalLM\"], \"model_type\": \"llama\", \"vocab_size\": "
     "128256, "
     "\"hidden_size\": 4096, \"intermediate_size\": 14336, \"num_hidden_layers\": 32, "
     "\"num_attention_heads\": 32, \"num_key_value_heads\": 8, \"head_dim\": 128, "
     "\"max_position_embeddings\": 131072, \"rms_norm_eps\": 1e-05, \"tie_word_embeddings\": "
     "false, "
     "\"hidden_act\": \"silu\", \"bos_token_id\": 128000, \"eos_token_id\": [128001, 128008, "
     "128009], "
     "\"rope_parameters\": {\"rope_type\": \"llama3\", \"rope_theta\": 500000.0, \"factor\": 8.0, "
     "\"low_freq_factor\": 1.0, \"high_freq_factor\": 4.0, \"original_max_position_embeddings\": "
     "8192}}"},
    {"qwen3-0.6b",
     "{\"architectures\": [\"Qwen3ForCausalLM\"], \"model_type\": \"qwen3\", \"vocab_size\": "
     "151936, "
     "\"hidden_size\": 1024, \"intermediate_size\": 3072, \"num_hidden_layers\": 28, "
     "\"num_attention_heads\": 16, \"num_key_value_heads\": 8, \"head_dim\": 128, "
     "\"max_position_embeddings\": 40960, \"rms_norm_eps\": 1e-06, \"tie_word_embeddings\": true, "
     "\"hidden_act\": \"silu\", \"bos_token_id\": 151643, \"eos_token_id\": 151645, "
     "\"rope_parameters\": {\"rope_type\": \"default\", \"rope_theta\": 1000000.0}}"},
    {"qwen3-8b",
     "{\"architectures\": [\"Qwen3ForCausalLM\"], \"model_type\": \"qwen3\", \"vocab_size\": "
     "151936, "
     "\"hidden_size\": 4096, \"intermediate_size\": 12288, \"num_hidden_layers\": 36, "
     "\"num_attention_heads\": 32, \"num_key_value_heads\": 8, \"head_dim\": 128, "
     "\"max_position_embeddings\": 40960, \"rms_norm_eps\": 1e-06, \"tie_word_embeddings\": false, "
     "\"hidden_act\": \"silu\", \"bos_token_id\": 151643, \"eos_token_id\": 151645, "
     "\"rope_parameters\": {\"rope_type\": \"default\", \"rope_theta\": 1000000.0}}"},
    {"qwen2.5-0.5b",
     "{\"architectures\": [\"Qwen2ForCausalLM\"], \"model_type\": \"qwen2\", \"vocab_size\": "
     "151936, "
     "\"hidden_size\": 896, \"intermediate_size\": 4864, \"num_hidden_layers\": 24, "
     "\"num_attention_heads\": 14, \"num_key_value_heads\": 2, \"max_position_embeddings\": 32768, "
     "\"rms_norm_eps\": 1e-06, \"tie_word_embeddings\": true, \"hidden_act\": \"silu\", "
     "\"bos_token_id\": 151643, \"eos_token_id\": 151645, \"rope_theta\": 1000000.0}"},
    {"mistral-7b",
     "{\"architectures\": [\"MistralForCausalLM\"], \"model_type\": \"mistral\", \"vocab_size\": "
     "32768, "
     "\"hidden_size\": 4096, \"intermediate_size\": 14336, \"num_hidden_layers\": 32, "
     "\"num_attention_heads\": 32, \"num_key_value_heads\": 8, \"head_dim\": 128, "
     "\"max_position_embeddings\": 32768, \"rms_norm_eps\": 1e-05, \"tie_word_embeddings\": false, "
     "\"hidden_act\": \"silu\", \"bos_token_id\": 1, \"eos_token_id\": 2, \"sliding_window\": "
     "null, "
     "\"rope_theta\": 1000000.0}"},
    /* google/gemma-3-1b-pt: older key layout (rope_local_base_freq, sliding_window_pattern) */
    {"gemma3-1b",
     "{\"architectures\": [\"Gemma3ForCausalLM\"], \"model_type\": \"gemma3_text\", "
     "\"vocab_size\": 262144, "
     "\"hidden_size\": 1152, \"intermediate_size\": 6912, \"num_hidden_layers\": 26, "
     "\"num_attention_heads\": 4, \"num_key_value_heads\": 1, \"head_dim\": 256, "
     "\"query_pre_attn_scalar\": 256, \"max_position_embeddings\": 32768, \"rms_norm_eps\": 1e-06, "
     "\"hidden_activation\": \"gelu_pytorch_tanh\", \"sliding_window\": 512, "
     "\"sliding_window_pattern\": 6, "
     "\"rope_theta\": 1000000.0, \"rope_local_base_freq\": 10000.0, \"rope_scaling\": null, "
     "\"attn_logit_softcapping\": null, \"final_logit_softcapping\": null, "
     "\"tie_word_embeddings\": true, "
     "\"bos_token_id\": 2, \"eos_token_id\": [1, 106], \"pad_token_id\": 0}"},
    /* google/gemma-4-E4B text decoder (text_config of the published config, as read by
     * transformers <= 5.14: global_head_dim rather than per_layer_config) */
    {"gemma4-e4b",
     "{\"architectures\": [\"Gemma4ForCausalLM\"], \"model_type\": \"gemma4_text\", "
     "\"vocab_size\": 262144, "
     "\"hidden_size\": 2560, \"intermediate_size\": 10240, \"num_hidden_layers\": 42, "
     "\"num_attention_heads\": 8, \"num_key_value_heads\": 2, \"head_dim\": 256, "
     "\"global_head_dim\": 512, "
     "\"hidden_size_per_layer_input\": 256, \"vocab_size_per_layer_input\": 262144, "
     "\"num_kv_shared_layers\": 18, \"max_position_embeddings\": 131072, \"rms_norm_eps\": 1e-06, "
     "\"hidden_activation\": \"gelu_pytorch_tanh\", \"sliding_window\": 512, "
     "\"layer_types\": [" LT ", " LT ", " LT ", " LT ", " LT ", " LT ", " LT "], "
     "\"rope_parameters\": {\"full_attention\": {\"rope_type\": \"proportional\", \"rope_theta\": "
     "1000000.0, "
     "\"partial_rotary_factor\": 0.25}, \"sliding_attention\": {\"rope_type\": \"default\", "
     "\"rope_theta\": 10000.0}}, \"final_logit_softcapping\": 30.0, \"attention_k_eq_v\": false, "
     "\"use_double_wide_mlp\": false, \"enable_moe_block\": false, \"tie_word_embeddings\": true, "
     "\"bos_token_id\": 2, \"eos_token_id\": [1, 106], \"pad_token_id\": 0}"},
    {"qwen3-30b-a3b",
     "{\"architectures\": [\"Qwen3MoeForCausalLM\"], \"model_type\": \"qwen3_moe\", "
     "\"vocab_size\": 151936, "
     "\"hidden_size\": 2048, \"intermediate_size\": 6144, \"moe_intermediate_size\": 768, "
     "\"num_hidden_layers\": 48, \"num_attention_heads\": 32, \"num_key_value_heads\": 4, "
     "\"head_dim\": 128, "
     "\"num_experts\": 128, \"num_experts_per_tok\": 8, \"norm_topk_prob\": true, "
     "\"decoder_sparse_step\": 1, "
     "\"mlp_only_layers\": [], \"max_position_embeddings\": 40960, \"rms_norm_eps\": 1e-06, "
     "\"tie_word_embeddings\": false, \"hidden_act\": \"silu\", \"use_sliding_window\": false, "
     "\"sliding_window\": null, \"bos_token_id\": 151643, \"eos_token_id\": 151645, "
     "\"rope_parameters\": {\"rope_type\": \"default\", \"rope_theta\": 1000000.0}}"},
    /* The text model of Qwen/Qwen3.5-4B (its config.json nests this under text_config). */
    {"qwen3.5-4b",
     "{\"architectures\": [\"Qwen3_5ForCausalLM\"], \"model_type\": \"qwen3_5_text\", "
     "\"vocab_size\": 248320, "
     "\"hidden_size\": 2560, \"intermediate_size\": 9216, \"num_hidden_layers\": 32, "
     "\"num_attention_heads\": 16, \"num_key_value_heads\": 4, \"head_dim\": 256, "
     "\"full_attention_interval\": 4, \"linear_conv_kernel_dim\": 4, \"linear_num_key_heads\": 16, "
     "\"linear_num_value_heads\": 32, \"linear_key_head_dim\": 128, \"linear_value_head_dim\": "
     "128, "
     "\"max_position_embeddings\": 262144, \"rms_norm_eps\": 1e-06, \"tie_word_embeddings\": true, "
     "\"hidden_act\": \"silu\", \"eos_token_id\": 248044, "
     "\"rope_parameters\": {\"rope_type\": \"default\", \"rope_theta\": 10000000.0, "
     "\"partial_rotary_factor\": 0.25}}"},
};

const char *hr_mkmodel_preset(const char *name) {
    for (size_t i = 0; i < sizeof presets / sizeof *presets; i++)
        if (strcmp(presets[i].name, name) == 0) return presets[i].json;
    return NULL;
}

const char *hr_mkmodel_preset_names(void) {
    return "llama3-8b, qwen3-0.6b, qwen3-8b, qwen2.5-0.5b, mistral-7b, gemma3-1b, gemma4-e4b, "
           "qwen3-30b-a3b, qwen3.5-4b";
}
