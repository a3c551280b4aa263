/* Launchers of the CUDA backend's kernels (the *.cu files), callable from its C host code.
 * Every launcher enqueues on the given stream and returns at once; launch errors surface at
 * the backend's next sync point (cudaGetLastError there). Activations are f32 row-major;
 * weights and tables come as (pointer, dtype) in their upload dtype (F32, F16 or BF16). The
 * step's metadata arrays (tokens, pos, row, q_start, block table, state slots) are device
 * memory uploaded once per step (cuda_backend.c). */
#ifndef HR_BACKEND_CUDA_KERNELS_H
#define HR_BACKEND_CUDA_KERNELS_H

#include <stdint.h>

#include <cuda_runtime_api.h>

#include "backend/sample.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Rows of at least HR_CU_TILE_MIN tokens (prefill chunks) run attention on the tensor cores
 * in tiles of HR_CU_TILE queries. */
enum { HR_CU_TILE = 64, HR_CU_TILE_MIN = 64 };

/* Whether kernels launch with programmatic dependent launch (common.cuh; default on, off with
 * HEARTH_CUDA_PDL=0); set once when the backend is created. */
extern int hr_cu_pdl;

/* The element type codes the kernels take (the subset of hr_dtype they read). */
enum { HR_CU_F32 = 0, HR_CU_F16 = 1, HR_CU_BF16 = 2 };

/* GGUF block formats of weights the kernels read (qmatmul.cu, mmvq.cu). */
enum {
    HR_CU_Q8_0,
    HR_CU_Q4_0,
    HR_CU_Q4_1,
    HR_CU_Q5_0,
    HR_CU_Q5_1,
    HR_CU_Q4_K,
    HR_CU_Q5_K,
    HR_CU_Q6_K,
};
/* y[T, N] = x[T, K] w[N, K]^T for T <= HR_CU_GEMV_MAX_T, w in format q (planar: the layout of
 * tensor/qplanes.h) with rows of rb bytes (the host owns the block sizes), f32 arithmetic. */
void hr_cu_qgemv(cudaStream_t s, float *y, const float *x, const void *w, int q, int planar, int T,
                 long N, long K, long rb);
/* out[N, K] (f16: 11 mantissa bits keep more of a decoded weight than bf16's 8) = w decoded,
 * for cuBLAS products of larger batches. */
void hr_cu_dequant_f16(cudaStream_t s, void *out, const void *w, int q, int planar, long N, long K,
                       long rb);

/* The 8-bit-activation products (mmvq.cu), the CPU's arithmetic (backend/cpu/qdot.h): x
 * quantized to int8 per 32 elements (Q8_0, Q4_0, Q4_1, Q5_0, Q5_1) or per 256 (Q4_K, Q5_K,
 * Q6_K), integer dots per block, f32 across blocks. hr_cu_mmvq_per: the block of x format q
 * takes (32 or 256), 0 where it has no such product (a matrix of a planar format not planar,
 * rows not 16-byte aligned). */
enum { HR_CU_MMVQ_MAX_T = 8 }; /* rows of x mmvq takes (more: mmq.cu, or f16 cuBLAS) */
int hr_cu_mmvq_per(int q, int planar, long rb);
/* Bytes of T rows of K elements quantized (codes, scales, sums per 16). */
size_t hr_cu_xq_bytes(int T, long K);
void hr_cu_quantize_x(cudaStream_t s, void *xq, const float *x, int T, long K, int per);
/* hr_cu_rmsnorm (a: NULL) or hr_cu_add_rmsnorm whose kernel also writes y quantized into xq
 * as hr_cu_quantize_x would (elementwise.cu), for rows of dim where hr_cu_norm_quant_fits. */
int hr_cu_norm_quant_fits(int dim, int per);
void hr_cu_norm_quant(cudaStream_t s, float *y, float *x, const float *a, const void *w,
                      int w_dtype, int rows, int dim, float eps, int one_plus, void *xq, int per);
