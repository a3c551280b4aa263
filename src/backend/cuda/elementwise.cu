/* The CUDA backend's small kernels: embedding, RMSNorm, rope, the paged KV write, the gated
 * activations and the elementwise helpers. Each mirrors the CPU op of the same name
 * (src/backend/cpu/cpu_backend.c) in f32 arithmetic; sums over a row are tree reductions, so
 * results agree with the CPU to rounding, not bit for bit. */
#include "backend/cuda/common.cuh"

/* grid-stride loop over n elements */
#define HR_FOR(i, n) for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < (n); i += (long)gridDim.x * blockDim.x)

static __global__ void embed_k(float *y, const int32_t *tokens, const void *table, int dtype,
                               long dim, float scale) {
    int t = blockIdx.x;
    long base = (long)tokens[t] * dim;
    for (long i = threadIdx.x; i < dim; i += blockDim.x) {
        float v = hr_ld(table, dtype, base + i);
        y[(long)t * dim + i] = scale != 1.0f ? v * scale : v;
    }
}

extern "C" void hr_cu_embed(cudaStream_t s, const hr_cu_meta *m, float *y, const void *table,
                            int dtype, long dim, float scale) {
    embed_k<<<m->n_tokens, 256, 0, s>>>(y, m->tokens, table, dtype, dim, scale);
}

static __global__ void rmsnorm_k(float *y, const float *x, const void *w, int w_dtype, int dim,
                                 float eps, int one_plus) {
    const float *xr = x + (long)blockIdx.x * dim;
    float *yr = y + (long)blockIdx.x * dim;
    float ss = 0;
    for (int i = threadIdx.x; i < dim; i += blockDim.x) ss += xr[i] * xr[i];
    ss = hr_block_sum(ss);
    float inv = 1.0f / sqrtf(ss / (float)dim + eps);
    for (int i = threadIdx.x; i < dim; i += blockDim.x) {
        float wi = w ? hr_ld(w, w_dtype, i) : (one_plus ? 0.0f : 1.0f);
        yr[i] = xr[i] * inv * (wi + (float)one_plus);
    }
}

extern "C" void hr_cu_rmsnorm(cudaStream_t s, float *y, const float *x, const void *w,
                              int w_dtype, int rows, int dim, float eps, int one_plus) {
    if (rows <= 0) return;
    int threads = dim >= 1024 ? 1024 : (dim + 31) / 32 * 32;
    rmsnorm_k<<<rows, threads, 0, s>>>(y, x, w, w_dtype, dim, eps, one_plus);
}

static __global__ void rope_k(float *x, const int32_t *pos, int n_heads, int head_dim, int half,
                              const float *inv_freq) {
    int t = blockIdx.x;
    float *xt = x + (long)t * n_heads * head_dim;
    for (int e = threadIdx.x; e < n_heads * half; e += blockDim.x) {
        int h = e / half, i = e % half;
        float ang = (float)pos[t] * inv_freq[i];
        float c = cosf(ang), sn = sinf(ang);
        float *xh = xt + (long)h * head_dim;
        float x1 = xh[i], x2 = xh[i + half];
        xh[i] = x1 * c - x2 * sn;
        xh[i + half] = x2 * c + x1 * sn;
    }
}

extern "C" void hr_cu_rope(cudaStream_t s, const hr_cu_meta *m, float *x, int n_heads,
                           int head_dim, int rot_dim, const float *inv_freq) {
    if (rot_dim < 2) return;
    rope_k<<<m->n_tokens, 128, 0, s>>>(x, m->pos, n_heads, head_dim, rot_dim / 2, inv_freq);
}

static __global__ void kv_write_k(hr_cu_kv_layer kv, const int32_t *pos, const int32_t *row,
                                  const int32_t *table, int max_blocks, const float *k,
                                  const float *v) {
    int t = blockIdx.x, p = pos[t];
    int block = table[(long)row[t] * max_blocks + p / kv.block_size];
    long width = (long)kv.n_kv_heads * kv.head_dim;
    for (long e = threadIdx.x; e < width; e += blockDim.x) {
        long h = e / kv.head_dim, d = e % kv.head_dim;
        long off = (((long)block * kv.n_kv_heads + h) * kv.block_size + p % kv.block_size) * kv.head_dim + d;
        hr_st(kv.k, kv.dtype, off, k[(long)t * width + e]);
        hr_st(kv.v, kv.dtype, off, v[(long)t * width + e]);
    }
}

extern "C" void hr_cu_kv_write(cudaStream_t s, const hr_cu_meta *m, const hr_cu_kv_layer *kv,
                               const float *k, const float *v) {
    kv_write_k<<<m->n_tokens, 256, 0, s>>>(*kv, m->pos, m->row, m->block_table, m->max_blocks, k, v);
}

static __device__ __forceinline__ float act_fn(float g, int act) {
    if (act == 0) return g / (1.0f + expf(-g));
    const float c = 0.7978845608028654f; /* sqrt(2/pi) */
    return 0.5f * g * (1.0f + tanhf(c * (g + 0.044715f * g * g * g)));
}

