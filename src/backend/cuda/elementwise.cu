/* The CUDA backend's small kernels: embedding, RMSNorm, rope, the paged KV write, the gated
 * activations and the elementwise helpers. Each mirrors the CPU op of the same name
 * (src/backend/cpu/cpu_backend.c) in f32 arithmetic; sums over a row are tree reductions, so
 * results agree with the CPU to rounding, not bit for bit. */
#include "backend/cuda/xq.cuh"

int hr_cu_pdl = 1;

/* grid-stride loop over n elements */
#define HR_FOR(i, n)                                                                               \
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < (n);                            \
         i += (long)gridDim.x * blockDim.x)

static __global__ void embed_k(float *y, const int32_t *tokens, const void *table, int dtype,
                               long dim, float scale) {
    HR_PDL_ENTRY();
    int t = blockIdx.x;
    long base = (long)tokens[t] * dim;
    for (long i = threadIdx.x; i < dim; i += blockDim.x) {
        float v = hr_ld(table, dtype, base + i);
        y[(long)t * dim + i] = scale != 1.0f ? v * scale : v;
    }
}

extern "C" void hr_cu_embed(cudaStream_t s, const hr_cu_meta *m, float *y, const void *table,
                            int dtype, long dim, float scale) {
    hr_launch(embed_k, m->n_tokens, 256, 0, s, y, m->tokens, table, dtype, dim, scale);
}

/* row elements per thread held in registers: the quantizing norms (1024-thread blocks) and the
 * others (norm_row_threads) */
enum { NORM_REGS = 8, NORM_ROW_REGS = 16 };

static __device__ __forceinline__ float norm_weight(const void *w, int w_dtype, int i,
                                                    int one_plus) {
    return (w ? hr_ld(w, w_dtype, i) : (one_plus ? 0.0f : 1.0f)) + (float)one_plus;
}

/* y = rmsnorm(x) of one row per block, after x += a when ADD. A row of up to NORM_REGS per
 * thread stays in registers and its weights load with it (one memory round trip before the
 * reduction, none after); longer rows loop. Each thread owns the same elements throughout, so
 * y may alias a or x. PER (32 or 256; 0: none) also writes y quantized into xq for the GGUF
 * products (xq.cuh; in-register rows only, blockDim a multiple of PER). */
template <int ADD, int PER, int R>
static __global__ void __launch_bounds__(R == NORM_REGS ? 1024 : 512, 1)
    norm_k(float *y, float *x, const float *a, const void *w, int w_dtype, int dim, float eps,
           int one_plus, hr_xq_parts xq, void *yh, int yh_dtype) {
    HR_PDL_ENTRY();
    __shared__ float wmax[32];
    float *xr = x + (long)blockIdx.x * dim, *yr = y + (long)blockIdx.x * dim;
    const float *ar = ADD ? a + (long)blockIdx.x * dim : NULL;
    float ss = 0;
    if (!PER && dim > R * (int)blockDim.x) {
        for (int i = threadIdx.x; i < dim; i += blockDim.x) {
            float v = ADD ? xr[i] + ar[i] : xr[i];
            if (ADD) xr[i] = v;
            ss += v * v;
        }
        float inv = 1.0f / sqrtf(hr_block_sum(ss) / (float)dim + eps);
        for (int i = threadIdx.x; i < dim; i += blockDim.x) {
            float o = xr[i] * inv * norm_weight(w, w_dtype, i, one_plus);
            yr[i] = o;
            if (yh) hr_st(yh, yh_dtype, (long)blockIdx.x * dim + i, o);
        }
        return;
    }
    float v[R], wv[R];
#pragma unroll
    for (int r = 0; r < R; r++) {
        int i = threadIdx.x + r * blockDim.x;
        v[r] = i < dim ? (ADD ? xr[i] + ar[i] : xr[i]) : 0.0f;
        wv[r] = i < dim ? norm_weight(w, w_dtype, i, one_plus) : 0.0f;
        ss += v[r] * v[r];
    }
    if (ADD)
#pragma unroll
        for (int r = 0; r < R; r++)
            if (threadIdx.x + r * blockDim.x < dim) xr[threadIdx.x + r * blockDim.x] = v[r];
    float inv = 1.0f / sqrtf(hr_block_sum(ss) / (float)dim + eps);
#pragma unroll
    for (int r = 0; r < R; r++) {
        int i = threadIdx.x + r * blockDim.x;
        float o = v[r] * inv * wv[r];
        if (i < dim) yr[i] = o;
        if (yh && i < dim) hr_st(yh, yh_dtype, (long)blockIdx.x * dim + i, o);
        if (PER && r * (int)blockDim.x < dim) /* uniform over the block */
            hr_xq_put<PER ? PER : 32>(xq, blockIdx.x, dim, i, o, i < dim, wmax);
    }
}