/* hr_cu_rmsnorm (a: NULL) or hr_cu_add_rmsnorm whose kernel also writes y rounded to the 16-bit
 * type yh_dtype into yh, as hr_cu_round would, for the 16-bit products that read it (yh NULL:
 * neither does). */
void hr_cu_norm_round(cudaStream_t s, float *y, float *x, const float *a, const void *w,
                      int w_dtype, int rows, int dim, float eps, int one_plus, void *yh,
                      int yh_dtype);
/* hr_cu_act_mul whose kernel also writes y rounded likewise into yh. */
void hr_cu_act_mul_round(cudaStream_t s, float *y, const float *gate, const float *up, long n,
                         int act, void *yh, int yh_dtype);
/* hr_cu_act_mul of T rows of K whose kernel also writes y quantized into xq. */
void hr_cu_act_mul_quant(cudaStream_t s, float *y, const float *gate, const float *up, int T,
                         long K, int act, void *xq, int per);
/* The step's device metadata (see hr_step_meta). */
typedef struct {
    int n_tokens, n_rows, max_blocks;
    int max_len; /* the longest row's last position + 1 (attention splits) */
    int n_tiles; /* prefill tiles: (first token, tokens) pairs of rows of at least
                    HR_CU_TILE_MIN tokens, HR_CU_TILE tokens each (attention.cu) */
    const int32_t *tiles;
    const int32_t *tokens, *pos, *row, *q_start, *block_table, *state_slots;
    int n_sample_rows;                 /* the sample op's parameters (HR_HEAD_SAMPLE steps) */
    const hr_sample_row *sample_rows;  /* [n_sample_rows], or NULL */
    const hr_logit_edit *sample_edits; /* [n_edits], then the token masks (cuda_backend.c) */
    int sample_mask_words;             /* words per token mask (0: the step has none) */
} hr_cu_meta;

/* One layer's view of the paged KV store: element (block, kvh, slot, d) of K is
 * k[((block * n_kv_heads + kvh) * block_size + slot) * head_dim + d]. */
typedef struct {
    void *k, *v;
    int dtype; /* HR_CU_F32 or HR_CU_BF16 */
    int block_size, n_kv_heads, head_dim;
} hr_cu_kv_layer;

void hr_cu_embed(cudaStream_t s, const hr_cu_meta *m, float *y, const void *table, int dtype,
                 long dim, float scale);
/* The same from a table in GGUF format q (qmatmul.cu). */
void hr_cu_qembed(cudaStream_t s, const hr_cu_meta *m, float *y, const void *table, int q,
                  int planar, long dim, long rb, float scale);
void hr_cu_rmsnorm(cudaStream_t s, float *y, const float *x, const void *w, int w_dtype, int rows,
                   int dim, float eps, int one_plus);
/* x += a, then y = rmsnorm(x) (the residual add and the next layer's norm in one kernel) */
void hr_cu_add_rmsnorm(cudaStream_t s, float *y, float *x, const float *a, const void *w,
                       int w_dtype, int rows, int dim, float eps, int one_plus);
void hr_cu_rope(cudaStream_t s, const hr_cu_meta *m, float *x, int n_heads, int head_dim,
                int rot_dim, const float *inv_freq);
/* rope of q [T, n_q, head_dim] and k [T, n_k, head_dim] (rot_dim dims each), then k and
 * v [T, n_k, head_dim] into the layer's cache: one launch for the three ops */
typedef struct {
    float *q, *k;
    const float *v, *inv_freq;
    int n_q, n_k, head_dim, rot_dim;
} hr_cu_rope_kv;
void hr_cu_rope_kv_write(cudaStream_t s, const hr_cu_meta *m, const hr_cu_rope_kv *r,
                         const hr_cu_kv_layer *kv);
void hr_cu_kv_write(cudaStream_t s, const hr_cu_meta *m, const hr_cu_kv_layer *kv, const float *k,
                    const float *v);
