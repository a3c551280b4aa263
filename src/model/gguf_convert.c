/* A checkpoint directory -> an F16 GGUF file, the way llama.cpp's convert_hf_to_gguf.py
 * writes one: {arch}.* metadata from the config, tensors under GGUF names, matrices as
 * F16 and vectors as F32, llama q/k rows permuted, gemma3 norms stored as 1 + w, experts
 * stacked [E, rows, cols], no output.weight when embeddings are tied, llama3 rope scaling
 * as rope_freqs.weight. No tokenizer. Optionally with the matrices quantized as
 * hr_gguf_mix_type says (gguf_mix.c). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/config.h"
#include "model/gguf_names.h"
#include "model/gguf_write.h"
#include "model/safetensors.h"
#include "tensor/quant.h"

enum { MAX_ROPE_FREQS = 1024 };

typedef struct {
    char name[160];
    hr_dtype dtype;
    int ndim;
    int64_t shape[HR_MAX_DIMS];
    void *data; /* F16 or F32 */
} out_tensor;

typedef struct {
    const hr_model_config *c;
    const char *arch;
    out_tensor *t;
    int n, cap;
    hr_gguf_mix mix; /* the types 2-D tensors are written in */
} conv;

static const char *gguf_arch(hr_arch a) {
    switch (a) {
    case HR_ARCH_LLAMA:
    case HR_ARCH_MISTRAL: return "llama";
    case HR_ARCH_QWEN2: return "qwen2";
    case HR_ARCH_QWEN3: return "qwen3";
    case HR_ARCH_QWEN3_MOE: return "qwen3moe";
    case HR_ARCH_GEMMA3: return "gemma3";
    default: return NULL;
    }
}

static float elem(const hr_tensor *t, int64_t i) {
    switch (t->dtype) {
    case HR_BF16: return hr_bf16_to_f32(((const uint16_t *)t->data)[i]);
    case HR_F16: return hr_f16_to_f32(((const uint16_t *)t->data)[i]);
    default: return ((const float *)t->data)[i];
    }
}

static hr_err *key_u32(hr_gguf_writer *w, const char *arch, const char *k, int64_t v) {
    char key[128];
    snprintf(key, sizeof key, "%s.%s", arch, k);
    return hr_gguf_put_u32(w, key, (uint32_t)v);
}

static hr_err *key_f32(hr_gguf_writer *w, const char *arch, const char *k, double v) {
    char key[128];
    snprintf(key, sizeof key, "%s.%s", arch, k);
    return hr_gguf_put_f32(w, key, (float)v);
}

static hr_err *gemma3_meta(hr_gguf_writer *w, const hr_model_config *c, const char *a) {
    if (c->sliding_window > 0) HR_TRY(key_u32(w, a, "attention.sliding_window", c->sliding_window));
    uint8_t pat[HR_MAX_LAYERS];
    for (int l = 0; l < c->n_layers; l++)
        pat[l] = c->layer_kind[l] == HR_LAYER_SLIDING;
    char key[128];
    snprintf(key, sizeof key, "%s.attention.sliding_window_pattern", a);
    HR_TRY(hr_gguf_put_arr(w, key, HR_GGUF_BOOL, pat, (uint64_t)c->n_layers));
    HR_TRY(key_f32(w, a, "rope.freq_base_swa", c->rope_sliding.theta));
    if (c->final_softcap > 0) HR_TRY(key_f32(w, a, "final_logit_softcapping", c->final_softcap));
    return NULL;
}

static hr_err *metadata(hr_gguf_writer *w, const hr_model_config *c, const char *a) {
    HR_TRY(hr_gguf_put_str(w, "general.architecture", a));
    HR_TRY(hr_gguf_put_u32(w, "general.alignment", 32));
    HR_TRY(key_u32(w, a, "block_count", c->n_layers));
    HR_TRY(key_u32(w, a, "context_length", c->max_pos));
    HR_TRY(key_u32(w, a, "embedding_length", c->hidden));
    HR_TRY(key_u32(w, a, "feed_forward_length", c->intermediate));
    HR_TRY(key_u32(w, a, "attention.head_count", c->n_heads));
    HR_TRY(key_u32(w, a, "attention.head_count_kv", c->n_kv_heads));
    HR_TRY(key_u32(w, a, "attention.key_length", c->head_dim));
    HR_TRY(key_u32(w, a, "attention.value_length", c->head_dim));
    HR_TRY(key_f32(w, a, "attention.layer_norm_rms_epsilon", c->rms_eps));
    HR_TRY(key_f32(w, a, "rope.freq_base", c->rope.theta));
    HR_TRY(key_u32(w, a, "rope.dimension_count",
                   (int64_t)(c->head_dim * c->rope.partial_rotary + 0.5)));
    if (c->rope.type == HR_ROPE_LINEAR) {
        char key[128];
        snprintf(key, sizeof key, "%s.rope.scaling.type", a);
        HR_TRY(hr_gguf_put_str(w, key, "linear"));
        HR_TRY(key_f32(w, a, "rope.scaling.factor", c->rope.factor));
    } else if (c->rope.type != HR_ROPE_DEFAULT && c->rope.type != HR_ROPE_LLAMA3) {
        return hr_errf("rope type %d has no GGUF form", c->rope.type);
    }
    if (c->n_experts) {
        HR_TRY(key_u32(w, a, "expert_count", c->n_experts));
        HR_TRY(key_u32(w, a, "expert_used_count", c->n_experts_per_tok));
        HR_TRY(key_u32(w, a, "expert_feed_forward_length", c->moe_intermediate));
    }
    if (c->bos_id >= 0)
        HR_TRY(hr_gguf_put_u32(w, "tokenizer.ggml.bos_token_id", (uint32_t)c->bos_id));
    if (c->n_eos)
        HR_TRY(hr_gguf_put_u32(w, "tokenizer.ggml.eos_token_id", (uint32_t)c->eos_ids[0]));
    return c->arch == HR_ARCH_GEMMA3 ? gemma3_meta(w, c, a) : NULL;
}

