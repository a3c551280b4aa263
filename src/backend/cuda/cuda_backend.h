/* Internals shared by the CUDA backend's host files (not part of the backend interface). */
#ifndef HR_BACKEND_CUDA_CUDA_BACKEND_H
#define HR_BACKEND_CUDA_CUDA_BACKEND_H

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include "backend/backend.h"
#include "backend/cuda/kernels.h"

enum {
    HR_CU_STAGES = 2,
    HR_CU_GRAPHS = 32,
    HR_CU_BLAS_WORKSPACE = 32 << 20,
    HR_CU_BOUNCE = 4 << 20,
    HR_CU_CHUNK_MIN = 64 << 20, /* the weight arena's first chunk (cuda_arena.c) */
    HR_CU_CHUNK_MAX = 1 << 30   /* and its largest */
};

/* A chunk of the weight arena: tensors at base .. base + used, live of them not released. */
typedef struct {
    void *base;
    size_t size, used;
    long live;
} hr_cu_chunk;

/* A decode step's shape: steps of equal keys issue the same ops with the same arguments, so
 * one captured CUDA graph replays them (cuda_graph.c). epoch changes whenever device memory
 * is allocated or freed (a pointer some op might take may have moved). */
typedef struct {
    int n_tokens, n_rows, max_blocks, max_len;
    hr_step_head head; /* the ops after lm_head differ by head and by their rows */
    int n_logit_rows;
    unsigned long epoch;
} hr_cu_graph_key;

typedef struct {
    hr_cu_graph_key key;
    cudaGraphExec_t exec; /* NULL: seen once (run eagerly), captured on the next occurrence */
    long n_ops;           /* ops the captured step issued */
    unsigned long used;   /* LRU tick */
    int valid;
} hr_cu_graph;

typedef enum { HR_CU_EAGER, HR_CU_CAPTURE, HR_CU_REPLAY } hr_cu_graph_mode;