/* act(gate) * up; act 0 = silu, 1 = gelu (tanh) */
void hr_cu_act_mul(cudaStream_t s, float *y, const float *gate, const float *up, long n, int act);
void hr_cu_add(cudaStream_t s, float *y, const float *a, long n);
/* y[r, c] += bias[c] over rows x cols */
void hr_cu_add_bias(cudaStream_t s, float *y, const void *bias, int dtype, int rows, long cols);
void hr_cu_scale(cudaStream_t s, float *y, float f, long n);
void hr_cu_softcap(cudaStream_t s, float *y, float cap, long n);
void hr_cu_copy2d(cudaStream_t s, float *dst, long dst_stride, const float *src, long src_stride,
                  int rows, long cols);
void hr_cu_mul_gather(cudaStream_t s, float *y, const int32_t *idx, const void *table, int dtype,
                      long n);
void hr_cu_sigmoid_mul(cudaStream_t s, float *y, const float *g, long rows, int w, int g_w);
/* dst = src rounded to bf16 (dtype BF16) or f16 (F16), n elements; with lo non-NULL also
 * lo = src - dst rounded likewise (dst + lo carries about twice the mantissa bits) */
void hr_cu_round(cudaStream_t s, void *dst, void *lo, int dtype, const float *src, long n);

/* y_i[T, N_i] = x[T, K] w_i[N_i, K]^T for up to HR_CU_GEMV_FUSE matrices sharing x, T <=
 * HR_CU_GEMV_MAX_T, f32 accumulation (gemv.cu). Matrix i's rows are start[i] .. start[i+1]-1
 * of the launch. */
enum { HR_CU_GEMV_MAX_T = 4, HR_CU_GEMV_FUSE = 4 };
/* Optional work folded into a launch: with norm_x set, x is rmsnorm(norm_x) (weights norm_w,
 * like hr_cu_rmsnorm), computed on the fly and also stored to x; with acc set (one matrix),
 * acc += y as well; with act_y set (two matrices of equal rows, gate and up: 16-bit weights),
 * act_y = act(y_0) * y_1 as hr_cu_act_mul computes it (act 0 SiLU, 1 GELU-tanh), one block
 * taking the same rows of both. */
typedef struct {
    const float *norm_x;
    const void *norm_w;
    int norm_dtype, one_plus;
    float eps;
    float *acc;
    float *act_y;
    int act;
} hr_cu_gemv_fold;
typedef struct {
    int n;
    const void *w[HR_CU_GEMV_FUSE];
    float *y[HR_CU_GEMV_FUSE];
    long start[HR_CU_GEMV_FUSE + 1];
    hr_cu_gemv_fold fold;
} hr_cu_gemv_set;
void hr_cu_gemv(cudaStream_t s, const hr_cu_gemv_set *g, float *x, int dtype, int T, long K);
/* The rows of x for which a product set of contiguous 16-bit weights with a small matrix (q, k,
 * v) runs as one cuBLAS product split into its outputs (cuda_ops.c; HEARTH_CUDA_CAT=N sets the
 * fewest, 0: never): decode batches (a prefill's products are long enough one by one, and its
 * split output would need a large scratch). */
enum { HR_CU_CAT_MIN_T = 17, HR_CU_CAT_MAX_T = 512 };
/* The set's outputs from cat[T, start[n]], its matrices' products side by side in each row (one
 * product of their concatenated weights): y_i[t, j] = cat[t, start[i] + j]. */
void hr_cu_split_cols(cudaStream_t s, const hr_cu_gemv_set *g, const float *cat, int T);
/* The same for GGUF matrices of format q with rows of rb bytes and T <= HR_CU_MMVQ_MAX_T, from
 * x quantized by
 * hr_cu_quantize_x (mmvq.cu; the set's fold is not taken). */
void hr_cu_mmvq(cudaStream_t s, const hr_cu_gemv_set *g, const void *xq, int q, int T, long K,
                long rb);
/* The same on the tensor cores for HR_CU_MMVQ_MAX_T < T <= hr_cu_mmq_max_t(q) (mmq.cu; 0 for
 * formats it does not take, and hr_cu_mmvq_per must not be 0); ws: hr_cu_mmq_ws_bytes(T) of scratch
 * for split-K partials, or NULL (no split). */
