/* The op set every model is written against. A backend owns device memory (weights,
 * activations, the paged KV store) and executes ops in issue order, like a stream: ops
 * return nothing and may run asynchronously; hr_be_read waits for them and copies a
 * result to the host. The CPU backend runs each op at once on its thread pool; a CUDA
 * backend would enqueue kernels (and could capture a step in a graph).
 *
 * Shapes: activations are f32 row-major [tokens, features]. A weight w is [N, K] in its
 * own dtype and matmul computes y = x w^T (+ bias). Every op of a step sees the step's
 * token metadata (token ids, positions, rows, the block table) given to step_begin. */
#ifndef HR_BACKEND_BACKEND_H
#define HR_BACKEND_BACKEND_H

#include <stdint.h>

#include "backend/sample.h"
#include "base/err.h"
#include "tensor/tensor.h"

typedef struct hr_backend hr_backend;

/* Paged KV storage for every layer: K and V are [layer][block][kv_head][slot][head_dim],
 * where head_dim may differ per layer (each layer's region is packed at its own width). A
 * head vector is stored in dtype: F32, BF16, F16, Q8_0 or Q4_0 (GGML's blocks of 32: an f16
 * scale and 32 int8, or 16 bytes of 4-bit pairs), hr_kv_row_bytes each; which of them a backend
 * stores: hr_backend_caps. */
typedef struct {
    hr_dtype dtype;
    int n_layers, n_blocks, block_size, n_kv_heads, head_dim;
    void *k, *v;               /* device memory */
    const int *layer_head_dim; /* (n_layers) per-layer head dims, or NULL: all head_dim */
    size_t *layer_off;         /* (n_layers) byte offset of each layer's region (kv_create) */
    /* Recurrent state of the linear-attention layers of hybrid models (docs/hybrid.md): per
     * state layer and slot, the conv window (conv_floats) and the delta-rule matrix
     * (delta_floats). A row names its slot; n_state_slots is 0 for dense models. */
    int n_state_layers, n_state_slots;
    long conv_floats, delta_floats;
    void *conv, *delta; /* [state_layer][slot][...], device memory */
    int32_t *state_pos; /* host [n_state_slots]: next position each slot's state expects, or NULL */
    /* Snapshots of a slot's whole state (every state layer's conv window and delta matrix),
     * kept for the prefix cache (docs/hybrid.md): [state_layer][snapshot][...] like the slots. */
    int n_snapshots;
    void *snap_conv, *snap_delta; /* device memory */
    size_t bytes; /* what kv_create allocated for all of the above (hr_kv_store_bytes) */
} hr_kv_store;

/* The sizes of a KV store, in one place (kv_store.c): the pool sizing, `hearth fit` and
 * generation count with these, and every backend's kv_create allocates exactly them. */
/* Bytes of one head vector of hd elements in dtype (Q8_0: hd / 32 blocks of 34 bytes). */
size_t hr_kv_row_bytes(hr_dtype dtype, int hd);
/* Bytes of K and V of one position over all KV layers. */
size_t hr_kv_token_bytes(const hr_kv_store *kv);
/* Bytes of one slot's (or snapshot's) recurrent state over all state layers (f32). */
size_t hr_kv_state_bytes(const hr_kv_store *kv);
/* Everything kv_create allocates: n_blocks * block_size positions, n_state_slots slots and
 * n_snapshots snapshots. */
size_t hr_kv_store_bytes(const hr_kv_store *kv);
/* NULL when kv's dtype can store its head dims (Q8_0: multiples of 32), else why not. */
hr_err *hr_kv_dtype_check(const hr_kv_store *kv);

/* One step's token layout, as flat arrays (docs/backend-v2.md). Token i is tokens[i], belongs
 * to row[i] and sits at position pos[i]; row r's tokens are q_start[r] .. q_start[r + 1] - 1
 * (consecutive positions: a prefill chunk, one decode token, or k + 1 tokens to verify), and
 * it reads and writes KV through block_table[r * max_blocks + p / block_size] (-1: no block).
 * The arrays are host memory given to step_begin, which makes them the step's device
 * metadata: a device backend uploads them in one transfer; the CPU backend uses them in
 * place, so they must stay unchanged until the step's last op is issued. */