typedef struct {
    hr_backend base;
    int device;
    cudaStream_t stream;
    cublasHandle_t blas;
    void *blas_ws;
    hr_err *sticky; /* the first failure of an op (ops return nothing); reported at sync */
    /* products of 16-bit weights: x rounded to the weight's type (bf16_products), or split
     * into a rounded high part and the rounded rest, two products summed (near-f32 x; the
     * exact mode, twice the tensor-core work) */
    int bf16_products;
    /* step metadata: packed on the host into pinned staging (two slots, each reused only
     * after its upload finished), copied in one transfer into meta_dev */
    void *stage[HR_CU_STAGES];
    cudaEvent_t stage_done[HR_CU_STAGES];
    size_t stage_bytes;
    int stage_next;
    void *meta_dev;
    size_t meta_dev_bytes;
    hr_cu_meta meta;   /* device pointers into meta_dev, counts on the host */
    hr_step_head head; /* the current step's, and its logit rows */
    int n_logit_rows;
    /* reads go through pinned bounce buffers (a copy into pageable memory runs at a fraction
     * of the bus speed): chunk i + 1 lands while chunk i is copied out */
    void *bounce[2];
    cudaEvent_t bounce_done[2];
    /* scratch: x in 16 bits for cuBLAS (high and low halves); attention split partials, and
     * the argmax chunks' maxima after the layers */
    void *xh;
    size_t xh_bytes;
    const float *xh_of; /* the x xh holds (n elements, dtype, at xh_at), NULL: none */
    size_t xh_n;
    int xh_dtype;
    void *xh_at;
    /* x quantized to 8 bits for the products of GGUF weights (mmvq.cu): the x it holds (T rows
     * of K, blocks of per), NULL: none */
    void *xq;
    size_t xq_bytes;
    const float *xq_of;
    int xq_T, xq_per;
    long xq_K;
    void *xq_at;
    void *mmq_ws; /* split-K partials of the tensor-core GGUF products (mmq.cu) */
    size_t mmq_ws_bytes;
    float *partial;
    size_t partial_bytes;
    void *moe; /* grouped rows and their products */
    size_t moe_bytes;
    int32_t *moe_host; /* expert ids read back, then the sorted pairs and their slots */
    size_t moe_host_n;
    hr_cu_chunk *chunks; /* the weight arena (cuda_arena.c) */
    int n_chunks, cap_chunks;
    void *cat; /* the output of a concatenated product set before its split (cuda_ops.c) */
    size_t cat_bytes;
    int cat_min_t;    /* HR_CU_CAT_MIN_T, or HEARTH_CUDA_CAT=N (0: never) */
    long max_k;       /* longest weight row uploaded */
    long max_q_elems; /* largest GGUF-quantized matrix uploaded (elements) */
    void *wdq;        /* bf16 copy of one quantized matrix for a large-batch product */
    size_t wdq_bytes;
    /* small-batch products waiting to be launched together (cuda_ops.c) */
    struct {
        hr_cu_gemv_set set;
        const hr_tensor *bias[HR_CU_GEMV_FUSE];
        const float *x;
        int T, dtype;
        long K;
        int q, per; /* GGUF format and x's block for mmvq, or q = -1: a bf16/f16/f32 GEMV set */
        long rb;
    } pending;
    /* ropes (q, then k) waiting for the KV write of the rotated k (cuda_ops.c) */
    struct {
        hr_cu_rope_kv r;
        int n;
    } pending_rope;
    /* an RMSNorm of at most HR_CU_GEMV_MAX_T rows (HR_CU_MMQ_MAX_T with GGUF weights) waiting
     * to fold into the products of its output, or to quantize it for them (cuda_ops.c); fold
     * holds its input and weights, add (not NULL) a residual addend it adds to its input first
     * (then it does not fold) */
    struct {
        float *y;
        int rows, dim;
        hr_cu_gemv_fold fold;
        const float *add;
    } pending_norm;
    /* a gated activation waiting to quantize its output for the GGUF product that reads it
     * (cuda_ops.c; models with GGUF weights only) */
    struct {
        float *y;
        const float *gate, *up;
        long n;
        int act;
    } pending_act;
    /* a residual add waiting for the RMSNorm of its sum to launch with it (cuda_ops.c) */
    struct {
        float *y;
        const float *a;
        long n;
    } pending_add;
    /* decode-step graphs (cuda_graph.c) */
    hr_cu_graph graphs[HR_CU_GRAPHS];
    hr_cu_graph *graph_cur;
    hr_cu_graph_mode graph_mode;
    long graph_ops; /* ops issued since the step began */
    unsigned long epoch, tick, capture_epoch;
    int graphs_off; /* HEARTH_CUDA_GRAPHS=0, or a step needed the host (MoE) */
    int fold;       /* norms, residual adds and gated activations fold into small-batch products
                     * (HEARTH_CUDA_FOLD=0: off) */
    int qgemv_f32;  /* HEARTH_CUDA_QGEMV=f32: no mmvq/mmq (f32 GEMV to 4 rows, f16 cuBLAS beyond) */
    int mmq_off;    /* HEARTH_CUDA_MMQ=0: no mmq (mmf, or f16 cuBLAS, past mmvq's rows) */
    int mmf_off;    /* HEARTH_CUDA_MMF=0: no mmf (f16 cuBLAS past the 8-bit products' rows) */
    int mmh_max_t;  /* HEARTH_CUDA_MMH=N: the most rows mmh takes (default HR_CU_MMH_MAX_T; 0: none)
                     */
    int mmw_min_t, mmw_max_t; /* the rows mmw takes: HEARTH_CUDA_MMW_MIN=N (default
                               * HR_CU_MMW_MIN_T) to HEARTH_CUDA_MMW=N (default 0: none); none on
                               * a device without wgmma */
    int profile_rows;         /* HEARTH_CUDA_PROFILE=N: the profiler records the eighth decode
                               * step of N rows (ncu --profile-from-start off; 0: none) */
    int profile_seen;         /* decode steps of profile_rows rows so far */
} hr_cuda_backend;

/* Weight memory (cuda_arena.c): bytes placed after the previous upload where the chunk has
 * room; freed by hr_cu_arena_free (a chunk when its last tensor goes); every chunk at destroy. */
hr_err *hr_cu_arena_alloc(hr_cuda_backend *cb, size_t bytes, void **out);
void hr_cu_arena_free(hr_cuda_backend *cb, void *p);
void hr_cu_arena_destroy(hr_cuda_backend *cb);
/* A CUDA runtime failure as an hr_err ("what: message"), NULL on success. */
hr_err *hr_cu_check(cudaError_t e, const char *what);
/* Records the first op failure; later ones are dropped. */
void hr_cu_fail(hr_cuda_backend *cb, hr_err *err);
/* Grows a device scratch buffer to at least bytes (contents not kept); 0 on failure. */
int hr_cu_grow(hr_cuda_backend *cb, void **buf, size_t *cap, size_t bytes);
/* The kernels' code for a tensor dtype (F32, F16, BF16); -1 for others. */
int hr_cu_dtype(hr_dtype t);
/* The kernels' GGUF format code of t (HR_CU_Q8_0 ..), or -1. */
int hr_cu_qtype(hr_dtype t);