static int norm_threads(int dim) { return dim >= 1024 ? 1024 : (dim + 31) / 32 * 32; }

/* Threads per row for the norms without quantized output: the row in registers, NORM_REGS
 * elements a thread, in blocks small enough that several rows share a multiprocessor (one
 * 1024-thread block a row left half of it idle through each row's reduction). */
static int norm_row_threads(int dim) {
    int t = (dim + NORM_ROW_REGS - 1) / NORM_ROW_REGS;
    t = (t + 31) / 32 * 32;
    return t < 128 ? (dim >= 128 ? 128 : (dim + 31) / 32 * 32) : t > 512 ? 512 : t;
}

extern "C" void hr_cu_norm_round(cudaStream_t s, float *y, float *x, const float *a, const void *w,
                                 int w_dtype, int rows, int dim, float eps, int one_plus, void *yh,
                                 int yh_dtype) {
    if (rows <= 0) return;
    if (a)
        hr_launch(norm_k<1, 0, NORM_ROW_REGS>, rows, norm_row_threads(dim), 0, s, y, x, a, w,
                  w_dtype, dim, eps, one_plus, hr_xq_parts{}, yh, yh_dtype);
    else
        hr_launch(norm_k<0, 0, NORM_ROW_REGS>, rows, norm_row_threads(dim), 0, s, y, x, a, w,
                  w_dtype, dim, eps, one_plus, hr_xq_parts{}, yh, yh_dtype);
}

extern "C" void hr_cu_rmsnorm(cudaStream_t s, float *y, const float *x, const void *w, int w_dtype,
                              int rows, int dim, float eps, int one_plus) {
    hr_cu_norm_round(s, y, (float *)x, NULL, w, w_dtype, rows, dim, eps, one_plus, NULL, 0);
}

extern "C" void hr_cu_add_rmsnorm(cudaStream_t s, float *y, float *x, const float *a, const void *w,
                                  int w_dtype, int rows, int dim, float eps, int one_plus) {
    hr_cu_norm_round(s, y, x, a, w, w_dtype, rows, dim, eps, one_plus, NULL, 0);
}

extern "C" int hr_cu_norm_quant_fits(int dim, int per) {
    return dim % per == 0 && dim <= NORM_REGS * 1024 && norm_threads(dim) % per == 0;
}

extern "C" void hr_cu_norm_quant(cudaStream_t s, float *y, float *x, const float *a, const void *w,
                                 int w_dtype, int rows, int dim, float eps, int one_plus, void *xq,
                                 int per) {
    if (rows <= 0) return;
    hr_xq_parts p = hr_xq_at(xq, rows, dim);
    int th = norm_threads(dim);
    if (a && per == 256)
        hr_launch(norm_k<1, 256, NORM_REGS>, rows, th, 0, s, y, x, a, w, w_dtype, dim, eps,
                  one_plus, p, (void *)NULL, 0);
    else if (a)
        hr_launch(norm_k<1, 32, NORM_REGS>, rows, th, 0, s, y, x, a, w, w_dtype, dim, eps, one_plus,
                  p, (void *)NULL, 0);
    else if (per == 256)
        hr_launch(norm_k<0, 256, NORM_REGS>, rows, th, 0, s, y, x, a, w, w_dtype, dim, eps,
                  one_plus, p, (void *)NULL, 0);
    else
        hr_launch(norm_k<0, 32, NORM_REGS>, rows, th, 0, s, y, x, a, w, w_dtype, dim, eps, one_plus,
                  p, (void *)NULL, 0);
}