/* How a step's logits leave the device: read back whole, as each row's argmax, or through the
 * sample op. A device backend keys its captured steps by it (the ops differ). */
typedef enum { HR_HEAD_LOGITS, HR_HEAD_ARGMAX, HR_HEAD_SAMPLE } hr_step_head;

typedef struct {
    int n_tokens, n_rows;
    const int32_t *tokens;      /* [n_tokens] token ids (embed reads them) */
    const int32_t *pos;         /* [n_tokens] */
    const int32_t *row;         /* [n_tokens] */
    const int32_t *q_start;     /* [n_rows + 1] */
    int max_blocks;             /* entries per row of block_table */
    const int32_t *block_table; /* [n_rows, max_blocks] */
    const int32_t *state_slots; /* [n_rows] recurrent-state slot of each row */
    hr_step_head head;
    int n_logit_rows;             /* rows of logits lm_head makes (rows the head op sees) */
    const hr_sample_step *sample; /* HR_HEAD_SAMPLE: the sample op's parameters, else NULL */
} hr_step_meta;

/* Attention parameters of one layer. */
typedef struct {
    int layer;
    int n_heads, n_kv_heads, head_dim;
    float scale;   /* multiplies q.k */
    int window;    /* sliding window in positions (0 = full causal) */
    float softcap; /* tanh soft-capping of scores (0 = off) */
} hr_attn_params;

typedef enum { HR_ACT_FN_SILU, HR_ACT_FN_GELU_TANH } hr_act_fn;

/* The routed experts of one MoE layer: expert e is down_e(act(gate_e x) * up_e x). */
typedef struct {
    int n_experts, hidden, inter;
    const hr_tensor *const *gate, *const *up; /* [n_experts] of (inter, hidden) */
    const hr_tensor *const *down;             /* [n_experts] of (hidden, inter) */
    hr_act_fn act;
} hr_moe_weights;

/* One gated DeltaNet layer's delta rule. q, k, v are rows of the conv output with stride ld
 * (q: n_k_heads*k_dim, k likewise, v: n_v_heads*v_dim floats); a and b are [T, n_v_heads]. */
typedef struct {
    int state_layer;
    int n_k_heads, n_v_heads, k_dim, v_dim;
    const float *q, *k, *v;
    long ld;
    const float *a, *b;
    const hr_tensor *a_log, *dt_bias; /* (n_v_heads) */
} hr_delta_params;