enum { HR_CU_MMQ_MAX_T = 64 }; /* the most hr_cu_mmq_max_t gives */
int hr_cu_mmq_max_t(int q);
size_t hr_cu_mmq_ws_bytes(int T);
void hr_cu_mmq(cudaStream_t s, const hr_cu_gemv_set *g, const void *xq, int q, int T, long K,
               long rb, float *ws);
/* The same past those rows, to hr_cu_mmf_max_t (0: the format has none), from x rounded to f16
 * (xh: [T][K]), the weights decoded to f16 in registers (mmf.cu); ws as for mmq, of
 * hr_cu_mmq_ws_bytes(T). */
enum { HR_CU_MMF_MAX_T = 128 }; /* the most hr_cu_mmf_max_t gives */
int hr_cu_mmf_max_t(int q, int planar, long rb);
void hr_cu_mmf(cudaStream_t s, const hr_cu_gemv_set *g, const void *xh, int q, int T, long K,
               long rb, float *ws);
/* The same for 16-bit weights (dtype HR_CU_BF16 or HR_CU_F16, where hr_cu_mmh_takes) and
 * HR_CU_GEMV_MAX_T < T <= HR_CU_MMH_MAX_T, from x rounded to the weight's type (xh: [T][K]) on the
 * tensor cores (mmh.cu); ws as for mmq, of hr_cu_mmq_ws_bytes(T). */
enum { HR_CU_MMH_MAX_T = 64 };
int hr_cu_mmh_takes(int dtype, long K);
/* The same on Hopper's wgmma (mmw.cu; only where hr_cu_mmw_ok: a compute capability 9.0 device)
 * for any T past HR_CU_GEMV_MAX_T: no workspace (K splits sum in a cluster's shared memory, at
 * most hr_cu_mmw_max_splits blocks, default HR_CU_MMW_SPLITS). 0 (nothing launched) where it
 * cannot take the shape: K not a multiple of 8, x or a matrix not 16-byte aligned, a tensor map
 * the driver refuses. The backend gives it rows only when HEARTH_CUDA_MMW=N asks:
 * HR_CU_MMW_MIN_T (or HEARTH_CUDA_MMW_MIN) to N rows, every set. hr_cu_mmw_clusters: how many
 * clusters of `splits` blocks with tiles of bn rows of x the device holds at once (0 where it
 * cannot say). */
enum { HR_CU_MMW_MIN_T = 17, HR_CU_MMW_MAX_T = 128, HR_CU_MMW_SPLITS = 8 };
extern int hr_cu_mmw_max_splits;
extern long hr_cu_mmw_refused; /* hr_cu_mmw calls that launched nothing (gpu_check reads it) */
int hr_cu_mmw_ok(void);
int hr_cu_mmw_clusters(int bn, int splits);
int hr_cu_mmw(cudaStream_t s, const hr_cu_gemv_set *g, const void *xh, int dtype, int T, long K);
/* Whether mmh is faster than cuBLAS for the set g (measured; to HR_CU_MMH_MAX_T rows). */
int hr_cu_mmh_wins(const hr_cu_gemv_set *g);
void hr_cu_mmh(cudaStream_t s, const hr_cu_gemv_set *g, const void *xh, int dtype, int T, long K,
               float *ws);
/* 1 (default): for T = 1 or K >= 8192 each block splits K over its warps for 4 rows; 0, or
 * other shapes: a warp per row group (HEARTH_CUDA_GEMV=warp; bench_kernels measures both). */
extern int hr_cu_gemv_split;

/* Causal paged attention of q [n_tokens, n_heads, head_dim] into out (attention.cu).
 * partial: scratch of hr_cu_attention_scratch floats. */
typedef struct {
    int n_heads, n_kv_heads, head_dim, window;
    float scale, softcap;
} hr_cu_attn;
long hr_cu_attention_scratch(const hr_cu_meta *m, const hr_cu_kv_layer *kv, const hr_cu_attn *p);
void hr_cu_attention(cudaStream_t s, const hr_cu_meta *m, const hr_cu_kv_layer *kv,
                     const hr_cu_attn *p, float *out, const float *q, float *partial);

