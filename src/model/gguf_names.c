/* GGUF <-> HF tensor names (llama.cpp's llama-arch.cpp / gguf-py tensor_mapping.py for the
 * families hearth reads) and the llama q/k row permutation of convert_hf_to_gguf.py. */
#include "model/gguf_names.h"

#include <stdio.h>
#include <string.h>

typedef enum { ANY, GEMMA, NOT_GEMMA } arch_when;

/* Per-layer names: after "blk.N." and "model.layers.N.". */
static const struct {
    const char *hf, *gguf;
    arch_when when;
    int stacked; /* hf has %d: one tensor per expert, stacked [E, ...] in GGUF */
} layer_names[] = {
    {"input_layernorm.weight", "attn_norm.weight", ANY, 0},
    {"self_attn.q_proj.weight", "attn_q.weight", ANY, 0},
    {"self_attn.k_proj.weight", "attn_k.weight", ANY, 0},
    {"self_attn.v_proj.weight", "attn_v.weight", ANY, 0},
    {"self_attn.o_proj.weight", "attn_output.weight", ANY, 0},
    {"self_attn.q_proj.bias", "attn_q.bias", ANY, 0},
    {"self_attn.k_proj.bias", "attn_k.bias", ANY, 0},
    {"self_attn.v_proj.bias", "attn_v.bias", ANY, 0},
    {"self_attn.o_proj.bias", "attn_output.bias", ANY, 0},
    {"self_attn.q_norm.weight", "attn_q_norm.weight", ANY, 0},
    {"self_attn.k_norm.weight", "attn_k_norm.weight", ANY, 0},
    {"post_attention_layernorm.weight", "ffn_norm.weight", NOT_GEMMA, 0},
    {"post_attention_layernorm.weight", "post_attention_norm.weight", GEMMA, 0},
    {"pre_feedforward_layernorm.weight", "ffn_norm.weight", GEMMA, 0},
    {"post_feedforward_layernorm.weight", "post_ffw_norm.weight", GEMMA, 0},
    {"mlp.gate_proj.weight", "ffn_gate.weight", ANY, 0},
    {"mlp.up_proj.weight", "ffn_up.weight", ANY, 0},
    {"mlp.down_proj.weight", "ffn_down.weight", ANY, 0},
    {"mlp.gate.weight", "ffn_gate_inp.weight", ANY, 0},
    {"mlp.experts.%d.gate_proj.weight", "ffn_gate_exps.weight", ANY, 1},
    {"mlp.experts.%d.up_proj.weight", "ffn_up_exps.weight", ANY, 1},
    {"mlp.experts.%d.down_proj.weight", "ffn_down_exps.weight", ANY, 1},
};
enum { N_LAYER_NAMES = sizeof layer_names / sizeof *layer_names };

static const struct {
    const char *hf, *gguf;
} model_names[] = {
    {"model.embed_tokens.weight", "token_embd.weight"},
    {"model.norm.weight", "output_norm.weight"},
    {"lm_head.weight", "output.weight"},
};

static int applies(arch_when w, const char *arch) {
    int gemma = strncmp(arch, "gemma", 5) == 0;
    return w == ANY || (w == GEMMA) == gemma;
}

/* The layer index after prefix (e.g. "blk.") and the rest of the name, or -1. */
static int layer_of(const char *name, const char *prefix, const char **rest) {
    size_t pl = strlen(prefix);
    if (strncmp(name, prefix, pl) != 0) return -1;
    int layer, used = 0;
    if (sscanf(name + pl, "%d.%n", &layer, &used) != 1 || used == 0 || layer < 0) return -1;
    *rest = name + pl + used;
    return layer;
}

int hr_gguf_to_hf(const char *arch, const char *gguf, char *hf, size_t n, int *stacked) {
    *stacked = 0;
    for (size_t i = 0; i < sizeof model_names / sizeof *model_names; i++)
        if (strcmp(gguf, model_names[i].gguf) == 0)
            return snprintf(hf, n, "%s", model_names[i].hf) < (int)n;
    const char *rest;
    int l = layer_of(gguf, "blk.", &rest);
    if (l < 0) return 0;
    for (int i = 0; i < N_LAYER_NAMES; i++)
        if (applies(layer_names[i].when, arch) && strcmp(rest, layer_names[i].gguf) == 0) {
            *stacked = layer_names[i].stacked; /* then hf keeps the expert's %d */
            return snprintf(hf, n, "model.layers.%d.%s", l, layer_names[i].hf) < (int)n;
        }
    return 0;
}

int hr_hf_to_gguf(const char *arch, const char *hf, char *gguf, size_t n, int *expert) {
    *expert = -1;
    for (size_t i = 0; i < sizeof model_names / sizeof *model_names; i++)
        if (strcmp(hf, model_names[i].hf) == 0)
            return snprintf(gguf, n, "%s", model_names[i].gguf) < (int)n;
    const char *rest;
    int l = layer_of(hf, "model.layers.", &rest);
    if (l < 0) return 0;
    for (int i = 0; i < N_LAYER_NAMES; i++) {
        if (!applies(layer_names[i].when, arch)) continue;
        int e = -1, used = 0;
        char pat[96];
        if (layer_names[i].stacked) {
            /* "mlp.experts.%d.gate_proj.weight" -> match with %n after the suffix */
            snprintf(pat, sizeof pat, "%s%%n", layer_names[i].hf);
            if (sscanf(rest, pat, &e, &used) != 1 || rest[used] != 0 || e < 0) continue;
        } else if (strcmp(rest, layer_names[i].hf) != 0) {
            continue;
        }
        *expert = e;
        return snprintf(gguf, n, "blk.%d.%s", l, layer_names[i].gguf) < (int)n;
    }
    return 0;
}

int hr_gguf_permutes(const char *arch) { return strcmp(arch, "llama") == 0; }

char hr_gguf_qk_kind(const char *hf) {
    const char *rest;
    if (layer_of(hf, "model.layers.", &rest) < 0) return 0;
    if (!strcmp(rest, "self_attn.q_proj.weight") || !strcmp(rest, "self_attn.q_proj.bias"))
        return 'q';
    if (!strcmp(rest, "self_attn.k_proj.weight") || !strcmp(rest, "self_attn.k_proj.bias"))
        return 'k';
    return 0;
}

void hr_gguf_permute_rows(const void *src, void *dst, int64_t rows, size_t row_bytes, int n_head,
                          int inverse) {
    int64_t hd = rows / n_head, half = hd / 2;
    for (int64_t h = 0; h < n_head; h++)
        for (int64_t i = 0; i < half; i++)
            for (int64_t j = 0; j < 2; j++) {
                int64_t g = h * hd + 2 * i + j, f = h * hd + j * half + i;
                int64_t to = inverse ? f : g, from = inverse ? g : f;
                memcpy((char *)dst + (size_t)to * row_bytes,
                       (const char *)src + (size_t)from * row_bytes, row_bytes);
            }
}