typedef struct {
    const char *name;
    void (*destroy)(hr_backend *be);
    /* Device buffers for activations and constants. */
    hr_err *(*alloc)(hr_backend *be, size_t bytes, void **out);
    void (*free)(hr_backend *be, void *p);
    /* Makes a host tensor usable by ops, in its own dtype. The CPU backend either copies
     * it into hugepage-backed memory (a Q4_0 / Q8_0 / Q4_K matrix repacked into interleaved rows
     * of the same bytes, dev->row_tile set) or (weights_in_place) returns a view of the
     * host memory, which must then outlive its use; device backends copy. */
    hr_err *(*upload)(hr_backend *be, const hr_tensor *host, hr_tensor *dev);
    /* Frees what upload made for dev. */
    void (*release)(hr_backend *be, hr_tensor *dev);
    hr_err *(*kv_create)(hr_backend *be, hr_kv_store *kv); /* fills kv->k, kv->v */
    void (*kv_destroy)(hr_backend *be, hr_kv_store *kv);
    /* Waits for queued ops, then copies bytes of src (device) to dst (host). */
    hr_err *(*read)(hr_backend *be, const void *src, void *dst, size_t bytes);
    /* Copies bytes of src (host) into dst (device memory from alloc), in issue order: ops
     * issued before see the old contents, ops after the new. src may be reused as soon as
     * write returns (a device backend stages it). */
    hr_err *(*write)(hr_backend *be, void *dst, const void *src, size_t bytes);
    /* Waits until every issued op has finished (the CPU's ops finish as they are issued). */
    hr_err *(*sync)(hr_backend *be);
    /* Bytes of the memory this backend allocates from: what can still be had and the total
     * (host RAM for the CPU: MemAvailable and MemTotal; device memory for a GPU). The engine
     * sizes its default KV pool from free_bytes after the weights are uploaded. */
    hr_err *(*mem_info)(hr_backend *be, size_t *free_bytes, size_t *total_bytes);
    hr_err *(*step_begin)(hr_backend *be, const hr_step_meta *meta);

    /* y[T,N] = x[T,K] w[N,K]^T (+ bias[N]) */
    void (*matmul)(hr_backend *be, float *y, const float *x, const hr_tensor *w,
                   const hr_tensor *bias, int T);
    /* y[n_tokens, D] = table[tokens[t]] * scale over the step's tokens */
    void (*embed)(hr_backend *be, float *y, const hr_tensor *table, float scale);
    /* y[r] = x[r] / rms(x[r]) * (w or 1 + w), rows of length dim; y may alias x; w NULL:
     * no scale */
    void (*rmsnorm)(hr_backend *be, float *y, const float *x, const hr_tensor *w, int rows, int dim,
                    float eps, int one_plus);
    /* Rotates the first rot_dim dims of each head (rotate-half pairing) of x[T, n_heads,
     * head_dim] in place by angle pos * inv_freq[i]; inv_freq has rot_dim/2 entries. */
    void (*rope)(hr_backend *be, float *x, int n_heads, int head_dim, int rot_dim,
                 const hr_tensor *inv_freq);
    /* Stores k, v ([T, n_kv_heads*head_dim]) of layer at each token's position. */
    void (*kv_write)(hr_backend *be, hr_kv_store *kv, int layer, const float *k, const float *v);
    /* out[T, n_heads*head_dim] = causal attention of q over the layer's paged KV. */
    void (*attention)(hr_backend *be, float *out, const float *q, const hr_kv_store *kv,
                      const hr_attn_params *p);
    /* y[i] = act(gate[i]) * up[i], n elements */
    void (*act_mul)(hr_backend *be, float *y, const float *gate, const float *up, long n,
                    hr_act_fn act);
    /* y[i] += a[i] */
    void (*add)(hr_backend *be, float *y, const float *a, long n);
    /* dst[0..n) = src[0..n), both device memory */
    void (*copy)(hr_backend *be, float *dst, const float *src, long n);
    /* y[i] *= s */
    void (*scale)(hr_backend *be, float *y, float s, long n);
    /* y[i] = cap * tanh(y[i] / cap) (logit soft-capping) */
    void (*softcap)(hr_backend *be, float *y, float cap, long n);
    /* dst[r * dst_stride + c] = src[r * src_stride + c] for r < rows, c < cols */
    void (*copy2d)(hr_backend *be, float *dst, long dst_stride, const float *src, long src_stride,
                   int rows, long cols);

    /* ids[r] = the first index of the largest of x[r, 0..n) for r < rows (greedy decoding
     * without reading the logits back; ids is device memory) */
    void (*argmax)(hr_backend *be, int32_t *ids, const float *x, int rows, int n);
    /* Optional (NULL: the engine samples on the host). out[r] = row r's token and logprobs
     * from logits x[r, 0..n) with the step's sample parameters (meta->sample, rows rows): its
     * edits applied to x in place, then its argmax or its draw, as hr_sample_ref decides it
     * (backend/sample.h; a device may differ from it only where its own rounding moves a
     * cumulative boundary past u, or reorders near-equal probabilities), a masked row's
     * disallowed ids never chosen, or id -1 where the host must decide from x (a masked row's
     * mask may have been written into it). out is device memory. */
    void (*sample)(hr_backend *be, hr_sample_out *out, float *x, int rows, int n);

    /* --- MoE (docs/hybrid.md) --- */
    /* ids/weights[T, k] = the top-k experts of softmax(logits[T, n_experts]) and their
     * probabilities, renormalised to sum 1 when renorm; ties go to the lower index. */
    void (*moe_route)(hr_backend *be, int32_t *ids, float *weights, const float *logits, int T,
                      int n_experts, int k, int renorm);
    /* y[T, hidden] = sum_j weights[t,j] * expert_{ids[t,j]}(x[t]); each expert runs once on
     * the rows routed to it. */
    void (*moe_experts)(hr_backend *be, float *y, const float *x, const int32_t *ids,
                        const float *weights, int T, int k, const hr_moe_weights *w);
    /* y[i] *= table[idx[i]] for i < n (e.g. gemma4's per-expert scale on routing weights) */
    void (*mul_gather)(hr_backend *be, float *y, const int32_t *idx, const hr_tensor *table,
                       long n);

    /* --- hybrid layers --- */
    /* y[r, i] *= sigmoid(g[r * g_w + (g_w == 1 ? 0 : i)]) for rows of width w. */
    void (*sigmoid_mul)(hr_backend *be, float *y, const float *g, long rows, int w, int g_w);
    /* x[T, channels] <- silu(causal depthwise conv of each row's tokens with w (channels, 1,
     * K)), continuing from and updating the row's conv state; a token at position 0 starts
     * from a zero state. */
    void (*conv1d)(hr_backend *be, float *x, const hr_tensor *w, int channels, hr_kv_store *kv,
                   int state_layer);
    /* out[T, n_v_heads*v_dim] = gated delta rule (l2-normalised q, k; decay -exp(a_log) *
     * softplus(a + dt_bias); beta = sigmoid(b)), continuing from and updating each row's
     * state (zero at position 0). */
    void (*gated_delta)(hr_backend *be, float *out, hr_kv_store *kv, const hr_delta_params *p);
    /* Copies slot's recurrent state (all state layers) into snapshot snap, or back when
     * restore is set. */
    void (*state_copy)(hr_backend *be, hr_kv_store *kv, int slot, int snap, int restore);
} hr_backend_vt;