/* The output tensor named gname, made on first use (experts: [E, rows, cols]). */
static hr_err *target(conv *cv, const char *gname, const hr_tensor *t, int expert,
                      out_tensor **out) {
    for (int i = 0; i < cv->n; i++)
        if (!strcmp(cv->t[i].name, gname)) return *out = &cv->t[i], NULL;
    if (cv->n == cv->cap) {
        int cap = cv->cap ? 2 * cv->cap : 64;
        out_tensor *v = realloc(cv->t, sizeof *v * (size_t)cap);
        if (!v) return hr_err_oom();
        cv->t = v;
        cv->cap = cap;
    }
    out_tensor *o = &cv->t[cv->n];
    *o = (out_tensor){.dtype = t->ndim == 1 ? HR_F32 : HR_F16, .ndim = t->ndim};
    snprintf(o->name, sizeof o->name, "%s", gname);
    memcpy(o->shape, t->shape, sizeof o->shape);
    if (expert >= 0) {
        o->ndim = 3;
        o->shape[0] = cv->c->n_experts;
        o->shape[1] = t->shape[0];
        o->shape[2] = t->shape[1];
    }
    int64_t numel = 1;
    for (int d = 0; d < o->ndim; d++)
        numel *= o->shape[d];
    o->data = calloc((size_t)(numel ? numel : 1), o->dtype == HR_F32 ? 4 : 2);
    if (!o->data) return hr_err_oom();
    cv->n++;
    *out = o;
    return NULL;
}

static int ends_with(const char *s, const char *suf) {
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && !strcmp(s + a - b, suf);
}

static hr_err *convert_tensor(conv *cv, const char *hf, const hr_tensor *t) {
    char gname[160];
    int expert;
    if (!strcmp(hf, "lm_head.weight") && cv->c->tie_embeddings) return NULL;
    if (!hr_hf_to_gguf(cv->arch, hf, gname, sizeof gname, &expert))
        return hr_errf("tensor \"%s\" has no GGUF name", hf);
    if (expert >= cv->c->n_experts) return hr_errf("tensor \"%s\": expert index out of range", hf);
    out_tensor *o = NULL;
    HR_TRY(target(cv, gname, t, expert, &o));
    int64_t n = hr_tensor_numel(t), base = expert >= 0 ? expert * n : 0;
    float shift = cv->c->arch == HR_ARCH_GEMMA3 && ends_with(hf, "norm.weight") ? 1.0f : 0.0f;
    for (int64_t i = 0; i < n; i++) {
        float v = elem(t, i) + shift;
        if (o->dtype == HR_F32)
            ((float *)o->data)[base + i] = v;
        else
            ((uint16_t *)o->data)[base + i] = hr_f32_to_f16(v);
    }
    char kind = hr_gguf_permutes(cv->arch) ? hr_gguf_qk_kind(hf) : 0;
    if (!kind) return NULL;
    size_t bytes = (size_t)n * (o->dtype == HR_F32 ? 4 : 2);
    void *tmp = malloc(bytes);
    if (!tmp) return hr_err_oom();
    memcpy(tmp, o->data, bytes);
    hr_gguf_permute_rows(tmp, o->data, t->shape[0], bytes / (size_t)t->shape[0],
                         kind == 'q' ? cv->c->n_heads : cv->c->n_kv_heads, 0);
    free(tmp);
    return NULL;
}