/* ids[r] = first index of the maximum of x[r, 0..n) (elementwise.cu), in two passes: chunks
 * of each row, then the chunks' maxima; scratch: hr_cu_argmax_scratch floats */
long hr_cu_argmax_scratch(int rows, int n);
void hr_cu_argmax(cudaStream_t s, int32_t *ids, const float *x, int rows, int n, float *scratch);

/* The sample op (sample.cu): out[r] for logits[r, 0..V) with rows[r]'s parameters (a masked
 * row's mask field is 1 + its mask's word offset from edits, as cuda_backend.c packs it), its edits
 * applied to logits in place; one block per row. */
void hr_cu_sample(cudaStream_t s, hr_sample_out *out, float *logits, int rows, int V,
                  const hr_sample_row *prm, const hr_logit_edit *edits);

/* The tensor-core prefill kernel (attention_tc.cu) for the step's tiles: whether it takes
 * this layer (bf16 KV, head_dim 32, 64 or 128), and the launch (0: could not launch). */
int hr_cu_attention_tc_fits(const hr_cu_kv_layer *kv, const hr_cu_attn *p);
int hr_cu_attention_tc(cudaStream_t s, const hr_cu_meta *m, const hr_cu_kv_layer *kv,
                       const hr_cu_attn *p, float *out, const float *q);

/* The tensor-core decode kernel (attention_dtc.cu): whether it takes the layer (bf16 KV, head
 * dim 64 or 128, at most 16 query heads per kv head), its splits for the step, the launch. */
int hr_cu_attention_dtc_fits(const hr_cu_kv_layer *kv, const hr_cu_attn *p);
/* The decode kernel's key tile and stages: HEARTH_CUDA_DTC=auto (the default: by the step's
 * width, attention_dtc.cu), or for A/B runs 32x2, 16x2, 16x3 or 16x4 (keys a tile x tiles a
 * warp keeps in shared memory). */
enum { HR_CU_DTC_32X2, HR_CU_DTC_16X2, HR_CU_DTC_16X3, HR_CU_DTC_16X4, HR_CU_DTC_AUTO };
extern int hr_cu_dtc_tile;
int hr_cu_attention_dtc_splits(const hr_cu_meta *m, const hr_cu_attn *p);
void hr_cu_attention_dtc(cudaStream_t s, const hr_cu_meta *m, const hr_cu_kv_layer *kv,
                         const hr_cu_attn *p, int splits, int skip_tiled, float *out,
                         const float *q, float *partial);

/* MoE (moe.cu). */
void hr_cu_moe_route(cudaStream_t s, int32_t *ids, float *weights, const float *logits, int T,
                     int n_experts, int k, int renorm);
/* dst[i] = src[idx[i] / k] rows of width w, n rows */
void hr_cu_gather_rows(cudaStream_t s, float *dst, const float *src, const int32_t *idx, int k,
                       int n, long w);
/* y[t] = sum_j weights[t*k + j] * o[slot[t*k + j]] rows of width w, T tokens */
void hr_cu_combine_rows(cudaStream_t s, float *y, const float *o, const int32_t *slot,
                        const float *weights, int T, int k, long w);

/* Gated DeltaNet (linear_attn.cu). state: this layer's slots, slot_floats apart. */
void hr_cu_conv1d(cudaStream_t s, const hr_cu_meta *m, float *x, const void *w, int w_dtype,
                  int channels, int K, float *state, long slot_floats);
typedef struct {
    int n_k_heads, n_v_heads, k_dim, v_dim;
    const float *q, *k, *v, *a, *b;
    long ld;
    const void *a_log, *dt_bias;
    int a_log_dtype, dt_bias_dtype;
} hr_cu_delta;
/* Returns 0 when k_dim or v_dim is beyond what the kernel handles. */
int hr_cu_gated_delta(cudaStream_t s, const hr_cu_meta *m, const hr_cu_delta *p, float *out,
                      float *state, long slot_floats);

#ifdef __cplusplus
}
#endif

#endif