enum { ROPE_HEADS = 4 }; /* heads per block */

/* Block (t, y): heads ROPE_HEADS * y .. of token t. */
static __global__ void rope_k(float *x, const int32_t *pos, int n_heads, int head_dim, int half,
                              const float *inv_freq) {
    HR_PDL_ENTRY();
    int t = blockIdx.x, h0 = blockIdx.y * ROPE_HEADS;
    int nh = n_heads - h0 < ROPE_HEADS ? n_heads - h0 : ROPE_HEADS;
    float *xt = x + ((long)t * n_heads + h0) * head_dim;
    for (int e = threadIdx.x; e < nh * half; e += blockDim.x) {
        int h = e / half, i = e % half;
        float ang = (float)pos[t] * inv_freq[i];
        float c = cosf(ang), sn = sinf(ang);
        float *xh = xt + (long)h * head_dim;
        float x1 = xh[i], x2 = xh[i + half];
        xh[i] = x1 * c - x2 * sn;
        xh[i + half] = x2 * c + x1 * sn;
    }
}

extern "C" void hr_cu_rope(cudaStream_t s, const hr_cu_meta *m, float *x, int n_heads, int head_dim,
                           int rot_dim, const float *inv_freq) {
    if (rot_dim < 2 || m->n_tokens <= 0) return;
    dim3 grid((unsigned)m->n_tokens, (unsigned)((n_heads + ROPE_HEADS - 1) / ROPE_HEADS));
    hr_launch(rope_k, grid, 128, 0, s, x, m->pos, n_heads, head_dim, rot_dim / 2, inv_freq);
}

/* Rope of q (ROPE_HEADS heads per block along y, the first yq blocks) and of k, whose blocks
 * also store their heads' K and V rows in the paged cache: the rope of both and the KV write
 * of one layer in one launch. The rotated k is also written back to k. */
static __global__ void rope_kv_k(hr_cu_rope_kv r, hr_cu_kv_layer kv, const int32_t *pos,
                                 const int32_t *row, const int32_t *table, int max_blocks) {
    HR_PDL_ENTRY();
    int t = blockIdx.x, yq = (r.n_q + ROPE_HEADS - 1) / ROPE_HEADS, isk = (int)blockIdx.y >= yq;
    int h0 = (isk ? blockIdx.y - yq : blockIdx.y) * ROPE_HEADS, nh = isk ? r.n_k : r.n_q,
        hd = r.head_dim;
    int n = nh - h0 < ROPE_HEADS ? nh - h0 : ROPE_HEADS, half = r.rot_dim / 2, p = pos[t];
    float *x = (isk ? r.k : r.q) + ((long)t * nh + h0) * hd;
    for (int e = threadIdx.x; e < n * half; e += blockDim.x) {
        int h = e / half, i = e % half;
        float ang = (float)p * r.inv_freq[i];
        float c = cosf(ang), sn = sinf(ang);
        float *xh = x + (long)h * hd;
        float x1 = xh[i], x2 = xh[i + half];
        xh[i] = x1 * c - x2 * sn;
        xh[i + half] = x2 * c + x1 * sn;
    }
    if (!isk) return;
    __syncthreads(); /* the block's rotated k rows */
    int block = table[(long)row[t] * max_blocks + p / kv.block_size];
    for (int e = threadIdx.x; e < n * hd; e += blockDim.x) {
        int h = h0 + e / hd, d = e % hd;
        long src = ((long)t * nh + h) * hd + d;
        long dst = (((long)block * kv.n_kv_heads + h) * kv.block_size + p % kv.block_size) * hd + d;
        hr_st(kv.k, kv.dtype, dst, r.k[src]);
        hr_st(kv.v, kv.dtype, dst, r.v[src]);
    }
}