static __global__ void act_mul_k(float *y, const float *g, const float *u, long n, int act) {
    HR_FOR(i, n) y[i] = act_fn(g[i], act) * u[i];
}

extern "C" void hr_cu_act_mul(cudaStream_t s, float *y, const float *gate, const float *up,
                              long n, int act) {
    if (n > 0) act_mul_k<<<hr_blocks(n, 256), 256, 0, s>>>(y, gate, up, n, act);
}

static __global__ void add_k(float *y, const float *a, long n) { HR_FOR(i, n) y[i] += a[i]; }

extern "C" void hr_cu_add(cudaStream_t s, float *y, const float *a, long n) {
    if (n > 0) add_k<<<hr_blocks(n, 256), 256, 0, s>>>(y, a, n);
}

static __global__ void add_bias_k(float *y, const void *b, int dtype, long n, long cols) {
    HR_FOR(i, n) y[i] += hr_ld(b, dtype, i % cols);
}

extern "C" void hr_cu_add_bias(cudaStream_t s, float *y, const void *bias, int dtype, int rows,
                               long cols) {
    long n = (long)rows * cols;
    if (n > 0) add_bias_k<<<hr_blocks(n, 256), 256, 0, s>>>(y, bias, dtype, n, cols);
}

static __global__ void scale_k(float *y, float f, long n) { HR_FOR(i, n) y[i] *= f; }

extern "C" void hr_cu_scale(cudaStream_t s, float *y, float f, long n) {
    if (n > 0) scale_k<<<hr_blocks(n, 256), 256, 0, s>>>(y, f, n);
}

static __global__ void softcap_k(float *y, float cap, long n) {
    HR_FOR(i, n) y[i] = cap * tanhf(y[i] / cap);
}

extern "C" void hr_cu_softcap(cudaStream_t s, float *y, float cap, long n) {
    if (n > 0) softcap_k<<<hr_blocks(n, 256), 256, 0, s>>>(y, cap, n);
}

static __global__ void copy2d_k(float *dst, long ds, const float *src, long ss, long n, long cols) {
    HR_FOR(i, n) {
        long r = i / cols, c = i % cols;
        dst[r * ds + c] = src[r * ss + c];
    }
}

extern "C" void hr_cu_copy2d(cudaStream_t s, float *dst, long dst_stride, const float *src,
                             long src_stride, int rows, long cols) {
    long n = (long)rows * cols;
    if (n > 0) copy2d_k<<<hr_blocks(n, 256), 256, 0, s>>>(dst, dst_stride, src, src_stride, n, cols);
}

static __global__ void mul_gather_k(float *y, const int32_t *idx, const void *t, int dtype, long n) {
    HR_FOR(i, n) y[i] *= hr_ld(t, dtype, idx[i]);
}

extern "C" void hr_cu_mul_gather(cudaStream_t s, float *y, const int32_t *idx, const void *table,
                                 int dtype, long n) {
    if (n > 0) mul_gather_k<<<hr_blocks(n, 256), 256, 0, s>>>(y, idx, table, dtype, n);
}

static __global__ void sigmoid_mul_k(float *y, const float *g, long n, int w, int g_w) {
    HR_FOR(i, n) {
        long r = i / w, c = i % w;
        float gv = g[r * g_w + (g_w == 1 ? 0 : c)];
        y[i] *= 1.0f / (1.0f + expf(-gv));
    }
}

extern "C" void hr_cu_sigmoid_mul(cudaStream_t s, float *y, const float *g, long rows, int w,
                                  int g_w) {
    long n = rows * w;
    if (n > 0) sigmoid_mul_k<<<hr_blocks(n, 256), 256, 0, s>>>(y, g, n, w, g_w);
}

static __global__ void round_k(void *dst, void *lo, int dtype, const float *src, long n) {
    HR_FOR(i, n) {
        hr_st(dst, dtype, i, src[i]);
        if (lo) hr_st(lo, dtype, i, src[i] - hr_ld(dst, dtype, i));
    }
}

extern "C" void hr_cu_round(cudaStream_t s, void *dst, void *lo, int dtype, const float *src, long n) {
    if (n > 0) round_k<<<hr_blocks(n, 256), 256, 0, s>>>(dst, lo, dtype, src, n);
}

/* One block per row: each thread scans its stride keeping its first maximum, then a tree
 * keeps the larger value, the lower index on ties (the host argmax's answer). */
static __global__ void argmax_k(int32_t *ids, const float *x, int n) {
    __shared__ float sv[256];
    __shared__ int si[256];
    const float *xr = x + (long)blockIdx.x * n;
    float best = -INFINITY;
    int bi = n; /* none yet */
    for (int i = threadIdx.x; i < n; i += blockDim.x)
        if (bi == n || xr[i] > best) best = xr[i], bi = i;
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
    if (threadIdx.x == 0) ids[blockIdx.x] = si[0] < n ? si[0] : 0;
}

extern "C" void hr_cu_argmax(cudaStream_t s, int32_t *ids, const float *x, int rows, int n) {
    if (rows > 0 && n > 0) argmax_k<<<rows, 256, 0, s>>>(ids, x, n);
}
