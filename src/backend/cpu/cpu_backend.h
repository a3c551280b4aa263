/* Internals shared by the CPU backend's files (not part of the backend interface). */
#ifndef HR_BACKEND_CPU_BACKEND_H
#define HR_BACKEND_CPU_BACKEND_H

#include "backend/backend.h"
#include "base/pool.h"

typedef struct {
    hr_backend base;
    hr_pool *pool;
    hr_step_meta meta; /* the current step's token layout (host pointers) */
    hr_cpu_options opt;
    void *scratch; /* matmul's packed / rounded x (--compute bf16) or quantized-weight
                      buffers (engine thread only) */
    size_t scratch_bytes;
    long max_k;    /* longest row of the bf16 and quantized weights uploaded: sizes the scratch */
    int has_quant; /* a quantized weight was uploaded: steps reserve the quantized matmul scratch */
    float *sample_probs; /* (sample_cap) the sample op's scratch, vocab per pool thread */
    int32_t *sample_idx; /* (sample_cap) */
    size_t sample_cap;
} hr_cpu_backend;

static inline int hr_kv_head_dim(const hr_kv_store *kv, int layer) {
    return kv->layer_head_dim ? kv->layer_head_dim[layer] : kv->head_dim;
}

/* Byte offset of (layer, block, kv head, slot) in a KV store whose head vectors in that
 * layer take row_bytes (hr_kv_row_bytes). A block keeps each kv head's rows together, so
 * the rows attention walks for one head are contiguous within a block (and share pages)
 * instead of a whole KV row apart. */
static inline size_t hr_kv_offset(const hr_kv_store *kv, int layer, size_t row_bytes, int block,
                                  int kvh, int slot) {
    return kv->layer_off[layer] +
           (((size_t)block * kv->n_kv_heads + kvh) * kv->block_size + slot) * row_bytes;
}

/* Stores n floats of x as one head vector in dtype (kv_rows.c): bf16 and f16 round to
 * nearest even, Q8_0 and Q4_0 quantize like GGML's quantize_row_q8_0_ref and
 * quantize_row_q4_0_ref (n a multiple of 32). */
void hr_kv_row_store(void *row, const float *x, hr_dtype dtype, int n);

/* MemAvailable and MemTotal (bytes) from the text of /proc/meminfo; 0 when either is missing. */
int hr_cpu_meminfo_parse(const char *text, size_t *avail, size_t *total);

/* Converts n elements of t starting at element off to f32. */
void hr_cpu_to_f32(float *y, const hr_tensor *t, long off, long n);

/* Grows the matmul scratch (bf16 and quantized-weight paths) for steps of up to T tokens;
 * 0 when out of memory. */
int hr_cpu_matmul_reserve(hr_cpu_backend *cb, int T);
void hr_cpu_matmul(hr_backend *be, float *y, const float *x, const hr_tensor *w,
                   const hr_tensor *bias, int T);
void hr_cpu_attention(hr_backend *be, float *out, const float *q, const hr_kv_store *kv,
                      const hr_attn_params *p);

/* MoE ops (moe.c); hr_cpu_moe_ref is the per-token reference the grouped op is tested against. */
void hr_cpu_moe_route(hr_backend *be, int32_t *ids, float *weights, const float *logits, int T,
                      int n_experts, int k, int renorm);
void hr_cpu_moe_experts(hr_backend *be, float *y, const float *x, const int32_t *ids,
                        const float *weights, int T, int k, const hr_moe_weights *w);
float hr_cpu_act(float g, hr_act_fn fn);
void hr_cpu_moe_ref(float *y, const float *x, const int32_t *ids, const float *weights, int T,
                    int k, const hr_moe_weights *w);
/* Hybrid-layer ops (linear_attn.c). */
void hr_cpu_sigmoid_mul(hr_backend *be, float *y, const float *g, long rows, int w, int g_w);
void hr_cpu_conv1d(hr_backend *be, float *x, const hr_tensor *w, int channels, hr_kv_store *kv,
                   int state_layer);
void hr_cpu_gated_delta(hr_backend *be, float *out, hr_kv_store *kv, const hr_delta_params *p);

#endif