extern "C" void hr_cu_rope_kv_write(cudaStream_t s, const hr_cu_meta *m, const hr_cu_rope_kv *r,
                                    const hr_cu_kv_layer *kv) {
    if (m->n_tokens <= 0) return;
    int y = (r->n_q + ROPE_HEADS - 1) / ROPE_HEADS + (r->n_k + ROPE_HEADS - 1) / ROPE_HEADS;
    dim3 grid((unsigned)m->n_tokens, (unsigned)y);
    hr_launch(rope_kv_k, grid, 128, 0, s, *r, *kv, m->pos, m->row, m->block_table, m->max_blocks);
}

/* Block (t, h): kv head h of token t. */
static __global__ void kv_write_k(hr_cu_kv_layer kv, const int32_t *pos, const int32_t *row,
                                  const int32_t *table, int max_blocks, const float *k,
                                  const float *v) {
    HR_PDL_ENTRY();
    int t = blockIdx.x, h = blockIdx.y, p = pos[t];
    int block = table[(long)row[t] * max_blocks + p / kv.block_size];
    long src = ((long)t * kv.n_kv_heads + h) * kv.head_dim;
    long dst =
        (((long)block * kv.n_kv_heads + h) * kv.block_size + p % kv.block_size) * kv.head_dim;
    for (int d = threadIdx.x; d < kv.head_dim; d += blockDim.x) {
        hr_st(kv.k, kv.dtype, dst + d, k[src + d]);
        hr_st(kv.v, kv.dtype, dst + d, v[src + d]);
    }
}

extern "C" void hr_cu_kv_write(cudaStream_t s, const hr_cu_meta *m, const hr_cu_kv_layer *kv,
                               const float *k, const float *v) {
    if (m->n_tokens <= 0) return;
    int threads = kv->head_dim >= 256 ? 256 : (kv->head_dim + 31) / 32 * 32;
    dim3 grid((unsigned)m->n_tokens, (unsigned)kv->n_kv_heads);
    hr_launch(kv_write_k, grid, threads, 0, s, *kv, m->pos, m->row, m->block_table, m->max_blocks,
              k, v);
}

/* yh non-NULL: y rounded to 16-bit type yh_dtype there as well. */
static __global__ void act_mul_k(float *y, const float *g, const float *u, long n, int act,
                                 void *yh, int yh_dtype) {
    HR_PDL_ENTRY();
    HR_FOR(i, n) {
        float v = hr_act_fn(g[i], act) * u[i];
        y[i] = v;
        if (yh) hr_st(yh, yh_dtype, i, v);
    }
}

/* Four 16-bit values at yh + 4 i (8 bytes). */
static __device__ __forceinline__ void st4_16(void *yh, int dtype, long i, float4 v) {
    uint2 b;
    if (dtype == HR_CU_BF16) {
        __nv_bfloat162 lo = __floats2bfloat162_rn(v.x, v.y), hi = __floats2bfloat162_rn(v.z, v.w);
        b = make_uint2(*(uint32_t *)&lo, *(uint32_t *)&hi);
    } else {
        __half2 lo = __floats2half2_rn(v.x, v.y), hi = __floats2half2_rn(v.z, v.w);
        b = make_uint2(*(uint32_t *)&lo, *(uint32_t *)&hi);
    }
    ((uint2 *)yh)[i] = b;
}

/* act_mul_k four elements at a time (16-byte loads and stores: more bytes in flight per
 * thread), for n a multiple of 4 and 16-byte aligned operands. */