/* llama3 rope scaling as the converter writes it: per-frequency factors in rope_freqs.weight. */
static hr_err *rope_freqs(hr_gguf_writer *w, const hr_rope_config *r, int dim) {
    float f[MAX_ROPE_FREQS];
    if (dim / 2 > MAX_ROPE_FREQS) return hr_errf("head_dim %d is too large", dim);
    double low_wl = r->original_max_pos / r->low_freq_factor,
           high_wl = r->original_max_pos / r->high_freq_factor;
    for (int i = 0; i < dim / 2; i++) {
        double wl = 2 * M_PI * pow(r->theta, 2.0 * i / dim);
        double smooth = (r->original_max_pos / wl - r->low_freq_factor) /
                        (r->high_freq_factor - r->low_freq_factor);
        f[i] = wl < high_wl  ? 1.0f
               : wl > low_wl ? (float)r->factor
                             : (float)(1 / ((1 - smooth) / r->factor + smooth));
    }
    return hr_gguf_put_tensor(w, "rope_freqs.weight", HR_F32, 1, (int64_t[]){dim / 2}, f);
}

/* A 2-D F16 tensor in the type hr_gguf_mix_type gives it (blocks as hr_quant_row writes
 * them); others stay as they are. */
static hr_err *put_tensor(const conv *cv, hr_gguf_writer *w, const out_tensor *o) {
    hr_dtype t = o->dtype == HR_F16 && o->ndim == 2
                     ? hr_gguf_mix_type(&cv->mix, o->name, o->shape[1])
                     : o->dtype;
    if (t == o->dtype) return hr_gguf_put_tensor(w, o->name, o->dtype, o->ndim, o->shape, o->data);
    int64_t rows = o->shape[0], cols = o->shape[1];
    size_t row_bytes = hr_dtype_bytes(t, cols);
    uint8_t *q = malloc(row_bytes * (size_t)rows);
    float *f = malloc(sizeof(float) * (size_t)cols);
    hr_err *e = q && f ? NULL : hr_err_oom();
    for (int64_t r = 0; !e && r < rows; r++) {
        const uint16_t *h = (const uint16_t *)o->data + r * cols;
        for (int64_t i = 0; i < cols; i++)
            f[i] = hr_f16_to_f32(h[i]);
        hr_quant_row(t, f, q + (size_t)r * row_bytes, cols);
    }
    if (!e) e = hr_gguf_put_tensor(w, o->name, t, o->ndim, o->shape, q);
    free(q);
    free(f);
    return e;
}

static hr_err *convert(conv *cv, const hr_safetensors *st, hr_gguf_writer *w, const char *path) {
    HR_TRY(metadata(w, cv->c, cv->arch));
    if (cv->c->rope.type == HR_ROPE_LLAMA3) HR_TRY(rope_freqs(w, &cv->c->rope, cv->c->head_dim));
    for (int i = 0; i < hr_st_count(st); i++) {
        const hr_tensor *t = hr_st_get(st, hr_st_name(st, i));
        if (t->dtype != HR_BF16 && t->dtype != HR_F16 && t->dtype != HR_F32)
            return hr_errf("tensor \"%s\": dtype %s is not a float type", hr_st_name(st, i),
                           hr_dtype_name(t->dtype));
        HR_TRY(convert_tensor(cv, hr_st_name(st, i), t));
    }
    for (int i = 0; i < cv->n; i++)
        HR_TRY(put_tensor(cv, w, &cv->t[i]));
    return hr_gguf_writer_save(w, path);
}

hr_err *hr_gguf_convert(const char *dir, const char *path) {
    return hr_gguf_convert_as(dir, path, HR_F16, 0);
}

hr_err *hr_gguf_convert_as(const char *dir, const char *path, hr_dtype matrices, int mixed) {
    if (matrices != HR_F16 && !hr_quant_can_write(matrices))
        return hr_errf("GGUF conversion writes F16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K or "
                       "Q6_K matrices, not %s",
                       hr_dtype_name(matrices));
    if (mixed && matrices != HR_Q4_K && matrices != HR_Q5_K)
        return hr_errf("the _M mixes are Q4_K_M and Q5_K_M, not %s_M", hr_dtype_name(matrices));
    hr_model_config c;
    HR_TRY(hr_config_load(dir, &c));
    conv cv = {.c = &c, .arch = gguf_arch(c.arch)};
    if (!cv.arch)
        return hr_errf("%s: model_type %s has no GGUF conversion here", dir, c.model_type);
    cv.mix = (hr_gguf_mix){matrices, mixed, c.n_layers, c.n_experts, c.tie_embeddings, 0};
    /* llama.cpp's LLM_TYPE_70B: 80 layers of llama with GQA, or of qwen2 */
    if (c.n_layers == 80)
        cv.mix.is_70b =
            !strcmp(cv.arch, "qwen2") || (!strcmp(cv.arch, "llama") && c.n_kv_heads < c.n_heads);
    hr_safetensors *st = NULL;
    hr_gguf_writer *w = NULL;
    hr_err *e = hr_st_open(dir, &st);
    if (!e) e = hr_gguf_writer_new(&w);
    if (!e) e = convert(&cv, st, w, path);
    for (int i = 0; i < cv.n; i++)
        free(cv.t[i].data);
    free(cv.t);
    hr_gguf_writer_free(w);
    hr_st_close(st);
    return hr_err_wrap(e, "converting %s to GGUF: ", dir);
}
