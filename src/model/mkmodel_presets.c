/* mkmodel presets: config.json of real model shapes (values from the published configs). */
#include <stddef.h>
#include <string.h>

#include "model/mkmodel.h"

static const struct {
    const char *name, *json;
} presets[] = {
    {"llama3-8b",
     "{\"architectures\": [\"LlamaForCausalLM\"], \"model_type\": \"llama\", \"vocab_size\": 128256, "
     "\"hidden_size\": 4096, \"intermediate_size\": 14336, \"num_hidden_layers\": 32, "
     "\"num_attention_heads\": 32, \"num_key_value_heads\": 8, \"head_dim\": 128, "
     "\"max_position_embeddings\": 131072, \"rms_norm_eps\": 1e-05, \"tie_word_embeddings\": false, "
     "\"hidden_act\": \"silu\", \"bos_token_id\": 128000, \"eos_token_id\": [128001, 128008, 128009], "
     "\"rope_parameters\": {\"rope_type\": \"llama3\", \"rope_theta\": 500000.0, \"factor\": 8.0, "
     "\"low_freq_factor\": 1.0, \"high_freq_factor\": 4.0, \"original_max_position_embeddings\": 8192}}"},
    {"qwen3-0.6b",
     "{\"architectures\": [\"Qwen3ForCausalLM\"], \"model_type\": \"qwen3\", \"vocab_size\": 151936, "
     "\"hidden_size\": 1024, \"intermediate_size\": 3072, \"num_hidden_layers\": 28, "
     "\"num_attention_heads\": 16, \"num_key_value_heads\": 8, \"head_dim\": 128, "
     "\"max_position_embeddings\": 40960, \"rms_norm_eps\": 1e-06, \"tie_word_embeddings\": true, "
     "\"hidden_act\": \"silu\", \"bos_token_id\": 151643, \"eos_token_id\": 151645, "
     "\"rope_parameters\": {\"rope_type\": \"default\", \"rope_theta\": 1000000.0}}"},
    {"qwen3-8b",
     "{\"architectures\": [\"Qwen3ForCausalLM\"], \"model_type\": \"qwen3\", \"vocab_size\": 151936, "
     "\"hidden_size\": 4096, \"intermediate_size\": 12288, \"num_hidden_layers\": 36, "
     "\"num_attention_heads\": 32, \"num_key_value_heads\": 8, \"head_dim\": 128, "
     "\"max_position_embeddings\": 40960, \"rms_norm_eps\": 1e-06, \"tie_word_embeddings\": false, "
     "\"hidden_act\": \"silu\", \"bos_token_id\": 151643, \"eos_token_id\": 151645, "
     "\"rope_parameters\": {\"rope_type\": \"default\", \"rope_theta\": 1000000.0}}"},
    {"qwen2.5-0.5b",
     "{\"architectures\": [\"Qwen2ForCausalLM\"], \"model_type\": \"qwen2\", \"vocab_size\": 151936, "
     "\"hidden_size\": 896, \"intermediate_size\": 4864, \"num_hidden_layers\": 24, "
     "\"num_attention_heads\": 14, \"num_key_value_heads\": 2, \"max_position_embeddings\": 32768, "
     "\"rms_norm_eps\": 1e-06, \"tie_word_embeddings\": true, \"hidden_act\": \"silu\", "
     "\"bos_token_id\": 151643, \"eos_token_id\": 151645, \"rope_theta\": 1000000.0}"},
    {"mistral-7b",
     "{\"architectures\": [\"MistralForCausalLM\"], \"model_type\": \"mistral\", \"vocab_size\": 32768, "
     "\"hidden_size\": 4096, \"intermediate_size\": 14336, \"num_hidden_layers\": 32, "
     "\"num_attention_heads\": 32, \"num_key_value_heads\": 8, \"head_dim\": 128, "
     "\"max_position_embeddings\": 32768, \"rms_norm_eps\": 1e-05, \"tie_word_embeddings\": false, "
     "\"hidden_act\": \"silu\", \"bos_token_id\": 1, \"eos_token_id\": 2, \"sliding_window\": null, "
     "\"rope_theta\": 1000000.0}"},
    {"qwen3-30b-a3b",
     "{\"architectures\": [\"Qwen3MoeForCausalLM\"], \"model_type\": \"qwen3_moe\", \"vocab_size\": 151936, "
     "\"hidden_size\": 2048, \"intermediate_size\": 6144, \"moe_intermediate_size\": 768, "
     "\"num_hidden_layers\": 48, \"num_attention_heads\": 32, \"num_key_value_heads\": 4, \"head_dim\": 128, "
     "\"num_experts\": 128, \"num_experts_per_tok\": 8, \"norm_topk_prob\": true, \"decoder_sparse_step\": 1, "
     "\"mlp_only_layers\": [], \"max_position_embeddings\": 40960, \"rms_norm_eps\": 1e-06, "
     "\"tie_word_embeddings\": false, \"hidden_act\": \"silu\", \"use_sliding_window\": false, "
     "\"sliding_window\": null, \"bos_token_id\": 151643, \"eos_token_id\": 151645, "
     "\"rope_parameters\": {\"rope_type\": \"default\", \"rope_theta\": 1000000.0}}"},
    /* The text model of Qwen/Qwen3.5-4B (its config.json nests this under text_config). */
    {"qwen3.5-4b",
     "{\"architectures\": [\"Qwen3_5ForCausalLM\"], \"model_type\": \"qwen3_5_text\", \"vocab_size\": 248320, "
     "\"hidden_size\": 2560, \"intermediate_size\": 9216, \"num_hidden_layers\": 32, "
     "\"num_attention_heads\": 16, \"num_key_value_heads\": 4, \"head_dim\": 256, "
     "\"full_attention_interval\": 4, \"linear_conv_kernel_dim\": 4, \"linear_num_key_heads\": 16, "
     "\"linear_num_value_heads\": 32, \"linear_key_head_dim\": 128, \"linear_value_head_dim\": 128, "
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

const char *hr_mkmodel_preset_names(void) { return "llama3-8b, qwen3-0.6b, qwen3-8b, qwen2.5-0.5b, mistral-7b, qwen3-30b-a3b, qwen3.5-4b";
}