static __global__ void act_mul4_k(float4 *y, const float4 *g, const float4 *u, long n4, int act,
                                  void *yh, int yh_dtype) {
    HR_PDL_ENTRY();
    HR_FOR(i, n4) {
        float4 a = g[i], b = u[i], v;
        v.x = hr_act_fn(a.x, act) * b.x, v.y = hr_act_fn(a.y, act) * b.y;
        v.z = hr_act_fn(a.z, act) * b.z, v.w = hr_act_fn(a.w, act) * b.w;
        y[i] = v;
        if (yh) st4_16(yh, yh_dtype, i, v);
    }
}

extern "C" void hr_cu_act_mul_round(cudaStream_t s, float *y, const float *gate, const float *up,
                                    long n, int act, void *yh, int yh_dtype) {
    if (n <= 0) return;
    uintptr_t a = (uintptr_t)y | (uintptr_t)gate | (uintptr_t)up;
    /* a few rows (decode) keep one element a thread: more blocks, spread over the device */
    if (n >= (1L << 17) && n % 4 == 0 && a % 16 == 0 && (uintptr_t)yh % 8 == 0 &&
        (!yh || yh_dtype != HR_CU_F32))
        hr_launch(act_mul4_k, hr_blocks(n / 4, 256), 256, 0, s, (float4 *)y, (const float4 *)gate,
                  (const float4 *)up, n / 4, act, yh, yh_dtype);
    else
        hr_launch(act_mul_k, hr_blocks(n, 256), 256, 0, s, y, gate, up, n, act, yh, yh_dtype);
}

extern "C" void hr_cu_act_mul(cudaStream_t s, float *y, const float *gate, const float *up, long n,
                              int act) {
    hr_cu_act_mul_round(s, y, gate, up, n, act, NULL, 0);
}

/* act_mul_k of T rows of K, one thread per element and a block per 256 of a row, also writing
 * y quantized into xq (hr_xq_put). */
template <int PER>
static __global__ void act_mul_quant_k(float *y, const float *g, const float *u, long K, int act,
                                       hr_xq_parts xq) {
    HR_PDL_ENTRY();
    __shared__ float wmax[32];
    long e = (long)blockIdx.x * 256 + threadIdx.x, t = blockIdx.y, i = t * K + e;
    bool in = e < K;
    float v = in ? hr_act_fn(g[i], act) * u[i] : 0.0f;
    if (in) y[i] = v;
    hr_xq_put<PER>(xq, t, K, e, v, in, wmax);
}

extern "C" void hr_cu_act_mul_quant(cudaStream_t s, float *y, const float *gate, const float *up,
                                    int T, long K, int act, void *xq, int per) {
    if (T <= 0) return;
    hr_xq_parts p = hr_xq_at(xq, T, K);
    dim3 grid((unsigned)((K + 255) / 256), (unsigned)T);
    if (per == 256)
        hr_launch(act_mul_quant_k<256>, grid, 256, 0, s, y, gate, up, K, act, p);
    else
        hr_launch(act_mul_quant_k<32>, grid, 256, 0, s, y, gate, up, K, act, p);
}

static __global__ void add_k(float *y, const float *a, long n) {
    HR_PDL_ENTRY();
    HR_FOR(i, n) y[i] += a[i];
}

extern "C" void hr_cu_add(cudaStream_t s, float *y, const float *a, long n) {
    if (n > 0) hr_launch(add_k, hr_blocks(n, 256), 256, 0, s, y, a, n);
}

static __global__ void add_bias_k(float *y, const void *b, int dtype, long n, long cols) {
    HR_PDL_ENTRY();
    HR_FOR(i, n) y[i] += hr_ld(b, dtype, i % cols);
}

extern "C" void hr_cu_add_bias(cudaStream_t s, float *y, const void *bias, int dtype, int rows,
                               long cols) {
    long n = (long)rows * cols;
    if (n > 0) hr_launch(add_bias_k, hr_blocks(n, 256), 256, 0, s, y, bias, dtype, n, cols);
}

static __global__ void scale_k(float *y, float f, long n) {
    HR_PDL_ENTRY();
    HR_FOR(i, n) y[i] *= f;
}