struct hr_backend {
    const hr_backend_vt *vt;
};

typedef struct {
    int n_threads;        /* <= 0: one per online CPU */
    int weights_in_place; /* use mmapped weights as they are instead of copying them */
    int compute_bf16;     /* bf16 weights multiply x rounded to bf16 (faster, not exact) */
} hr_cpu_options;

hr_err *hr_backend_cpu_create(const hr_cpu_options *opt, hr_backend **out);

/* What a kind of backend can do, known before one is created, so the numerics (compute mode
 * and KV dtype, engine/numerics.c) are chosen before the weights are uploaded. kv_dtypes is a
 * bitmask of (1u << hr_dtype) that its kv_create stores; kv_exact is the KV dtype of --exact
 * (the CPU: F32; a backend without f32 KV names its widest) and kv_fast the one of the fast
 * default; quantized_fast: the fast default applies to GGUF-quantized weights too (the GPU,
 * where an f32 KV would leave the tensor-core attention). A new backend adds its row to
 * hr_backend_caps_of (backend.c). */
typedef struct {
    unsigned kv_dtypes;
    hr_dtype kv_exact, kv_fast;
    int quantized_fast;
} hr_backend_caps;

/* The device to create for weights whose main dtype is `weights`: device itself, except that
 * auto (or NULL) with quantized weights the CUDA backend does not read (GGUF Q2_K, Q3_K, IQ4;
 * U32, MLX's packed words) is the CPU, which computes every quantized type. An explicit
 * "cuda" stays, so its upload says why it cannot. */
const char *hr_backend_device_for(const char *device, hr_dtype weights);

/* The caps of the backend hr_backend_create would make for device (auto resolved alike). */
hr_err *hr_backend_caps_of(const char *device, hr_backend_caps *caps);

/* What hr_backend_create makes. device: "cpu", "cuda", or "auto"/NULL (CUDA when this build
 * has it and a GPU is present, else the CPU). cpu applies to the CPU backend. */
typedef struct {
    const char *device;
    hr_cpu_options cpu;
} hr_backend_options;

/* The backend factory (backend.c); o may be NULL (auto, default CPU options). "cuda" in a
 * build without the CUDA backend and unknown names are errors that say so. */
hr_err *hr_backend_create(const hr_backend_options *o, hr_backend **out);
/* NULL when device is a name hr_backend_create knows (NULL, "auto", "cpu", "cuda"). */
hr_err *hr_backend_device_check(const char *device);
/* 1 when this build has the CUDA backend. */
int hr_backend_cuda_built(void);
#ifdef HEARTH_CUDA
int hr_backend_cuda_devices(void); /* GPUs the CUDA runtime sees (0 without a driver) */
hr_err *hr_backend_cuda_create(const hr_backend_options *o, hr_backend **out);
#endif

static inline void hr_backend_destroy(hr_backend *be) {
    if (be) be->vt->destroy(be);
}

#endif
