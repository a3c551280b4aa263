/* Writing GGUF files (version 3): an in-memory builder of metadata and tensors
 * (gguf_write.c), and a converter of a checkpoint directory to an F16 GGUF file that
 * applies llama.cpp's convert_hf_to_gguf.py conventions (gguf_convert.c). Tests use both:
 * the converter to check the reader undoes those conventions, the builder to craft
 * corrupt files. */
#ifndef HR_MODEL_GGUF_WRITE_H
#define HR_MODEL_GGUF_WRITE_H

#include <stddef.h>
#include <stdint.h>

#include "model/gguf.h"

typedef struct hr_gguf_writer hr_gguf_writer;

hr_err *hr_gguf_writer_new(hr_gguf_writer **out);
void hr_gguf_writer_free(hr_gguf_writer *w);

hr_err *hr_gguf_put_str(hr_gguf_writer *w, const char *key, const char *v);
/* A scalar of type t (not string/array) from the bytes at v. */
hr_err *hr_gguf_put(hr_gguf_writer *w, const char *key, hr_gguf_type t, const void *v);
hr_err *hr_gguf_put_u32(hr_gguf_writer *w, const char *key, uint32_t v);
hr_err *hr_gguf_put_f32(hr_gguf_writer *w, const char *key, float v);
/* An array of n scalars of type t, or (t = HR_GGUF_STRING, elems a const char **) strings. */
hr_err *hr_gguf_put_arr(hr_gguf_writer *w, const char *key, hr_gguf_type t, const void *elems,
                        uint64_t n);
/* A tensor (row-major shape; written as GGUF's reversed ne); data is copied. */
hr_err *hr_gguf_put_tensor(hr_gguf_writer *w, const char *name, hr_dtype dt, int ndim,
                           const int64_t *shape, const void *data);

/* The file's bytes (caller frees). */
hr_err *hr_gguf_writer_bytes(const hr_gguf_writer *w, uint8_t **out, size_t *len);
hr_err *hr_gguf_writer_save(const hr_gguf_writer *w, const char *path);

/* dir (config.json + safetensors) -> path: llama, mistral, qwen2, qwen3, qwen3_moe, gemma3. */
hr_err *hr_gguf_convert(const char *dir, const char *path);
/* The same with the 2-D tensors (not MoE routers) quantized as hr_gguf_mix_type says for
 * base `matrices` (F16: none; or a type hr_quant_can_write takes) and `mixed`: like
 * llama-quantize --pure of the F16 file (mixed 0), or llama-quantize's Q4_K_M / Q5_K_M
 * (mixed 1, base Q4_K / Q5_K). */
hr_err *hr_gguf_convert_as(const char *dir, const char *path, hr_dtype matrices, int mixed);

/* What decides a converted matrix's type (gguf_mix.c). */
typedef struct {
    hr_dtype base; /* the --gguf-type; F16: nothing quantized */
    int mixed;     /* llama-quantize's _M recipe on base Q4_K or Q5_K */
    int n_layers;  /* the model's */
    int n_experts; /* 0 for dense models */
    int tied;      /* no output.weight: token_embd.weight is the head */
    int is_70b;    /* llama.cpp's LLM_TYPE_70B (80-layer llama with GQA, or qwen2) */
} hr_gguf_mix;

/* The type the GGUF tensor `name` (a matrix of rows of `cols`) is written in: F16 (as
 * converted) or a type hr_quant_row writes. With `mixed`: output.weight (or the tied
 * token_embd) Q6_K; attn_v and ffn_down of the layers llama.cpp's use_more_bits picks Q6_K;
 * the 70B attn_v at least Q5_K; 8-expert models' attn_v / attn_k Q8_0 and (Q4_K_M)
 * attn_output Q5_K; the rest the base. Rows that are not whole blocks of that type fall back
 * as llama.cpp's: Q4_K -> Q5_0, Q5_K -> Q5_1, Q6_K -> Q8_0, the head Q8_0, else (or if
 * still not whole blocks) F16. */
hr_dtype hr_gguf_mix_type(const hr_gguf_mix *m, const char *name, int64_t cols);

#endif