extern "C" void hr_cu_scale(cudaStream_t s, float *y, float f, long n) {
    if (n > 0) hr_launch(scale_k, hr_blocks(n, 256), 256, 0, s, y, f, n);
}

static __global__ void softcap_k(float *y, float cap, long n) {
    HR_PDL_ENTRY();
    HR_FOR(i, n) y[i] = cap * tanhf(y[i] / cap);
}

extern "C" void hr_cu_softcap(cudaStream_t s, float *y, float cap, long n) {
    if (n > 0) hr_launch(softcap_k, hr_blocks(n, 256), 256, 0, s, y, cap, n);
}

static __global__ void copy2d_k(float *dst, long ds, const float *src, long ss, long n, long cols) {
    HR_PDL_ENTRY();
    HR_FOR(i, n) {
        long r = i / cols, c = i % cols;
        dst[r * ds + c] = src[r * ss + c];
    }
}

extern "C" void hr_cu_copy2d(cudaStream_t s, float *dst, long dst_stride, const float *src,
                             long src_stride, int rows, long cols) {
    long n = (long)rows * cols;
    if (n > 0)
        hr_launch(copy2d_k, hr_blocks(n, 256), 256, 0, s, dst, dst_stride, src, src_stride, n,
                  cols);
}

static __global__ void mul_gather_k(float *y, const int32_t *idx, const void *t, int dtype,
                                    long n) {
    HR_PDL_ENTRY();
    HR_FOR(i, n) y[i] *= hr_ld(t, dtype, idx[i]);
}

extern "C" void hr_cu_mul_gather(cudaStream_t s, float *y, const int32_t *idx, const void *table,
                                 int dtype, long n) {
    if (n > 0) hr_launch(mul_gather_k, hr_blocks(n, 256), 256, 0, s, y, idx, table, dtype, n);
}

static __global__ void sigmoid_mul_k(float *y, const float *g, long n, int w, int g_w) {
    HR_PDL_ENTRY();
    HR_FOR(i, n) {
        long r = i / w, c = i % w;
        float gv = g[r * g_w + (g_w == 1 ? 0 : c)];
        y[i] *= 1.0f / (1.0f + expf(-gv));
    }
}

extern "C" void hr_cu_sigmoid_mul(cudaStream_t s, float *y, const float *g, long rows, int w,
                                  int g_w) {
    long n = rows * w;
    if (n > 0) hr_launch(sigmoid_mul_k, hr_blocks(n, 256), 256, 0, s, y, g, n, w, g_w);
}

static __global__ void round_k(void *dst, void *lo, int dtype, const float *src, long n) {
    HR_PDL_ENTRY();
    HR_FOR(i, n) {
        hr_st(dst, dtype, i, src[i]);
        if (lo) hr_st(lo, dtype, i, src[i] - hr_ld(dst, dtype, i));
    }
}

extern "C" void hr_cu_round(cudaStream_t s, void *dst, void *lo, int dtype, const float *src,
                            long n) {
    if (n > 0) hr_launch(round_k, hr_blocks(n, 256), 256, 0, s, dst, lo, dtype, src, n);
}

enum { ARGMAX_CHUNK = 8192, ARGMAX_THREADS = 256 };

/* The block's (value, index) with the larger value, the lower index on ties, index n = none. */
static __device__ void argmax_block(float best, int bi, int n, float *out_v, int *out_i) {
    __shared__ float sv[ARGMAX_THREADS];
    __shared__ int si[ARGMAX_THREADS];
    sv[threadIdx.x] = best;
    si[threadIdx.x] = bi;
    __syncthreads();
    for (int o = blockDim.x / 2; o > 0; o >>= 1) {
        if (threadIdx.x < o) {
            float v = sv[threadIdx.x + o];
            int i = si[threadIdx.x + o];
            int mine = si[threadIdx.x];
            if (i < n && (mine == n || v > sv[threadIdx.x] || (v == sv[threadIdx.x] && i < mine)))
                sv[threadIdx.x] = v, si[threadIdx.x] = i;
        }
        __syncthreads();
    }
    *out_v = sv[0];
    *out_i = si[0];
}