/* Decode-step graphs (cuda_graph.c). hr_cu_graph_begin picks the step's mode once its
 * metadata is uploaded (decode_like: one token per row); every op first calls hr_cu_graph_op,
 * which says whether to skip it (a replayed graph already holds it, and is launched after the
 * step's last op); hr_cu_graph_end ends a capture (instantiate, launch) at the step's first
 * sync point. hr_cu_graph_reset drops every graph (memory moved, or teardown). */
void hr_cu_graph_begin(hr_cuda_backend *cb, int decode_like);
int hr_cu_graph_op(hr_cuda_backend *cb);
hr_err *hr_cu_graph_end(hr_cuda_backend *cb);
void hr_cu_graph_reset(hr_cuda_backend *cb);
/* Memory moved: every graph may hold a stale pointer. */
static inline void hr_cu_moved(hr_cuda_backend *cb) { cb->epoch++; }
/* An op may have written any activation: x is rounded and quantized afresh by the next
 * products. */
static inline void hr_cu_forget_x(hr_cuda_backend *cb) {
    cb->xh_of = NULL;
    cb->xq_of = NULL;
}

/* Launches the products matmul deferred (it gathers consecutive small-batch products of one x
 * into one launch); every other op, and every sync point, calls it first. */
void hr_cu_flush(hr_cuda_backend *cb);

/* Ops in cuda_ops.c / cuda_moe.c, installed in the vtable by cuda_backend.c. */
void hr_cu_op_matmul(hr_backend *be, float *y, const float *x, const hr_tensor *w,
                     const hr_tensor *bias, int T);
void hr_cu_op_embed(hr_backend *be, float *y, const hr_tensor *table, float scale);
void hr_cu_op_rmsnorm(hr_backend *be, float *y, const float *x, const hr_tensor *w, int rows,
                      int dim, float eps, int one_plus);
void hr_cu_op_rope(hr_backend *be, float *x, int n_heads, int head_dim, int rot_dim,
                   const hr_tensor *inv_freq);
void hr_cu_op_kv_write(hr_backend *be, hr_kv_store *kv, int layer, const float *k, const float *v);
void hr_cu_op_attention(hr_backend *be, float *out, const float *q, const hr_kv_store *kv,
                        const hr_attn_params *p);
void hr_cu_op_act_mul(hr_backend *be, float *y, const float *gate, const float *up, long n,
                      hr_act_fn act);
void hr_cu_op_add(hr_backend *be, float *y, const float *a, long n);
void hr_cu_op_copy(hr_backend *be, float *dst, const float *src, long n);
void hr_cu_op_scale(hr_backend *be, float *y, float s, long n);
void hr_cu_op_softcap(hr_backend *be, float *y, float cap, long n);
void hr_cu_op_copy2d(hr_backend *be, float *dst, long dst_stride, const float *src, long src_stride,
                     int rows, long cols);
void hr_cu_op_mul_gather(hr_backend *be, float *y, const int32_t *idx, const hr_tensor *table,
                         long n);
void hr_cu_op_sigmoid_mul(hr_backend *be, float *y, const float *g, long rows, int w, int g_w);
void hr_cu_op_conv1d(hr_backend *be, float *x, const hr_tensor *w, int channels, hr_kv_store *kv,
                     int state_layer);
void hr_cu_op_gated_delta(hr_backend *be, float *out, hr_kv_store *kv, const hr_delta_params *p);
void hr_cu_op_state_copy(hr_backend *be, hr_kv_store *kv, int slot, int snap, int restore);
void hr_cu_op_argmax(hr_backend *be, int32_t *ids, const float *x, int rows, int n);
void hr_cu_op_sample(hr_backend *be, hr_sample_out *out, float *x, int rows, int n);
void hr_cu_op_moe_route(hr_backend *be, int32_t *ids, float *weights, const float *logits, int T,
                        int n_experts, int k, int renorm);
void hr_cu_op_moe_experts(hr_backend *be, float *y, const float *x, const int32_t *ids,
                          const float *weights, int T, int k, const hr_moe_weights *w);

#endif
