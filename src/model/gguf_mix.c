/* Which type each matrix of a converted GGUF file gets: the --gguf-type everywhere, or
 * llama-quantize's Q4_K_M / Q5_K_M recipe (llama.cpp src/llama-quant.cpp,
 * llama_tensor_get_type, for the architectures gguf_convert.c writes), then llama.cpp's
 * fallback for rows that are not whole blocks. docs/gguf.md lists the rules. */
#include <stdio.h>
#include <string.h>

#include "model/gguf_write.h"

/* llama.cpp's use_more_bits: the first and last eighth of the layers and every third between. */
static int more_bits(int i, int n) { return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2; }

static hr_dtype recipe(const hr_gguf_mix *m, const char *name, int64_t cols) {
    hr_dtype t = m->base;
    if (!m->mixed) return t;
    if (!strcmp(name, "output.weight") || (m->tied && !strcmp(name, "token_embd.weight")))
        return cols % hr_dtype_get(t)->block ? HR_Q8_0 : HR_Q6_K;
    int layer = -1;
    if (sscanf(name, "blk.%d.", &layer) != 1) return t;
    if (strstr(name, "attn_v.weight")) {
        if (more_bits(layer, m->n_layers)) t = HR_Q6_K;
        if (m->is_70b && t == HR_Q4_K) t = HR_Q5_K;
        if (m->n_experts == 8) t = HR_Q8_0;
    } else if (strstr(name, "attn_k.weight")) {
        if (m->n_experts == 8) t = HR_Q8_0;
    } else if (strstr(name, "ffn_down")) {
        if (more_bits(layer, m->n_layers)) t = HR_Q6_K;
    } else if (strstr(name, "attn_output.weight")) {
        if (m->n_experts == 8 && m->base == HR_Q4_K) t = HR_Q5_K;
    }
    return t;
}

/* llama.cpp's types for rows that are not whole super-blocks; F16 for the rest. */
static hr_dtype fallback(hr_dtype t, int64_t cols) {
    hr_dtype f = t == HR_Q4_K ? HR_Q5_0 : t == HR_Q5_K ? HR_Q5_1 : t == HR_Q6_K ? HR_Q8_0 : HR_F16;
    return cols % hr_dtype_get(f)->block ? HR_F16 : f;
}

hr_dtype hr_gguf_mix_type(const hr_gguf_mix *m, const char *name, int64_t cols) {
    if (m->base == HR_F16 || strstr(name, "ffn_gate_inp.weight")) return HR_F16;
    hr_dtype t = recipe(m, name, cols);
    return cols % hr_dtype_get(t)->block ? fallback(t, cols) : t;
}