/* Block (c, r): the first maximum of chunk c of row r into part[r * gridDim.x + c]. */
static __global__ void argmax_part_k(float2 *part, const float *x, int n) {
    HR_PDL_ENTRY();
    const float *xr = x + (long)blockIdx.y * n;
    int i0 = blockIdx.x * ARGMAX_CHUNK, i1 = i0 + ARGMAX_CHUNK < n ? i0 + ARGMAX_CHUNK : n;
    float best = -INFINITY;
    int bi = n; /* none yet */
    for (int i = i0 + threadIdx.x; i < i1; i += blockDim.x)
        if (bi == n || xr[i] > best) best = xr[i], bi = i;
    float v;
    int i;
    argmax_block(best, bi, n, &v, &i);
    if (threadIdx.x == 0)
        part[(long)blockIdx.y * gridDim.x + blockIdx.x] = make_float2(v, __int_as_float(i));
}

/* Block r: the chunks' maxima of row r, the lowest index on ties (the host argmax's answer). */
static __global__ void argmax_k(int32_t *ids, const float2 *part, int chunks, int n) {
    HR_PDL_ENTRY();
    float best = -INFINITY;
    int bi = n;
    for (int c = threadIdx.x; c < chunks; c += blockDim.x) {
        float2 p = part[(long)blockIdx.x * chunks + c];
        int i = __float_as_int(p.y);
        if (i < n && (bi == n || p.x > best)) best = p.x, bi = i;
    }
    float v;
    int i;
    argmax_block(best, bi, n, &v, &i);
    if (threadIdx.x == 0) ids[blockIdx.x] = i < n ? i : 0;
}

extern "C" long hr_cu_argmax_scratch(int rows, int n) {
    return 2L * rows * ((n + ARGMAX_CHUNK - 1) / ARGMAX_CHUNK);
}

extern "C" void hr_cu_argmax(cudaStream_t s, int32_t *ids, const float *x, int rows, int n,
                             float *scratch) {
    if (rows <= 0 || n <= 0) return;
    int chunks = (n + ARGMAX_CHUNK - 1) / ARGMAX_CHUNK;
    float2 *part = (float2 *)scratch;
    hr_launch(argmax_part_k, dim3((unsigned)chunks, (unsigned)rows), ARGMAX_THREADS, 0, s, part, x,
              n);
    hr_launch(argmax_k, rows, ARGMAX_THREADS, 0, s, ids, (const float2 *)part, chunks, n);
}

/* hr_cu_split_cols: four columns a thread where every matrix's rows are a multiple of 4 (V = 4),
 * else one. */
template <int V> static __global__ void split_cols_k(hr_cu_gemv_set g, const float *cat, long n) {
    HR_PDL_ENTRY();
    long cols = g.start[g.n];
    HR_FOR(i, n) {
        long t = i * V / cols, c = i * V % cols, in;
        int m = hr_set_row(g, c, &in);
        float *y = g.y[m] + t * (g.start[m + 1] - g.start[m]) + in;
        if (V == 4)
            *(float4 *)y = ((const float4 *)cat)[i];
        else
            *y = cat[i];
    }
}

extern "C" void hr_cu_split_cols(cudaStream_t s, const hr_cu_gemv_set *g, const float *cat, int T) {
    long n = (long)T * g->start[g->n];
    int four = 1;
    for (int i = 0; i < g->n; i++)
        four &= (g->start[i + 1] - g->start[i]) % 4 == 0 && (uintptr_t)g->y[i] % 16 == 0;
    if (n <= 0) return;
    if (four)
        hr_launch(split_cols_k<4>, hr_blocks(n / 4, 256), 256, 0, s, *g, cat, n / 4);
    else
        hr_launch(split_cols_k<1>, hr_blocks(n, 256), 256, 0, s, *g, cat, n);
}
